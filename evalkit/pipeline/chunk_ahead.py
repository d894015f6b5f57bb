"""Both cores on a large corpus: the next chunking is chunked in a second process while the driver retrieves
and scores the current one.

Chunking is pure (documents and a spec in, spans out), so a worker process runs it and sends back the chunk
table (spans, no text: the text is the documents' own slice); the driver stores it as the chunk stage and
rebuilds the chunks from it exactly as a resumed run does. One chunking is chunked ahead at a time, so at
most two chunkings' chunks are held, never the whole grid's. The worker gets the documents once, when it
starts (``spawn``: a fresh interpreter, no state copied from a driver that holds threads and an open cache).
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

import pandas as pd

from evalkit.labels.read import LabelSet
from evalkit.pipeline.units import chunk_table, chunks_from_table
from evalkit.pipeline.work import UnitOfWork, UnitResult, WorkContext, chunk_unit, run_unit, save_chunks
from evalkit.records import EXTERNAL_CHUNKING, ChunkingSpec

_LABELSET: LabelSet | None = None
"""The worker's documents, set once by :func:`_hold` when the worker starts."""


def _hold(labelset: LabelSet) -> None:
    global _LABELSET
    _LABELSET = labelset


def _chunk(spec: ChunkingSpec) -> tuple[pd.DataFrame, dict[str, Any], float]:
    """In the worker: the chunk table, the chunk-health record and the seconds they took."""
    assert _LABELSET is not None, "the worker starts with the labelled set"
    started = time.perf_counter()
    chunks, record = chunk_unit(_LABELSET, spec)
    return chunk_table(chunks), record, time.perf_counter() - started


def needs_chunking(unit: UnitOfWork, ctx: WorkContext) -> bool:
    """Whether the unit will chunk in this run (its score and chunks not stored; not production's chunking)."""
    if unit.spec.chunker == EXTERNAL_CHUNKING or ctx.store.has("score", unit.ids.score):
        return False
    return not ctx.store.has("chunk", unit.ids.chunk)


def chunked_ahead(units: Sequence[UnitOfWork], ahead: Sequence[UnitOfWork], ctx: WorkContext) -> Iterator[UnitResult]:
    """Every unit's result in order, the next of ``ahead`` chunked in the worker while one runs here."""
    waiting = list(ahead)
    pending: dict[str, Future[tuple[pd.DataFrame, dict[str, Any], float]]] = {}
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=spawn, initializer=_hold, initargs=(ctx.labelset,)) as worker:
        for unit in units:
            if unit in waiting:
                waiting.remove(unit)
            chunks = None
            future = pending.pop(unit.ids.chunk, None)
            if future is not None:
                table, record, seconds = future.result()
                chunks = chunks_from_table(table, ctx.labelset)
                save_chunks(ctx, unit, chunks, record, seconds)
            if waiting and not pending:  # the next one is chunked there while this one is worked here
                following = waiting.pop(0)
                pending[following.ids.chunk] = worker.submit(_chunk, following.spec)
            yield run_unit(unit, ctx, chunks)
