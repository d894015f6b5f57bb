"""Hydra's errors through the real command line: one line, exit 2, the nearest valid key; help is evalkit's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalkit.overrides import composition_error
from evalkit.project.help import DATA_FOLDERS, GROUP_HELP, config_groups, groups_without_help, help_text
from evalkit.project.init import init_project
from evalkit.project.layers import find_source

ROOT = Path(__file__).resolve().parents[1]

# (override, what the one line must say)
MISTAKES = [
    (["chunk_szie=512"], "did you mean 'chunk_size'?"),
    (["+chunk_szie=512"], "did you mean 'chunk_size'?"),
    (["+foo=1"], "foo: unknown key"),
    (["retriever.bm25_kl=1"], "did you mean 'retriever.bm25_k1'?"),
    (["retriever=hybird"], "did you mean 'hybrid'?"),
    (["labelset=xquad-en"], "labelset.path="),
    (["labelset=../shared/labelsets/xquad"], "use labelset.path=../shared/labelsets/xquad"),
    (["top_k=[1,2"], "unclosed '[' in top_k=[1,2: did you mean top_k=[1,2]?"),
    (["top_k=1,2]"], "a ']' without its '[' in top_k=1,2]: did you mean top_k=[1,2]?"),
    (["retriever='bm25"], "unclosed ' in retriever='bm25"),
    (["chunk_size=256,"], "did you mean chunk_size=256?"),
    (["-m", "retriever=bm25,dense,hybird"], "did you mean 'hybrid'?"),
    (["+retriever=bm25"], "set it without '+'"),
    (["+tracker=mlfow"], "did you mean 'mlflow'?"),
    (["labelset.path=/no/such/set"], "labelset.path: '/no/such/set' is not a folder"),
    (["--config-name", "nope"], "no primary config 'nope'"),
    (["--config-dir", "/no/such/conf"], "--config-dir: '/no/such/conf' is not a folder"),
]


def cli(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"} | env
    environ["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "evalkit.sweep", *args], cwd=cwd, env=environ, capture_output=True, text=True
    )


@pytest.mark.parametrize(("args", "says"), MISTAKES, ids=[" ".join(a) for a, _ in MISTAKES])
def test_a_common_mistake_is_one_line_and_exit_2(tmp_path: Path, args: list[str], says: str) -> None:
    done = cli(
        [*args, f"reports_dir={tmp_path / 'reports'}", "position=off", "answer_check=off", "progress=false"], tmp_path
    )
    lines = done.stderr.splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("evalkit: error: "), lines
    assert says in lines[0], lines[0]
    assert "Traceback" not in done.stderr
    reports = tmp_path / "reports"
    assert not reports.exists() or [p.name for p in reports.iterdir()] == [".hydra"], "no work before the error"


def test_an_error_after_composition_is_one_line_unless_verbose(tmp_path: Path) -> None:
    # Hydra resolves hydra.run.dir itself, after evalkit's checks: an unknown resolver fails inside Hydra.
    args = ["hydra.run.dir=${nosuch:x}", "position=off", "answer_check=off", "sweep=quick", f"reports_dir={tmp_path}"]
    quiet = cli(args, tmp_path)
    assert quiet.returncode == 2, quiet.stderr
    assert len(quiet.stderr.strip().splitlines()) == 1 and "nosuch" in quiet.stderr, quiet.stderr
    loud = cli([*args, "--verbose"], tmp_path)
    assert loud.returncode != 0 and "Traceback" in loud.stderr
    full = cli(args, tmp_path, HYDRA_FULL_ERROR="1")
    assert "Traceback" in full.stderr


def test_help_describes_evalkit_not_hydra(tmp_path: Path) -> None:
    done = cli(["--help"], tmp_path)
    assert done.returncode == 0
    text = done.stdout
    for group in ("labelset", "chunker", "embedder", "retriever", "reranker", "sweep", "objective", "answer_check",
                  "executor", "generator", "position"):  # fmt: skip
        assert f"  {group} " in text, group
    for key in ("chunk_size", "chunk_overlap", "top_k", "threshold"):
        assert f"  {key} " in text
    assert text.count("python -m evalkit.sweep ") >= 3
    groups_block = text.split("config groups")[1].split("add-ons")[0]
    for internal in ("gate", "pricing", "judge", "experiment"):
        assert f"  {internal} " not in groups_block, internal
    assert "Powered by Hydra" not in text and "== Config groups ==" not in text


def test_a_projects_own_options_are_suggested_and_listed(tmp_path: Path) -> None:
    init_project(tmp_path / "team")
    source = find_source([], tmp_path / "team")
    assert source.config_name == "project" and source.team_dir == (tmp_path / "team" / "conf").resolve()
    problem = composition_error(source, ["labelset=tem"])
    assert problem is not None and "did you mean 'team'?" in problem
    assert composition_error(source, ["labelset=demo", "sweep=quick"]) is None
    lines = help_text(source.search).splitlines()
    options = lines[next(i for i, line in enumerate(lines) if line.startswith("  labelset ")) + 1]
    assert "team" in options.split() or "team" in options.replace(",", " ").split(), options


def test_a_key_given_twice_and_a_threshold_no_score_reaches_are_warnings(tmp_path: Path) -> None:
    """Both run (Hydra keeps the last value; a BM25 threshold below 0 filters nothing) but say so, naming the
    values, before any work is reported."""
    args = ["top_k=3", "top_k=5", "retriever=bm25", "threshold=[-1,0]", "dry_run=true", "position=off",
        "answer_check=off",
            f"reports_dir={tmp_path / 'reports'}", f"cache_path={tmp_path / 'c.sqlite'}", "progress=false"]  # fmt: skip
    done = cli(args, tmp_path)
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith("evalkit: warning: ")]
    assert "top_k is given twice (top_k=3, then top_k=5): the last, top_k=5, is used" in warnings[0]
    assert any("threshold -1 is below every score (bm25 scores are never below 0)" in w for w in warnings), warnings


def test_help_is_generated_and_every_config_group_has_a_line(tmp_path: Path) -> None:
    """--help lists every group of the config tree with its default and choices; a group without a help line
    (a new conf/ folder, a team's own) is named by the check, so none is shown without saying what it does."""
    from evalkit.plugins import GROUPS as PLUGIN_KINDS

    init_project(tmp_path / "team")
    search = find_source([], tmp_path / "team").search
    assert groups_without_help() == [] and groups_without_help(search) == []
    assert set(GROUP_HELP) | set(DATA_FOLDERS) == set(config_groups(search)), "a help line for a folder that is gone"
    assert set(PLUGIN_KINDS) <= set(config_groups()), "every registry kind is a config group"
    text = help_text(search)
    lines = text.splitlines()
    for group, default in (("answer_check", "off"), ("executor", "local"), ("baseline", "production")):
        at = next(i for i, line in enumerate(lines) if line.startswith(f"  {group} "))
        assert lines[at].split(None, 1)[1] == GROUP_HELP[group]
        assert f"{default} (default)" in lines[at + 1], (group, lines[at + 1])
    assert "answer_check" in help_text() and "smoke (default)" in help_text()
    (tmp_path / "team" / "conf" / "rewriter").mkdir()
    (tmp_path / "team" / "conf" / "rewriter" / "hyde.yaml").write_text("name: hyde\n", encoding="utf-8")
    assert groups_without_help(search) == ["rewriter"]
