"""The CI recipe gates a project whose production is its own retriever (``retriever=external``).

A team's project (``evalkit init``) points ``retriever=external`` at a production service on 127.0.0.1 and
runs ``ci/evalkit-gate.sh sweep-and-gate`` as its CI does, with the base branch read with git from origin.
A pull request that leaves production alone passes; one that moves production to a worse version of the
service (another url and version) is gated against the base branch's service, swept too, and fails; the
report the CI job uploads opens with that FAIL and gate.md's numbers (read in headless Chromium).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalkit.project.init import init_project
from tests.conftest import REPO
from tests.external import gold_retriever
from tests.gate_page import assert_the_page_leads_with_the_gate
from tests.loopback.retriever_server import RetrieverServer

RECIPE = ("bash", "ci/evalkit-gate.sh", "sweep-and-gate")


def _git(project: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)


def _point_at(project: Path, url: str, version: str, message: str) -> None:
    """Production's retriever: the service's url and its index version, as a team sets them in conf/project.yaml."""
    path = project / "conf" / "project.yaml"
    text = re.sub(r"(?ms)^retriever:\n.*\Z", "", path.read_text(encoding="utf-8"))
    path.write_text(f'{text}retriever:\n  url: {url}\n  version: "{version}"\n', encoding="utf-8")
    _git(project, "commit", "-qam", message)


@pytest.fixture()
def services(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, str, str]]:
    """A project with the demo set and two versions of its production service: v1 returns every question's gold,
    v2 the gold for about two questions in three (a worse reindex)."""
    project = tmp_path / "team"
    init_project(project)
    monkeypatch.setenv("EVALKIT_GOLD_LABELSET", str(project / "labelsets" / "team"))
    gold_retriever._labelset.cache_clear()
    with (
        RetrieverServer(gold_retriever.offsets) as good,
        RetrieverServer(gold_retriever.gold_for_some) as worse,
    ):
        yield project, f"{good.url}/search", f"{worse.url}/search"
    gold_retriever._labelset.cache_clear()


def _recipe_env(tmp_path: Path) -> dict[str, str]:
    """The CI job's environment: this checkout's evalkit as ``python``, a pull request against main."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    if not (bin_dir / "python").exists():
        (bin_dir / "python").symlink_to(sys.executable)
    return os.environ | {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(REPO),
        "EVALKIT_BASE_REF": "main",
        "EVALKIT_PROGRESS_EVERY_S": "30",
    }


def test_an_external_production_is_gated_through_the_recipe(
    tmp_path: Path, services: tuple[Path, str, str], browser
) -> None:
    project, good_url, worse_url = services
    conf = project / "conf"
    (conf / "labelset" / "team.yaml").write_text("path: labelsets/team\nlimit: 40\n", encoding="utf-8")
    (conf / "sweep" / "team.yaml").write_text(
        "chunk_size: 512\nchunk_overlap: 64\ntop_k: [3, 5]\nthreshold: null\n", encoding="utf-8"
    )
    project_yaml = conf / "project.yaml"
    project_yaml.write_text(
        project_yaml.read_text(encoding="utf-8").replace(
            "  - override objective: team", "  - override objective: team\n  - override retriever: external"
        ),
        encoding="utf-8",
    )
    _git(tmp_path, "init", "-q", "--bare", "origin.git")
    _git(project, "init", "-q", "-b", "main")
    _git(project, "config", "user.email", "ci@example.com")
    _git(project, "config", "user.name", "ci")
    _git(project, "add", "-A")
    _git(project, "commit", "-qm", "evalkit init")
    _point_at(project, good_url, "1", "production: the search service, index 1")
    _git(project, "remote", "add", "origin", str(tmp_path / "origin.git"))
    _git(project, "push", "-q", "origin", "main")
    env = _recipe_env(tmp_path)

    # A pull request that leaves production alone: its production against itself (the sweep keeps it), a pass.
    _git(project, "checkout", "-q", "-b", "docs")
    (project / "NOTES.md").write_text("nothing about production\n", encoding="utf-8")
    _git(project, "add", "NOTES.md")
    _git(project, "commit", "-qm", "notes")
    same = subprocess.run(RECIPE, cwd=project, env=env, capture_output=True, text=True)
    assert same.returncode == 0, same.stderr[-3000:]
    assert "production runs the same retriever as the base branch" in same.stderr, same.stderr[-3000:]
    gate = json.loads((project / "reports" / "ci" / "gate.json").read_text(encoding="utf-8"))
    assert gate["verdict"] == "pass" and gate["baseline"]["config_id"] == "external|external|none|k5|t0", gate
    assert not (project / "reports" / "ci-base").exists(), "the base's retriever is this run's: no second sweep"

    # A pull request that moves production to the worse reindex (another url and version): FAIL, exit 1.
    _git(project, "checkout", "-q", "main")
    _git(project, "checkout", "-q", "-b", "reindex")
    _point_at(project, worse_url, "2", "production: the new index")
    worse = subprocess.run(RECIPE, cwd=project, env=env, capture_output=True, text=True)
    assert worse.returncode == 1, worse.stderr[-3000:]
    assert "route: this pull request changes production's retriever" in worse.stderr, worse.stderr[-3000:]
    gate = json.loads((project / "reports" / "ci" / "gate.json").read_text(encoding="utf-8"))
    assert gate["verdict"] == "fail", gate
    assert gate["baseline"]["run"].endswith("ci-base") and gate["candidate"]["run"].endswith("ci"), gate
    assert gate["baseline"]["config_id"] == gate["candidate"]["config_id"] == "external|external|none|k5|t0"
    recall = next(c for c in gate["checks"] if c["metric"] == "recall")
    assert not recall["passed"] and recall["candidate"] < recall["baseline"], recall
    assert "version 1" in gate["route"] and good_url in gate["route"], gate["route"]

    # The report the job uploads opens with what the gate said, in gate.md's words and numbers.
    assert assert_the_page_leads_with_the_gate(browser, project / "reports" / "ci")["verdict"] == "fail"
