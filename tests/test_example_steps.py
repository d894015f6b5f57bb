"""The worked examples run from an installed wheel, on a team's own set, with only their READMEs' steps.

evalkit's wheel is installed into a fresh venv outside the checkout (:mod:`tests.wheel_env`);
``python -m evalkit init team`` writes a project, examples included; the team's set is replaced by a
copied subset of the demo set (other documents than the bundled demo's: a retriever that searched the
bundled set would return documents the set does not have, exit 2). Then the first ``bash`` block of each
example's README is run, as written there, from the project folder. The only things set around the
steps are the project's own config (a question limit, as a team would for a quick look) and pip's
environment (no index, no build isolation: nothing is downloaded; the wheel's dependencies are this
environment's).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import REPO, demo_subset
from tests.wheel_env import WheelEnv, make_env

EXAMPLES = REPO / "examples"
LIMIT = 60
"""Questions scored per sweep (``limit`` in the project's conf/labelset/team.yaml)."""
PIP_OFFLINE = {"PIP_NO_INDEX": "1", "PIP_NO_BUILD_ISOLATION": "0", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
"""pip reads these as --no-index and --no-build-isolation (the ``0`` is pip's spelling for "no isolation")."""


def readme_steps(readme: Path) -> str:
    """The first ``bash`` block of a README: the steps it gives, verbatim."""
    blocks = re.findall(r"^```bash\n(.*?)^```", readme.read_text(encoding="utf-8"), re.S | re.M)
    assert blocks, f"{readme}: no ```bash block of steps"
    return blocks[0]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> WheelEnv:
    return make_env(tmp_path_factory.mktemp("wheel"))


def team_project(env: WheelEnv, where: Path) -> Path:
    """``evalkit init team`` from the wheel, its labelled set swapped for a copied demo subset, limited."""
    made = subprocess.run(
        [str(env.python), "-m", "evalkit", "init", "team"], cwd=where, env=env.env(), capture_output=True, text=True
    )
    assert made.returncode == 0, made.stderr
    project = where / "team"
    team_set = project / "labelsets" / "team"
    subprocess.run(["rm", "-r", str(team_set)], check=True)
    demo_subset(team_set)
    labelset_conf = project / "conf" / "labelset" / "team.yaml"
    text = labelset_conf.read_text(encoding="utf-8")
    labelset_conf.write_text(re.sub(r"(?m)^limit: null", f"limit: {LIMIT}", text), encoding="utf-8")
    return project


def run_steps(env: WheelEnv, steps: str, project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", steps],
        cwd=project,
        env=env.env() | PIP_OFFLINE,
        capture_output=True,
        text=True,
        timeout=1500,
    )


def finished_runs(project: Path) -> dict[str, dict]:
    """Every run folder the steps wrote, by its retriever's name: its manifest."""
    manifests = [json.loads(p.read_text(encoding="utf-8")) for p in (project / "reports").glob("*/manifest.json")]
    return {m["config"]["retriever"]["name"]: m for m in manifests}


def test_the_examples_ship_in_the_wheel_and_init_writes_them(installed: WheelEnv, tmp_path: Path) -> None:
    project = team_project(installed, tmp_path)
    shipped = {p.relative_to(project / "examples") for p in (project / "examples").rglob("*") if p.is_file()}
    source = {
        p.relative_to(EXAMPLES)
        for p in EXAMPLES.rglob("*")
        if p.is_file() and not {"__pycache__", "build"} & set(p.parts) and ".egg-info" not in str(p)
    }
    assert shipped == source, "the wheel carries every example file, and init writes each"
    # The examples use evalkit's public API only: no `from evalkit.x import` / `import evalkit.x`.
    for path in (project / "examples").rglob("*.py"):
        private = re.findall(r"(?m)^\s*(?:from|import) evalkit\.[\w.]+", path.read_text(encoding="utf-8"))
        assert not private, f"{path.name}: {private}"


def test_the_plugin_example_sweeps_the_teams_set_with_its_readme_steps(installed: WheelEnv, tmp_path: Path) -> None:
    project = team_project(installed, tmp_path)
    steps = readme_steps(project / "examples" / "evalkit-plugin-example" / "README.md")
    assert steps == readme_steps(EXAMPLES / "evalkit-plugin-example" / "README.md")
    done = run_steps(installed, steps, project)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "keyword (plugin)" in done.stdout and "sentences (plugin)" in done.stdout
    runs = finished_runs(project)
    assert set(runs) == {"keyword", "bm25"}, sorted(runs)
    for manifest in runs.values():
        assert manifest["labelset"]["name"] == "team" and manifest["labelset"]["questions"] == LIMIT
        assert manifest["labelset"]["path"] == "labelsets/team", "the copied set in the project, not the bundled demo"
    keyword = _summary(project, runs["keyword"])
    # Word overlap over the set's own sentences: a weak retriever, but it finds the subset's evidence.
    assert set(keyword["chunking"]) == {"external"} and keyword["recall"].max() > 0.5
    bm25 = _summary(project, runs["bm25"])
    assert bm25["chunking"].str.startswith("sentences-").all() and (bm25["recall"] > 0.5).any()


def test_the_lancedb_example_sweeps_the_teams_set_with_its_readme_steps(installed: WheelEnv, tmp_path: Path) -> None:
    project = team_project(installed, tmp_path)
    steps = readme_steps(project / "examples" / "lancedb_retriever" / "README.md")
    assert steps == readme_steps(EXAMPLES / "lancedb_retriever" / "README.md")
    assert f"```bash\n{steps}```" in (REPO / "README.md").read_text(encoding="utf-8"), "README.md shows the same steps"
    done = run_steps(installed, steps, project)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (project / "reports" / "lancedb-store").is_dir()
    (manifest,) = finished_runs(project).values()
    assert manifest["config"]["retriever"]["name"] == "external"
    assert manifest["config"]["retriever"]["target"] == "examples.lancedb_retriever.retriever:retrieve"
    assert manifest["labelset"]["name"] == "team" and manifest["labelset"]["questions"] == LIMIT
    summary = _summary(project, manifest)
    # The store holds the set's 300-character chunks, embedded with e5: dense retrieval's recall.
    assert set(summary["chunking"]) == {"external"} and summary["recall"].max() > 0.6


def _summary(project: Path, manifest: dict) -> pd.DataFrame:
    return pd.read_parquet(project / "reports" / manifest["run_id"] / "summary.parquet")
