"""``python -m evalkit init``: a project folder whose conf/ really layers over evalkit's bundled configs."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from evalkit.__main__ import main as evalkit_main
from evalkit.project.init import LAYOUT, init_project
from evalkit.project.layers import compose_config, find_source


def test_init_writes_the_project_and_never_overwrites(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert evalkit_main(["init", str(tmp_path / "team")]) == 0
    root = tmp_path / "team"
    for rel in LAYOUT.values():
        assert (root / rel).is_file(), rel
    assert (root / "labelsets" / "team" / "questions.jsonl").is_file(), "a starter set so the first sweep runs"
    assert "$" not in (root / "conf" / "labelset" / "team.yaml").read_text(encoding="utf-8")
    capsys.readouterr()
    production = root / "conf" / "baseline" / "production.yaml"
    production.write_text("chunk_size: 256\nchunk_overlap: 0\ntop_k: 3\n", encoding="utf-8")
    assert evalkit_main(["init", str(root)]) == 0, "a second init merges: nothing to add, nothing overwritten"
    said = capsys.readouterr().err
    assert "kept conf/baseline/production.yaml" in said, said
    assert production.read_text(encoding="utf-8").startswith("chunk_size: 256")
    (root / "labelsets" / "ours").mkdir()
    init_project(root, labelset="labelsets/ours", force=True)
    assert "path: labelsets/ours" in (root / "conf" / "labelset" / "team.yaml").read_text(encoding="utf-8")
    assert "chunk_size: 256" not in production.read_text(encoding="utf-8"), "--force rewrites evalkit's own files"


def test_init_into_an_existing_repository_merges(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The team's README stays byte for byte (or gets a section on request), .gitignore gains what it lacks, a
    subfolder's workflow goes where GitHub reads it, and a labelled set that is not there is exit 2."""
    repo = tmp_path / "repo"
    (repo / ".github" / "workflows").mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    readme = "# Our RAG service\r\nIt answers questions.  \n"
    (repo / "README.md").write_bytes(readme.encode("utf-8"))
    (repo / ".gitignore").write_text("node_modules\n/reports/\n", encoding="utf-8")
    assert evalkit_main(["init", str(repo), "--force"]) == 0
    assert (repo / "README.md").read_bytes() == readme.encode("utf-8"), "the team's README, not even --force"
    assert (repo / ".gitignore").read_text(encoding="utf-8") == "node_modules\n/reports/\n.evalkit-cache/\n"
    said = capsys.readouterr().err
    assert "  kept README.md\n" in said and "added .evalkit-cache/ to .gitignore" in said, said
    assert (repo / "conf" / "project.yaml").is_file() and (
        repo / ".github" / "workflows" / "evalkit-gate.yml"
    ).is_file()
    assert evalkit_main(["init", str(repo), "--readme-section"]) == 0
    text = (repo / "README.md").read_bytes().decode("utf-8")
    assert text.startswith(readme) and text.count("## repo: retrieval evaluation with evalkit") == 1
    assert evalkit_main(["init", str(repo), "--readme-section"]) == 0
    assert (repo / "README.md").read_bytes().decode("utf-8") == text, "appended once"

    # A project in a subfolder of the repository: the workflow goes to the repository's .github/workflows/.
    assert evalkit_main(["init", str(repo / "search")]) == 0
    assert not (repo / "search" / ".github").exists()
    flow = yaml.safe_load((repo / ".github" / "workflows" / "evalkit-gate.yml").read_text(encoding="utf-8"))
    assert flow is not None  # the root project's workflow is kept, not overwritten
    capsys.readouterr()
    sub = tmp_path / "other"
    (sub / "rag").mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=sub, check=True)
    assert evalkit_main(["init", str(sub / "rag")]) == 0
    job = yaml.safe_load((sub / ".github" / "workflows" / "evalkit-gate.yml").read_text(encoding="utf-8"))["jobs"]
    assert job["gate"]["defaults"]["run"]["working-directory"] == "rag"
    uploads = [s["with"]["path"] for s in job["gate"]["steps"] if "upload-artifact" in s.get("uses", "")]
    assert uploads == ["rag/reports/ci/"]
    assert (sub / "rag" / ".gitignore").read_text(encoding="utf-8") == "reports/\n.evalkit-cache/\n"

    capsys.readouterr()
    assert evalkit_main(["init", str(tmp_path / "x"), "--labelset", "../missing"]) == 2
    assert capsys.readouterr().err.startswith("evalkit init: error: --labelset ../missing: no such folder")


def test_init_dot_in_a_repository_keeps_its_readme_and_ignores_reports(tmp_path: Path) -> None:
    """The acceptance case as a team types it: ``python -m evalkit init .`` in a folder with its own README.md
    and a .gitignore that does not ignore reports/ yet."""
    readme = b"# Our RAG service\n\nHow to run it.\n"
    (tmp_path / "README.md").write_bytes(readme)
    (tmp_path / ".gitignore").write_text("node_modules\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "evalkit", "init", "."], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "README.md").read_bytes() == readme
    assert (tmp_path / ".gitignore").read_text(encoding="utf-8").splitlines() == [
        "node_modules",
        "reports/",
        ".evalkit-cache/",
    ]
    assert "kept README.md" in done.stderr and "added reports/ .evalkit-cache/ to .gitignore" in done.stderr
    assert done.stderr.rstrip().endswith("next: python -m evalkit.sweep"), done.stderr


def test_the_project_layers_over_the_bundled_configs(tmp_path: Path) -> None:
    root = tmp_path / "team"
    init_project(root)
    (root / "conf" / "baseline" / "production.yaml").write_text(
        "# @package baseline\nchunk_size: 1024\nchunk_overlap: 0\ntop_k: 3\nthreshold: null\n", encoding="utf-8"
    )
    # A project option of a bundled name shadows evalkit's own.
    (root / "conf" / "sweep" / "quick.yaml").write_text(
        "chunk_size: [300]\nchunk_overlap: [30]\ntop_k: [2]\nthreshold: null\n", encoding="utf-8"
    )
    source = find_source([], root)
    cfg = compose_config(source, [])
    assert cfg.labelset.path == "labelsets/team" and list(cfg.top_k) == [3, 5, 10]
    assert cfg.baseline.chunk_size == 1024 and cfg.baseline.top_k == 3
    assert cfg.objective.primary == "recall" and cfg.objective.max_candidates == 40, "the bundled objective, layered"
    assert cfg.pool_size == 50 and cfg.cost.model, "everything else from evalkit's config.yaml"
    assert list(compose_config(source, ["sweep=quick"]).chunk_size) == [300]
    assert list(compose_config(source, ["sweep=wide"]).chunk_size) == [256, 384, 512, 768, 1024]
    assert compose_config(source, ["labelset=demo"]).labelset.path == "labelsets/demo"
    # --config-dir from elsewhere finds the same project; without a project, evalkit's own config.
    elsewhere = find_source(["--config-dir", str(root / "conf")], tmp_path)
    assert elsewhere.team_dir == (root / "conf") and elsewhere.config_name == "project"
    bundled = find_source([], tmp_path)
    assert bundled.team_dir is None and compose_config(bundled, []).labelset.path == "labelsets/demo"


def test_the_position_hint_of_an_init_project_runs_the_experiment(tmp_path: Path) -> None:
    """project.yaml keeps position off; the report's "to run it" command (position/status.json) carries the run's
    own overrides and an explicit position choice, so run as printed, inside the project, it plans the experiment."""
    root = tmp_path / "team"
    init_project(root)
    reports = tmp_path / "reports"
    args = ["progress=false", "report=false", f"reports_dir={reports}", "top_k=[1,3]", "chunk_size=[256]"]
    done = subprocess.run(
        [sys.executable, "-m", "evalkit.sweep", *args], cwd=root, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    (status_path,) = reports.glob("*/position/status.json")
    status = json.loads(status_path.read_text(encoding="utf-8"))
    assert status["state"] == "off"
    command = shlex.split(status["command"])
    assert command[:3] == ["python", "-m", "evalkit.sweep"] and command[-1] == "position=default"
    assert all(a in command for a in args)
    again = subprocess.run(
        [sys.executable, *command[1:], "position.dry_run=true"], cwd=root, capture_output=True, text=True, timeout=600
    )
    assert again.returncode == 0, again.stderr
    status = json.loads(status_path.read_text(encoding="utf-8"))
    assert status["state"] == "dry_run", status


def test_init_says_what_it_copied_and_offers_an_empty_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert evalkit_main(["init", str(tmp_path / "copy")]) == 0
    said = capsys.readouterr().err
    questions = (tmp_path / "copy" / "labelsets" / "team" / "questions.jsonl").read_text(encoding="utf-8")
    assert f"a copy of the bundled demo set (46 documents, {len(questions.splitlines())} questions)" in said
    assert "--empty" in said
    assert evalkit_main(["init", str(tmp_path / "empty"), "--empty"]) == 0
    team = tmp_path / "empty" / "labelsets" / "team"
    assert sorted(p.name for p in team.iterdir()) == ["docs.jsonl", "questions.jsonl"]
    assert all((team / n).read_text(encoding="utf-8") == "" for n in ("docs.jsonl", "questions.jsonl"))
    assert "an empty labelled set" in capsys.readouterr().err
    readme = (tmp_path / "copy" / "README.md").read_text(encoding="utf-8")
    assert "labels sample labelsets/team/query_log.jsonl" in readme and "labelsets/demo" not in readme
