"""An installed wheel, outside the repository, runs sweeps with its bundled configs and with an init'ed project."""

from __future__ import annotations

import ast
import json
import subprocess
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.wheel_env import ROOT, WheelEnv, make_env


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> WheelEnv:
    return make_env(tmp_path_factory.mktemp("wheel"))


def run(env: WheelEnv, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(env.python), *args], cwd=cwd, env=env.env(), capture_output=True, text=True)


def test_the_wheel_carries_the_configs_and_the_demo_set(installed: WheelEnv, tmp_path: Path) -> None:
    probe = run(installed, ["-c", "import evalkit.confdir as c, evalkit; print(evalkit.__file__); print(c.conf_dir())"],
                tmp_path)  # fmt: skip
    module, conf = probe.stdout.split()
    assert module.startswith(str(installed.venv)), "evalkit must come from the venv, not the checkout"
    assert Path(conf) == Path(module).parent / "conf" and (Path(conf) / "config.yaml").is_file()
    assert (Path(module).parent / "labelsets" / "demo" / "questions.jsonl").is_file()
    assert (Path(module).parent / "project" / "templates" / "ci" / "evalkit-gate.yml").is_file()


def test_an_installed_wheel_sweeps_the_bundled_demo_set(installed: WheelEnv, tmp_path: Path) -> None:
    done = run(
        installed,
        ["-m", "evalkit.sweep", "position=off", "answer_check=off", "progress=false", "run_id=wheel-demo"],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    run_dir = tmp_path / "reports" / "wheel-demo"
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["labelset"]["name"] == "demo" and manifest["labelset"]["questions"] == 254
    assert manifest["grid"]["points"] == 96 and (run_dir / "index.html").is_file()
    assert manifest["labelset"]["path"].startswith(str(installed.venv)), "the demo set is the packaged copy"


def test_an_installed_wheel_runs_a_project_made_by_init(installed: WheelEnv, tmp_path: Path) -> None:
    made = run(installed, ["-m", "evalkit", "init", "team"], tmp_path)
    assert made.returncode == 0, made.stderr
    project = tmp_path / "team"
    inside = run(installed, ["-m", "evalkit.sweep", "progress=false", "run_id=inside"], project)
    assert inside.returncode == 0, inside.stderr[-2000:]
    manifest = json.loads((project / "reports" / "inside" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["labelset"]["name"] == "team"
    assert manifest["grid"]["top_k"] == [3, 5, 10], "the project's sweep preset, not evalkit's default"
    # From elsewhere, through Hydra's --config-dir, with a bundled preset layered under the project's choices.
    outside = run(
        installed,
        ["-m", "evalkit.sweep", "--config-dir", str(project / "conf"), "sweep=quick", "progress=false",
         f"labelset.path={project / 'labelsets' / 'team'}", "run_id=outside"],
        tmp_path,
    )  # fmt: skip
    assert outside.returncode == 0, outside.stderr[-2000:]
    manifest = json.loads((tmp_path / "reports" / "outside" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["grid"]["chunkings"] == ["recursive-s512-o64"] and manifest["config"]["position"] is None


def test_bash_completion_of_the_installed_console_script(installed: WheelEnv, tmp_path: Path) -> None:
    script = installed.venv / "bin" / "evalkit-sweep"
    assert script.is_file()
    env = installed.env() | {"COMP_LINE": "evalkit-sweep retriever=hy", "COMP_POINT": "26"}
    done = subprocess.run([str(script), "-sc", "query=bash"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0 and "retriever=hybrid" in done.stdout.split(), done.stdout + done.stderr
    install = subprocess.run([str(script), "-sc", "install=bash"], env=installed.env(), capture_output=True, text=True)
    assert "complete" in install.stdout and "evalkit-sweep" in install.stdout


def test_the_wheel_holds_every_file_of_the_package(installed: WheelEnv) -> None:
    """Data files (templates, assets, configs) too: a file the wheel lacks fails only after installing."""
    with zipfile.ZipFile(installed.wheel) as wheel:
        shipped = set(wheel.namelist())
    wanted = {
        str(p.relative_to(ROOT))
        for p in (ROOT / "evalkit").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }
    wanted |= {f"evalkit/{p.relative_to(ROOT)}" for p in (ROOT / "conf").rglob("*.yaml")}
    assert wanted - shipped == set()
    assert any(name.endswith(".dist-info/licenses/LICENSE") or name.endswith(".dist-info/LICENSE") for name in shipped)


def test_the_license_is_declared_in_a_form_setuptools_keeps_building() -> None:
    """A ``project.license`` table warns that builds stop after 2027-02-18 (setuptools >= 77); the SPDX string
    that replaces it is refused by the setuptools < 77 this suite builds with. The LICENSE file (MIT) is both."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert not isinstance(project.get("license"), dict), "project.license as a TOML table is deprecated"
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")


def test_pyproject_lists_every_package_under_evalkit() -> None:
    """The wheel's package list is explicit (it maps conf/ and labelsets/ in): a new subpackage must join it."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    found = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / "evalkit").rglob("*.py")
        if "__pycache__" not in p.parts and "templates" not in p.parts
    }
    assert found - listed == set(), f"add to [tool.setuptools] packages: {sorted(found - listed)}"
    assert {"evalkit.conf", "evalkit.labelsets"} <= listed
    assert all(ast.parse(p.read_text(encoding="utf-8")) for p in (ROOT / "evalkit" / "project").glob("*.py"))
