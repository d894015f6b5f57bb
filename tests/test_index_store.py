"""A chunking's BM25 index is built once and kept: a later run with the same chunking loads it, and what it
retrieves from the loaded index is what a cold run retrieves."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from evalkit.retrieval.bm25 import BM25Index, BM25Params
from tests.test_sweep import SMALL, run_in_process

TEXTS = [
    "The cat sat on the mat; the mat was red.",
    "Dogs bark loudly at night.",
    "猫坐在垫子上。",
    "A cat and a dog, and another cat.",
    "!!!",
]


def test_an_index_from_its_arrays_scores_exactly_as_the_built_one() -> None:
    params = BM25Params(k1=1.2, b=0.6)
    built = BM25Index(TEXTS, params)
    loaded = BM25Index.from_arrays(built.to_arrays(), params)
    queries = ["cat mat", "猫", "dogs at night", "nothing known here", ""]
    for index in (built, loaded):
        index.set_queries(queries)
    scores = built.score_rows(slice(0, len(queries)))
    np.testing.assert_array_equal(loaded.score_rows(slice(0, len(queries))), scores)
    assert loaded.n_units == len(TEXTS) and scores[0, 0] > scores[0, 3] > 0 == scores[0, 1]


def test_an_index_without_a_term_round_trips_to_zero_scores() -> None:
    loaded = BM25Index.from_arrays(BM25Index(["!!", "?"]).to_arrays())
    loaded.set_queries(["anything"])
    assert loaded.score_rows(slice(0, 1)).tolist() == [[0.0, 0.0]]


def _stats(run_dir: Path) -> dict:
    return json.loads((run_dir / "run_stats.json").read_text(encoding="utf-8"))


def test_another_pool_size_reuses_the_stored_index_and_retrieves_what_a_cold_run_does(
    tmp_path: Path, small_demo: Path
) -> None:
    args = [*SMALL, f"labelset.path={small_demo}", "retriever=bm25"]
    run_in_process([*args, f"reports_dir={tmp_path / 'kept'}", "pool_size=20", "run_id=a"])
    # The pool size changes every retrieve unit but not the chunkings: both indexes come from the store.
    again = run_in_process([*args, f"reports_dir={tmp_path / 'kept'}", "pool_size=30", "run_id=b"])
    stats = _stats(again)
    assert stats["stages_run"]["retrieve"] == 2 and stats["stages_reused"]["chunk"] == 2
    assert stats["stages_run"]["index"] == 0 and stats["stages_reused"]["index"] == 2
    cold = run_in_process([*args, f"reports_dir={tmp_path / 'cold'}", "pool_size=30", "run_id=b"])
    assert _stats(cold)["stages_run"]["index"] == 2
    for table in ("results.parquet", "summary.parquet"):
        pd.testing.assert_frame_equal(pd.read_parquet(again / table), pd.read_parquet(cold / table))
    for pools in sorted((cold / "pools").glob("*.parquet")):
        pd.testing.assert_frame_equal(pd.read_parquet(again / "pools" / pools.name), pd.read_parquet(pools))
    assert sorted(p.name for p in (cold / "pools").glob("*.parquet"))
