"""Chunking (and BM25-indexing) ahead in a second process changes no number and counts each chunking once."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from tests.test_sweep import SMALL, run_in_process


def test_chunking_ahead_gives_the_same_run(tmp_path: Path, small_demo: Path) -> None:
    runs = {}
    for name, ahead in (("here", "1000000000"), ("ahead", "0")):
        args = [*SMALL, "chunk_size=[128,256,512]", f"labelset.path={small_demo}", f"reports_dir={tmp_path / name}"]
        runs[name] = run_in_process([*args, f"executor.chunk_ahead_min_chars={ahead}", "run_id=r"])
    for table in ("results.parquet", "summary.parquet"):
        pd.testing.assert_frame_equal(pd.read_parquet(runs["here"] / table), pd.read_parquet(runs["ahead"] / table))
    for run_dir in runs.values():
        stats = json.loads((run_dir / "run_stats.json").read_text(encoding="utf-8"))
        assert stats["stages_run"]["chunk"] == 3 and stats["stages_reused"]["chunk"] == 0
        assert stats["stages_run"]["index"] == 3 and stats["stages_reused"]["index"] == 0
    stored = {name: sorted((run_dir.parent / ".units" / "chunk").glob("*.parquet")) for name, run_dir in runs.items()}
    assert len(stored["here"]) == 3 and [p.name for p in stored["here"]] == [p.name for p in stored["ahead"]]
    for here, ahead in zip(stored["here"], stored["ahead"]):  # the worker's chunk tables, stored as the driver's
        pd.testing.assert_frame_equal(pd.read_parquet(here), pd.read_parquet(ahead))
    # The worker's BM25 indexes (its own tokens, no cache) are the driver's: the same postings for every term
    # (term ids follow the process's string hashing, so the arrays are compared term by term).
    indexes = {name: sorted((run_dir.parent / ".units" / "index").glob("*.npz")) for name, run_dir in runs.items()}
    assert len(indexes["here"]) == 3 and [p.name for p in indexes["here"]] == [p.name for p in indexes["ahead"]]
    for here, ahead in zip(indexes["here"], indexes["ahead"]):
        assert postings(here) == postings(ahead)


def postings(path: Path) -> dict[str, tuple[list[int], list[float]]]:
    """Each term's (units, BM25 weights) in a stored index."""
    with np.load(path) as index:
        starts, data, units = index["indptr"], index["data"], index["indices"]
        found = {}
        for term, i in zip(index["terms"].tolist(), index["term_ids"].tolist()):
            if i + 1 >= starts.size:  # bm25s's empty placeholder term has no column
                continue
            found[term] = (units[starts[i] : starts[i + 1]].tolist(), data[starts[i] : starts[i + 1]].tolist())
    assert found
    return found
