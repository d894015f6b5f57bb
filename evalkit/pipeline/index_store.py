"""A chunking's BM25 index, built once and kept in the unit store (``.units/index/<id>.npz``).

Its id is the chunking's own content id (documents and chunking spec) with the BM25 parameters and the
tokeniser version: the pool size, the questions, the filters and the grid do not change it. So the index a
run built serves the latency pass of that run and every later run whose chunking did not change (a resumed
run, a grown grid, another pool size, new questions), as stored chunks already do: no unit is tokenised
and no index rebuilt. Dense indexes need no entry here: their vectors are the cache's, by text.

The arrays are bm25s's score matrix (CSC) and the vocabulary: about 8 bytes per distinct (term, unit) pair,
on disk only (one chunking's index is loaded at a time).
"""

from __future__ import annotations

import time

from evalkit.pipeline.counters import RunStats
from evalkit.retrieval.bm25 import BM25Index, BM25Params
from evalkit.run.units import UnitStore

STAGE = "index"


def load_bm25(store: UnitStore, stats: RunStats, stage_id: str, params: BM25Params) -> BM25Index | None:
    """The stored index, or None when no run built it yet (counted as reused when found)."""
    if not store.has(STAGE, stage_id):
        return None
    started = time.perf_counter()
    index = BM25Index.from_arrays(store.arrays(STAGE, stage_id), params)
    stats.add_time(STAGE, time.perf_counter() - started)
    stats.stages_reused[STAGE] += 1
    return index


def save_bm25(store: UnitStore, stats: RunStats, stage_id: str, chunking: str, index: BM25Index) -> None:
    """Keep the index a search just built (its record is written last: a killed run leaves no half index)."""
    started = time.perf_counter()
    store.save(STAGE, stage_id, {"chunking": chunking, "n_units": index.n_units}, arrays=index.to_arrays())
    stats.add_time(STAGE, time.perf_counter() - started)
    stats.stages_run[STAGE] += 1
