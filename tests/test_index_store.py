"""What a later run reads back instead of recomputing: a chunking's BM25 index (built once and kept; a run
with the same chunking loads it and retrieves what a cold run retrieves) and its chunk table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalkit.chunking.chunkers import chunk_corpus
from evalkit.labels.read import load_labelset
from evalkit.pipeline.units import chunk_table, chunks_from_table
from evalkit.records import Chunk, ChunkingSpec
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


@pytest.mark.parametrize(("chunker", "size"), [("markdown", 300), ("parent_child", 400), ("recursive", 256)])
def test_a_stored_chunk_table_reads_back_as_the_same_chunks(
    tmp_path: Path, small_demo: Path, chunker: str, size: int
) -> None:
    # Every reused or chunked-ahead chunking is rebuilt from its stored table: section paths, prefixes and
    # parents included, after a real parquet round trip.
    labelset = load_labelset(small_demo)
    chunks = tuple(chunk_corpus(labelset.documents, ChunkingSpec(chunker, size, 32)))
    assert chunks and (chunker != "parent_child" or all(c.parent is not None for c in chunks))
    assert chunker != "markdown" or any(c.section_path for c in chunks)
    chunk_table(chunks).to_parquet(tmp_path / "chunks.parquet", index=False)
    read = chunks_from_table(pd.read_parquet(tmp_path / "chunks.parquet"), labelset)
    assert [_fields(c) for c in read] == [_fields(c) for c in chunks]


def _fields(chunk: Chunk) -> tuple:
    """A chunk as stored: its parent is a span (the table keeps no parent text, as before)."""
    parent = None if chunk.parent is None else (chunk.parent.doc_id, chunk.parent.start, chunk.parent.end)
    return (chunk.chunk_id, chunk.doc_id, chunk.start, chunk.end, chunk.text, chunk.section_path, chunk.prefix, parent)
