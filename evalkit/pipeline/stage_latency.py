"""The retrieval stage's own per-query latency: query embedding, search and rerank, one query at a time.

The sweep embeds, searches and reranks in blocks over every question (and the cache answers repeats), so its
stage times say nothing about what one user's query waits for. Here, after the sweep, a seeded sample of
questions is sent one at a time through each chunking's index as production would serve it: the query is
embedded without the cache, the chunking's index is searched for that one query (building the index is not
per-query work), and the query's own candidate pool is reranked without the cache. The first query of each
stage is a warm-up and is not timed (lazy model loads and first-call allocations are not what a query waits
for).

Search and rerank are timed on the index the sweep built for the chunking's pool, in the driver right after
that pool (:mod:`evalkit.pipeline.search_timing`), while no other unit runs; this pass then only times the
query embedding and builds an index for a chunking the sweep did not search here (its pool came from the unit
store, or a cluster worker searched it). Before, every chunking's index was built a second time here: at
200 times squad2-en's corpus that was a quarter of the run. The sweep's search read each sampled query's
vector from the cache, as its pool did; the search's cost does not depend on the vector's values.

The query embedding does not depend on the chunking: it is timed once. Search and rerank are timed per
chunking (the index size and the chunk lengths set their cost). A retriever searched by production
(``retriever=external``) has no search here: its latency is production's and is not measured. A paid hosted
embedder or reranker is not timed either: each timed query would be a billed request outside the sweep's
cached work (and its latency is the provider's network and queue, which the record says).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from evalkit.pipeline.index_store import load_bm25, save_bm25
from evalkit.pipeline.retrieve import SearchInputs, bm25_params, search_parts, store_table
from evalkit.pipeline.search_timing import (
    SAMPLE_QUESTIONS,
    SampleQueries,
    paid,
    sample_queries,
    sample_rows,
    time_chunking,
    timed_calls,
)
from evalkit.pipeline.units import units_of
from evalkit.pipeline.work import chunk_stage
from evalkit.records import Question
from evalkit.retrieval.bm25 import cached_tokens
from evalkit.retrieval.embedding.base import embed_texts
from evalkit.run import files
from evalkit.run.folder import write_json
from evalkit.scoring.latency import stage_percentiles

if TYPE_CHECKING:
    from evalkit.pipeline.executor import WorkContext
    from evalkit.pipeline.work import UnitOfWork

__all__ = ["SAMPLE_QUESTIONS", "measure", "sample"]


def sample(questions: Sequence[Question], seed: int, size: int = SAMPLE_QUESTIONS) -> list[Question]:
    """A seeded sample of ``size + 1`` questions (the first is the warm-up), in a fixed order."""
    return [questions[i] for i in sample_rows(len(questions), seed, size)]


def measure(ctx: WorkContext, units: Sequence[UnitOfWork], run_dir: Path) -> dict[str, Any]:
    """Time the sample through every chunking; writes and returns retrieval_latency.json's record."""
    plan, backend = ctx.plan, ctx.plan.retriever.backend
    questions = sample(ctx.questions, plan.seed)
    record: dict[str, Any] = {"sample": max(len(questions) - 1, 0), "warm_up": 1, "chunkings": {}}
    if backend.search is None or len(questions) < 2:
        record["why"] = "retriever=external: production searches" if backend.search is None else "too few questions"
        write_json(run_dir / files.RETRIEVAL_LATENCY_JSON, record)
        return record
    vectors = None
    if backend.embeds and ctx.embedder is not None and paid(ctx.embedder.request_cost_usd(["x"])):
        record["why"] = "a paid hosted embedder: query embedding and search not timed (each query a billed request)"
        write_json(run_dir / files.RETRIEVAL_LATENCY_JSON, record)
        return record
    if backend.embeds:
        embedder = ctx.embedder
        assert embedder is not None
        spend = ctx.stats.spend

        def embed_one(question: Question) -> np.ndarray:
            # A hosted embedder bills these requests: the budget sees them first.
            spend.charge(embedder.request_cost_usd([question.question]), f"embed:{embedder.identity}:latency")
            return embedder.embed_batch([question.question], "query")[0]

        embedded, seconds = timed_calls([lambda q=q: embed_one(q) for q in questions])
        vectors = np.asarray(embedded, dtype=np.float32)
        record["embed"] = stage_percentiles(seconds)
    queries: SampleQueries | None = None
    for unit in units:
        entry = ctx.latency.get(unit.spec.key)  # timed on the index the sweep built for its pool
        if entry is None:
            queries = queries or sample_queries(ctx, questions, vectors)
            entry = _rebuilt(ctx, unit, queries)
        record["chunkings"][unit.spec.key] = entry
    write_json(run_dir / files.RETRIEVAL_LATENCY_JSON, record)
    return record


def _rebuilt(ctx: WorkContext, unit: UnitOfWork, queries: SampleQueries) -> dict[str, Any]:
    """Time a chunking the sweep did not search in this process, on its stored BM25 index when a run built
    one (else it is built here and stored), its dense vectors from the cache."""
    plan, retriever = ctx.plan, ctx.plan.retriever
    chunks = chunk_stage(unit, ctx)
    chunk_units, child_to_parent = units_of(chunks, ctx.labelset)
    texts = [c.embed_text for c in chunks]
    passages = known = bm25 = None
    identity = ctx.embedder.identity if ctx.embedder is not None else None
    if retriever.backend.embeds:
        assert ctx.embedder is not None
        passages = embed_texts(ctx.embedder, texts, "passage", ctx.cache, ctx.stats.embed, False, None)
    if retriever.backend.tokenizes:
        bm25 = load_bm25(ctx.store, ctx.stats, unit.ids.index, bm25_params(retriever))
        known = cached_tokens([*(texts if bm25 is None else ()), *(q.question for q in queries.questions)], ctx.cache)
    dim = ctx.embedder.dim if ctx.embedder is not None else 0
    inputs = SearchInputs(passages, queries.vectors, identity, dim, known, bm25)
    store = store_table(plan, unit.spec.key, identity)
    cells = plan.options.executor.block_cells
    parts, _ = search_parts(retriever, plan.pool_size, texts, queries.questions, inputs, None, cells, store)
    if bm25 is None and parts.bm25 is not None:
        save_bm25(ctx.store, ctx.stats, unit.ids.index, unit.spec.key, parts.bm25)
    return time_chunking(ctx, parts, queries, chunk_units.texts, child_to_parent)
