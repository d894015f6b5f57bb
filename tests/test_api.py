"""evalkit from Python: run_sweep with the CLI's overrides, load_run into pandas objects with documented columns."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import evalkit

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory, small_demo: Path) -> evalkit.RunData:
    reports = tmp_path_factory.mktemp("api")
    return evalkit.run_sweep(
        f"labelset.path={small_demo}", f"reports_dir={reports}", "sweep=quick", "top_k=[1,3]", "position=off",
            "answer_check=off",
        "progress=false", "report=false", quiet=True,
    )  # fmt: skip


def test_run_sweep_returns_the_finished_run(finished: evalkit.RunData) -> None:
    assert isinstance(finished.summary, pd.DataFrame)
    # One row per config scored: the grid's points, and beside them the calibration's advised threshold at
    # every top_k (``off_grid``: the gate judges it before it is advised).
    grid = finished.summary[~finished.summary["off_grid"]]
    assert len(grid) == 2 * len(finished.manifest["grid.threshold"])
    assert set(finished.summary["top_k"]) == {1, 3}
    off_grid = finished.summary[finished.summary["off_grid"]]
    assert not set(off_grid["threshold"]) & set(finished.manifest["grid.threshold"])
    assert finished.manifest["labelset.path"].endswith("demo-subset0") or finished.manifest["labelset.questions"] > 0
    assert finished.path.name == finished.run_id


def test_load_run_has_the_documented_columns(finished: evalkit.RunData) -> None:
    run = evalkit.load_run(finished.path)
    for column in ("config_id", "chunking", "chunk_size", "chunk_overlap", "top_k", "threshold", "off_grid", "recall",
                   "hit", "context_precision", "ndcg", "mrr", "zero_hit_answerable", "cost_per_query_usd"):  # fmt: skip
        assert column in run.summary.columns, column
    for column in ("config_id", "question_id", "answerable", "recall", "hit", "zero_hit", "returned_tokens"):
        assert column in run.results.columns, column
    assert list(run.pools.columns[:2]) == ["chunking", "question_id"]
    assert {"rank", "unit_id", "doc_id", "start", "end", "score", "relevant"} <= set(run.pools.columns)
    assert set(run.pools["chunking"]) == {"recursive-s512-o64"} and run.pools["rank"].min() == 1
    # Per-question results agree with the summary (the means are over answerable questions).
    config = run.summary["config_id"].iloc[0]
    rows = run.results[(run.results["config_id"] == config) & run.results["answerable"]]
    assert rows["recall"].mean() == pytest.approx(run.summary.set_index("config_id").loc[config, "recall"])
    assert isinstance(run.manifest, pd.Series) and run.manifest["grid.points"] == (~run.summary["off_grid"]).sum()


def test_a_bad_override_raises_instead_of_exiting(tmp_path: Path) -> None:
    with pytest.raises(evalkit.SweepError, match="did you mean 'chunk_size'") as caught:
        evalkit.run_sweep("chunk_szie=512", f"reports_dir={tmp_path}")
    assert caught.value.exit_code == 2
    with pytest.raises(evalkit.SweepError, match="once per value"):
        evalkit.run_sweep("retriever=bm25,dense")
    with pytest.raises(evalkit.SweepError, match="is not a folder"):
        evalkit.run_sweep(
            "labelset.path=/no/such/set", f"reports_dir={tmp_path}", "position=off", "answer_check=off", quiet=True
        )


def test_the_sweep_module_is_not_shadowed() -> None:
    assert importlib.import_module("evalkit.sweep").main is not None and callable(evalkit.run_sweep)
    done = subprocess.run([sys.executable, "-m", "evalkit.sweep", "--help"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0 and "config groups" in done.stdout
    with pytest.raises(AttributeError):
        _ = evalkit.no_such_thing  # type: ignore[attr-defined]


def test_the_public_names_show_and_a_run_prints_short(finished: evalkit.RunData, small_demo: Path) -> None:
    """Tab completion sees the public API (imported lazily); a run's repr is one line, not whole DataFrames;
    the questions ride beside the results, as the labelled set has them."""
    names = [n for n in dir(evalkit) if not n.startswith("_")]
    assert names == sorted(evalkit.__all__) and "Any" not in names and "annotations" not in names
    text = repr(finished)
    assert "\n" not in text and len(text) < 300 and finished.run_id in text and "configs x" in text
    questions = finished.questions
    assert questions is not None and list(questions["question_id"]) == list(
        dict.fromkeys(finished.results["question_id"])
    )
    from evalkit.labels.read import load_labelset

    by_id = {q.id: q for q in load_labelset(small_demo).questions}
    for row in questions.itertuples(index=False):
        q = by_id[row.question_id]
        assert (row.question, row.answerable, row.answers, row.tags) == (q.question, q.answerable, list(q.answers),
                                                                          dict(q.tags))  # fmt: skip
