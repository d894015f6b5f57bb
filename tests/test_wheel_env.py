"""The wheel tests' venv sees the packages of the environment running the tests, never the base interpreter's.

On a fresh machine the suite runs from a venv whose base Python has none of evalkit's dependencies; a
venv made with ``--system-site-packages`` from there would link the base's site-packages and miss them.
This builds that situation for real: a running venv holding a package its base does not have.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from tests.wheel_env import ROOT, link_packages, running_site_packages

MARKER = "evalkit_only_in_the_running_env"


def _site_packages(venv: Path) -> Path:
    (folder,) = (venv / "lib").glob("python*/site-packages")
    return folder


def test_a_venv_made_from_inside_a_venv_sees_that_venvs_packages(tmp_path: Path) -> None:
    running = tmp_path / "running"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(running)], check=True)
    # The running venv holds a package that no base interpreter has, and reaches this environment's own
    # packages (so it can run the helper) through a .pth, as a user's venv reaches its installs.
    (_site_packages(running) / f"{MARKER}.py").write_text("WHERE = 'running venv'\n", encoding="utf-8")
    link_packages(running, running_site_packages())
    script = textwrap.dedent(
        f"""
        import subprocess, sys
        from pathlib import Path
        sys.path.insert(0, {str(ROOT)!r})
        from tests.wheel_env import link_packages, running_site_packages
        target = Path({str(tmp_path / "wheel-venv")!r})
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(target)], check=True)
        link_packages(target, running_site_packages())
        print(subprocess.run([str(target / "bin" / "python"), "-c",
                              "import {MARKER} as m, sys; print(m.WHERE, sys.prefix)"],
                             capture_output=True, text=True, check=True).stdout.strip())
        """
    )
    done = subprocess.run([str(running / "bin" / "python"), "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    where, prefix = done.stdout.strip().rsplit(" ", 1)
    assert where == "running venv" and Path(prefix) == tmp_path / "wheel-venv"


def test_the_base_interpreters_packages_are_not_what_is_linked() -> None:
    folders = running_site_packages()
    assert folders, "the running interpreter has site-packages"
    if sys.prefix != sys.base_prefix:
        # Inside a venv: its own site-packages, not the base's (which --system-site-packages would give).
        assert all(Path(f).resolve().is_relative_to(Path(sys.prefix).resolve()) for f in folders)
