"""A fresh venv outside the repository with evalkit installed from a wheel built from this checkout.

The wheel is built with ``--no-build-isolation`` (setuptools and wheel from this environment: nothing is
downloaded) from a copy of the source, so the checkout gets no build/ folder; the venv uses
``--system-site-packages`` so evalkit's dependencies come from this environment and only evalkit
itself is installed (``--no-deps``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "README.md", "evalkit", "conf", "labelsets")


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
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(path, source / name)
    dist = work / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist), "."],
        cwd=source,
        check=True,
        capture_output=True,
    )
    (wheel,) = dist.glob("evalkit-*.whl")
    return wheel


def make_env(work: Path) -> WheelEnv:
    wheel = build_wheel(work)
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True)
    env = WheelEnv(wheel, venv)
    subprocess.run(
        [str(env.python), "-m", "pip", "install", "--no-deps", "-q", str(wheel)],
        check=True,
        capture_output=True,
        env=env.env(),
    )
    return env
