"""A fresh venv outside the repository with evalkit installed from a wheel built from this checkout.

The wheel is built with ``--no-build-isolation`` (setuptools and wheel from this environment: nothing is
downloaded) from a copy of the source, so the checkout gets no build/ folder. evalkit's dependencies
come from the environment running the tests: the venv's site-packages holds a ``.pth`` file listing
this interpreter's site-packages folders, so only evalkit itself is installed (``--no-deps``).

Not ``--system-site-packages``: inside a virtual environment that links the *base* interpreter's
site-packages, which on a fresh machine (or a user's venv) hold none of evalkit's dependencies.
A ``.pth`` line adds a folder to ``sys.path`` after the venv's own site-packages and runs none of
that folder's own ``.pth`` files, so the checkout's editable install of evalkit stays invisible and
the wheel's copy is the one imported.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "evalkit", "conf", "labelsets", "examples")


@dataclass(frozen=True)
class WheelEnv:
    wheel: Path
    venv: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def env(self) -> dict[str, str]:
        """The venv first on PATH, and nothing of the checkout on sys.path."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HYDRA_FULL_ERROR")}
        env["PATH"] = f"{self.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(self.venv)
        return env


def build_wheel(work: Path) -> Path:
    source = work / "src"
    source.mkdir(parents=True)
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))
        else:
            shutil.copy2(path, source / name)
    dist = work / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist), "."],
        cwd=source,
        check=True,
        capture_output=True,
    )
    (wheel,) = dist.glob("evalkit_sweep-*.whl")
    return wheel


def running_site_packages() -> list[str]:
    """The site-packages folders of the interpreter running the tests (its venv's when it runs in one)."""
    folders = [*site.getsitepackages(), *([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])]
    return [folder for folder in dict.fromkeys(folders) if Path(folder).is_dir()]


def link_packages(venv: Path, folders: list[str]) -> Path:
    """A ``.pth`` file in the venv's site-packages that puts ``folders`` on its ``sys.path``."""
    (target,) = (venv / "lib").glob("python*/site-packages")
    pth = target / "_evalkit_test_dependencies.pth"
    pth.write_text("".join(f"{folder}\n" for folder in folders), encoding="utf-8")
    return pth


def make_env(work: Path) -> WheelEnv:
    wheel = build_wheel(work)
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    link_packages(venv, running_site_packages())
    env = WheelEnv(wheel, venv)
    subprocess.run(
        [str(env.python), "-m", "pip", "install", "--no-deps", "-q", str(wheel)],
        check=True,
        capture_output=True,
        env=env.env(),
    )
    return env
