"""The retrieval stage's own per-query latency: query embedding, search and rerank, one query at a time.

The sweep embeds, searches and reranks in blocks over every question (and the cache answers repeats), so its
stage times say nothing about what one user's query waits for. Here, after the sweep, a seeded sample of
questions is sent one at a time through each chunking's index as production would serve it: the query is
embedded without the cache, the prebuilt index is searched for that one query (building the index is not
per-query work), and the query's own candidate pool is reranked without the cache. The first query of each
stage is a warm-up and is not timed (lazy model loads and first-call allocations are not what a query waits
for). Timings run in the driver, after the sweep's parallel work, so no other unit competes for the cores.

The query embedding does not depend on the chunking: it is timed once. Search and rerank are timed per
chunking (the index size and the chunk lengths set their cost). A retriever searched by production
(``retriever=external``) has no search here: its latency is production's and is not measured. A paid hosted
embedder or reranker is not timed either: each timed query would be a billed request outside the sweep's
cached work (and its latency is the provider's network and queue, which the record says).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from evalkit.pipeline.retrieve import store_table
from evalkit.pipeline.units import units_of
from evalkit.pipeline.work import chunk_stage
from evalkit.records import Question
from evalkit.retrieval.backends import SearchParts
from evalkit.retrieval.bm25 import BM25Index, BM25Params, cached_tokens, complete_tokens
from evalkit.retrieval.embedding.base import embed_texts
from evalkit.retrieval.pools import DenseIndex, QueryVectors
from evalkit.run import files
from evalkit.run.folder import write_json
from evalkit.scoring.latency import stage_percentiles

if TYPE_CHECKING:
    from evalkit.pipeline.executor import WorkContext
    from evalkit.pipeline.work import UnitOfWork

SAMPLE_QUESTIONS = 12
"""Questions timed one at a time (after one warm-up): enough for a p50; the p95 of 12 is their maximum."""


def sample(questions: Sequence[Question], seed: int, size: int = SAMPLE_QUESTIONS) -> list[Question]:
    """A seeded sample of ``size + 1`` questions (the first is the warm-up), in a fixed order."""
    rng = np.random.default_rng(seed)
    picked = rng.permutation(len(questions))[: size + 1]
    return [questions[int(i)] for i in picked]


def _paid(cost_usd: float, bills: bool = False) -> bool:
    return bills or cost_usd > 0


def _timed(call: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    out = call()
    return out, time.perf_counter() - started


def _times(calls: Sequence[Callable[[], Any]]) -> tuple[list[Any], list[float]]:
    """Each call's result and seconds; the first call is the warm-up and its time is dropped."""
    results, seconds = [], []
    for call in calls:
        out, took = _timed(call)
        results.append(out)
        seconds.append(took)
    return results, seconds[1:]


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
    if backend.embeds and ctx.embedder is not None and _paid(ctx.embedder.request_cost_usd(["x"])):
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

        vectors, seconds = _times([lambda q=q: embed_one(q) for q in questions])
        record["embed"] = stage_percentiles(seconds)
    for unit in units:
        chunks = chunk_stage(unit, ctx)
        chunk_units, child_to_parent = units_of(chunks, ctx.labelset)
        entry = _one_chunking(
            ctx, unit.spec.key, [c.embed_text for c in chunks], chunk_units.texts, child_to_parent, questions, vectors
        )
        record["chunkings"][unit.spec.key] = entry
    write_json(run_dir / files.RETRIEVAL_LATENCY_JSON, record)
    return record


def _one_chunking(
    ctx: WorkContext,
    chunking: str,
    chunk_texts: Sequence[str],
    unit_texts: Sequence[str],
    child_to_parent: np.ndarray | None,
    questions: Sequence[Question],
    query_vectors: Sequence[np.ndarray] | None,
) -> dict[str, Any]:
    """Search (and rerank) each sampled question alone against this chunking's prebuilt index."""
    plan, retriever = ctx.plan, ctx.plan.retriever
    store = store_table(plan, chunking, ctx.embedder.identity if ctx.embedder is not None else None)
    index = bm25 = None
    if retriever.backend.embeds:
        assert ctx.embedder is not None and query_vectors is not None
        passages = embed_texts(ctx.embedder, chunk_texts, "passage", ctx.cache, ctx.stats.embed, False, None)
        index = DenseIndex(ctx.embedder.identity, ctx.embedder.dim, passages)
    if retriever.backend.tokenizes:
        texts = [*chunk_texts, *(q.question for q in questions)]
        tokens, _ = complete_tokens(texts, cached_tokens(texts, ctx.cache))
        bm25 = BM25Index(
            chunk_texts, BM25Params(retriever.bm25_k1, retriever.bm25_b), tokens=tokens[: len(chunk_texts)]
        )
        query_tokens = tokens[len(chunk_texts) :]

    def search_one(i: int) -> np.ndarray:
        queries = None
        if index is not None:
            assert query_vectors is not None
            queries = QueryVectors(index.model, np.asarray(query_vectors[i], dtype=np.float32).reshape(1, -1))
        if bm25 is not None:
            bm25.set_queries([questions[i].question], tokens=[query_tokens[i]])
        parts = SearchParts(1, plan.pool_size, index, queries, bm25, None, plan.options.executor.block_cells, store)
        pool, _ = retriever.backend.search(retriever, parts)  # type: ignore[misc]
        members = pool.indices[0][pool.indices[0] >= 0]
        return members if child_to_parent is None else np.unique(child_to_parent[members])

    pools, search_seconds = _times([lambda i=i: search_one(i) for i in range(len(questions))])
    entry: dict[str, Any] = {"search": stage_percentiles(search_seconds)}
    if ctx.reranker is not None and _paid(ctx.reranker.request_cost_usd(1), ctx.reranker.bills_unanswered_requests):
        entry["rerank_not_timed"] = "a paid hosted reranker (each timed query a billed request)"
    elif ctx.reranker is not None:
        reranker, spend = ctx.reranker, ctx.stats.spend

        def rerank_one(question: Question, members: np.ndarray) -> np.ndarray:
            texts = [unit_texts[int(i)] for i in members]
            # A hosted reranker bills these requests: the budget sees them first.
            spend.charge(reranker.request_cost_usd(len(texts)), f"rerank:{reranker.identity}:latency")
            return reranker.score_pairs(question.question, texts, ctx.stats.rerank)

        calls = [lambda q=q, m=m: rerank_one(q, m) for q, m in zip(questions, pools)]
        _, rerank_seconds = _times(calls)
        entry["rerank"] = stage_percentiles(rerank_seconds)
    return entry
