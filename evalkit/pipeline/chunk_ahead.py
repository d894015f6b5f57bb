"""Both cores on a large corpus: the next chunking is chunked (and BM25-indexed) in a second process while
the driver retrieves and scores the current one.

Chunking is pure (documents and a spec in, spans out), so a worker process runs it and sends back the chunk
table (spans, no text: the text is the documents' own slice); the driver stores it as the chunk stage and
rebuilds the chunks from it exactly as a resumed run does. One chunking is chunked ahead at a time, so at
most two chunkings' chunks are held, never the whole grid's. The worker gets the documents once, when it
starts (``spawn``: a fresh interpreter, no state copied from a driver that holds threads and an open cache).

With a BM25 retriever (bm25, hybrid) the worker also tokenises the chunks and builds their index, the larger
part of a retrieve on a large corpus; the driver stores it (:mod:`evalkit.pipeline.index_store`) and searches
it. The worker has no cache: it segments every chunk itself (the same tokeniser, so the same tokens), and those
tokens are not cached, since a later run with the same chunking loads the stored index instead.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

import numpy as np
import pandas as pd

from evalkit.labels.read import LabelSet
from evalkit.pipeline.index_store import STAGE as INDEX_STAGE
from evalkit.pipeline.index_store import save_bm25
from evalkit.pipeline.retrieve import bm25_params
from evalkit.pipeline.units import chunk_table, chunks_from_table
from evalkit.pipeline.work import UnitOfWork, UnitResult, WorkContext, chunk_unit, run_unit, save_chunks
from evalkit.records import EXTERNAL_CHUNKING, ChunkingSpec
from evalkit.retrieval.bm25 import BM25Index, BM25Params
from evalkit.retrieval.tokenize import tokenize_many

Ahead = tuple[pd.DataFrame, dict[str, Any], float, dict[str, np.ndarray] | None, float]
"""What the worker sends back: chunk table, chunk-health record, seconds; BM25 index arrays (or None), seconds."""

_LABELSET: LabelSet | None = None
"""The worker's documents, set once by :func:`_hold` when the worker starts."""


def _hold(labelset: LabelSet) -> None:
    global _LABELSET
    _LABELSET = labelset


def _chunk(spec: ChunkingSpec, bm25: BM25Params | None) -> Ahead:
    """In the worker: the chunk table and chunk-health record, then (``bm25`` given) the chunks' BM25 index."""
    assert _LABELSET is not None, "the worker starts with the labelled set"
    started = time.perf_counter()
    chunks, record = chunk_unit(_LABELSET, spec)
    table, chunked = chunk_table(chunks), time.perf_counter() - started
    if bm25 is None:
        return table, record, chunked, None, 0.0
    started = time.perf_counter()
    texts = [c.embed_text for c in chunks]  # what the driver's search indexes (pipeline.work.pool_stage)
    arrays = BM25Index(texts, bm25, tokens=tokenize_many(texts)).to_arrays()
    return table, record, chunked, arrays, time.perf_counter() - started


def _index_params(unit: UnitOfWork, ctx: WorkContext) -> BM25Params | None:
    """The BM25 parameters when the worker should index the unit (a BM25 retriever, no index stored yet)."""
    retriever = ctx.plan.retriever
    if not retriever.backend.tokenizes or ctx.store.has(INDEX_STAGE, unit.ids.index):
        return None
    return bm25_params(retriever)


def needs_chunking(unit: UnitOfWork, ctx: WorkContext) -> bool:
    """Whether the unit will chunk in this run (its score and chunks not stored; not production's chunking)."""
    if unit.spec.chunker == EXTERNAL_CHUNKING or ctx.store.has("score", unit.ids.score):
        return False
    return not ctx.store.has("chunk", unit.ids.chunk)


def chunked_ahead(units: Sequence[UnitOfWork], ahead: Sequence[UnitOfWork], ctx: WorkContext) -> Iterator[UnitResult]:
    """Every unit's result in order, the next of ``ahead`` chunked in the worker while one runs here."""
    waiting = list(ahead)
    pending: dict[str, Future[Ahead]] = {}
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=spawn, initializer=_hold, initargs=(ctx.labelset,)) as worker:
        for unit in units:
            if unit in waiting:
                waiting.remove(unit)
            chunks = bm25 = None
            future = pending.pop(unit.ids.chunk, None)
            if future is not None:
                table, record, seconds, arrays, indexed = future.result()
                chunks = chunks_from_table(table, ctx.labelset)
                save_chunks(ctx, unit, chunks, record, seconds)
                if arrays is not None:
                    bm25 = BM25Index.from_arrays(arrays, bm25_params(ctx.plan.retriever))
                    save_bm25(ctx.store, ctx.stats, unit.ids.index, unit.spec.key, bm25)
                    ctx.stats.add_time(INDEX_STAGE, indexed)
            if waiting and not pending:  # the next one is chunked there while this one is worked here
                following = waiting.pop(0)
                pending[following.ids.chunk] = worker.submit(_chunk, following.spec, _index_params(following, ctx))
            yield run_unit(unit, ctx, chunks, bm25)
