"""One chunking's per-query search (and rerank) times, on an index already built.

The sweep builds each chunking's index once to retrieve every question's pool; the same index then serves
the seeded sample of questions one at a time (:mod:`evalkit.pipeline.stage_latency` says what is timed and
why). Timing right after the pool, while the index is alive, is what keeps the latency pass from building
every index a second time, and only one chunking's index is held at a time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from evalkit.records import Question
from evalkit.retrieval.backends import SearchParts
from evalkit.retrieval.bm25 import tokens_of
from evalkit.retrieval.pools import QueryVectors
from evalkit.scoring.latency import stage_percentiles

if TYPE_CHECKING:
    from evalkit.pipeline.work import WorkContext

SAMPLE_QUESTIONS = 12
"""Questions timed one at a time (after one warm-up): enough for a p50; the p95 of 12 is their maximum."""


def sample_rows(n_questions: int, seed: int, size: int = SAMPLE_QUESTIONS) -> list[int]:
    """Rows of a seeded sample of ``size + 1`` questions (the first is the warm-up), in a fixed order."""
    rng = np.random.default_rng(seed)
    return [int(i) for i in rng.permutation(n_questions)[: size + 1]]


def paid(cost_usd: float, bills: bool = False) -> bool:
    return bills or cost_usd > 0


def timed_calls(calls: Sequence[Callable[[], Any]]) -> tuple[list[Any], list[float]]:
    """Each call's result and seconds; the first call is the warm-up and its time is dropped."""
    results, seconds = [], []
    for call in calls:
        started = time.perf_counter()
        results.append(call())
        seconds.append(time.perf_counter() - started)
    return results, seconds[1:]


def searches_here(ctx: WorkContext) -> bool:
    """Whether this run times searches at all: evalkit searches, enough questions, no billed query embedding."""
    backend = ctx.plan.retriever.backend
    if backend.search is None or len(ctx.questions) < 2:
        return False
    embedder = ctx.embedder
    return not (backend.embeds and embedder is not None and paid(embedder.request_cost_usd(["x"])))


@dataclass(frozen=True)
class SampleQueries:
    """The sampled questions as a one-query search reads them."""

    questions: tuple[Question, ...]
    vectors: np.ndarray | None
    """(n, dim) query vectors (dense and hybrid), None for BM25 alone."""
    tokens: tuple[list[str], ...] | None
    """BM25 tokens of each question (None when the retriever reads none)."""


def sample_queries(ctx: WorkContext, questions: Sequence[Question], vectors: np.ndarray | None) -> SampleQueries:
    tokens = None
    if ctx.plan.retriever.backend.tokenizes:
        tokens = tuple(tokens_of([q.question for q in questions], ctx.cache))
    return SampleQueries(tuple(questions), vectors, tokens)


def time_chunking(
    ctx: WorkContext,
    parts: SearchParts,
    queries: SampleQueries,
    unit_texts: Sequence[str],
    child_to_parent: np.ndarray | None,
) -> dict[str, Any]:
    """Search (and rerank) each sampled question alone against this chunking's built index (``parts``).

    The index's own query set (every question, for the sweep's pool) is replaced here: call this after the
    chunking's pool is searched.
    """
    plan, retriever, index, bm25 = ctx.plan, ctx.plan.retriever, parts.index, parts.bm25
    questions = queries.questions

    def search_one(i: int) -> np.ndarray:
        one = None
        if index is not None:
            assert queries.vectors is not None
            one = QueryVectors(index.model, np.asarray(queries.vectors[i], dtype=np.float32).reshape(1, -1))
        if bm25 is not None:
            assert queries.tokens is not None
            bm25.set_queries([questions[i].question], tokens=[queries.tokens[i]])
        single = replace(parts, n_queries=1, pool_size=plan.pool_size, queries=one, allowed=None)
        pool, _ = retriever.backend.search(retriever, single)  # type: ignore[misc]
        members = pool.indices[0][pool.indices[0] >= 0]
        return members if child_to_parent is None else np.unique(child_to_parent[members])

    pools, search_seconds = timed_calls([lambda i=i: search_one(i) for i in range(len(questions))])
    entry: dict[str, Any] = {"search": stage_percentiles(search_seconds)}
    reranker = ctx.reranker
    if reranker is not None and paid(reranker.request_cost_usd(1), reranker.bills_unanswered_requests):
        entry["rerank_not_timed"] = "a paid hosted reranker (each timed query a billed request)"
    elif reranker is not None:
        spend = ctx.stats.spend

        def rerank_one(question: Question, members: np.ndarray) -> np.ndarray:
            texts = [unit_texts[int(i)] for i in members]
            # A hosted reranker bills these requests: the budget sees them first.
            spend.charge(reranker.request_cost_usd(len(texts)), f"rerank:{reranker.identity}:latency")
            return reranker.score_pairs(question.question, texts, ctx.stats.rerank)

        _, rerank_seconds = timed_calls([lambda q=q, m=m: rerank_one(q, m) for q, m in zip(questions, pools)])
        entry["rerank"] = stage_percentiles(rerank_seconds)
    return entry
