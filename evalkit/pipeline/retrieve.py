"""The retrieval stages of one unit: one candidate pool per chunking, then its rerank."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from evalkit.cache import Cache
from evalkit.pipeline.counters import RunStats
from evalkit.pipeline.units import Units
from evalkit.records import Question
from evalkit.retrieval.bm25 import BM25Index, BM25Params
from evalkit.retrieval.embedding.base import Embedder, embed_texts
from evalkit.retrieval.pools import CandidatePool, DenseIndex, QueryVectors, bm25_pool, dense_pool, hybrid_pool
from evalkit.retrieval.rerank.base import Reranker, cached_scores, rerank_scores
from evalkit.retrieval.settings import RetrieverSettings


def retrieve(
    retriever: RetrieverSettings,
    pool_size: int,
    units_text: Sequence[str],
    questions: Sequence[Question],
    embedder: Embedder | None,
    cache: Cache,
    stats: RunStats,
    allowed: np.ndarray | None = None,
) -> CandidatePool:
    """One candidate pool of ``pool_size`` per question for this chunking."""
    n_queries = len(questions)
    index = queries = None
    if retriever.name in ("dense", "hybrid"):
        assert embedder is not None
        started = time.perf_counter()
        vectors = embed_texts(embedder, units_text, "passage", cache, stats.embed)
        index = DenseIndex(embedder.identity, embedder.dim, vectors)
        query_vectors = embed_texts(embedder, [q.question for q in questions], "query", cache, stats.embed)
        queries = QueryVectors(embedder.identity, query_vectors)
        stats.add_time("embed", time.perf_counter() - started)
    started = time.perf_counter()
    bm25 = None
    if retriever.name in ("bm25", "hybrid"):
        bm25 = BM25Index(units_text, BM25Params(retriever.bm25_k1, retriever.bm25_b), cache)
        bm25.set_queries([q.question for q in questions])
    if retriever.name == "dense":
        assert index is not None and queries is not None
        pool = dense_pool(index, queries, pool_size, allowed)
    elif retriever.name == "bm25":
        assert bm25 is not None
        pool = bm25_pool(bm25.score_rows, n_queries, pool_size, allowed)
    else:
        assert index is not None and queries is not None and bm25 is not None
        pool = hybrid_pool(index, queries, bm25.score_rows, pool_size, retriever.fusion, retriever.rrf_k, allowed)
    stats.add_time("retrieve", time.perf_counter() - started)
    return pool


def rerank_pool(
    pool: CandidatePool,
    units: Units,
    questions: Sequence[Question],
    reranker: Reranker,
    cache: Cache,
    stats: RunStats,
    progress: bool = False,
) -> CandidatePool:
    """Rerank every question's whole pool once; every threshold is then a slice of these scores."""
    from tqdm.auto import tqdm

    started = time.perf_counter()
    indices = np.full_like(pool.indices, -1)
    scores = np.full(pool.scores.shape, np.nan)
    members_of = [pool.indices[row][pool.indices[row] >= 0] for row in range(len(questions))]
    texts_of = [[units.texts[int(i)] for i in members] for members in members_of]
    known = cached_scores(reranker, [(q.question, texts) for q, texts in zip(questions, texts_of)], cache)
    rows = tqdm(range(len(questions)), desc="rerank", unit="question", leave=False, disable=not progress)
    for row in rows:
        members = members_of[row]
        if members.size == 0:
            continue
        member_scores = known[row]
        if member_scores is None:
            member_scores = rerank_scores(
                reranker, questions[row].question, texts_of[row], cache, stats.rerank, stats.spend
            )
        order = np.argsort(-member_scores, kind="stable")  # ties keep the retriever's order
        indices[row, : members.size] = members[order]
        scores[row, : members.size] = member_scores[order]
    stats.add_time("rerank", time.perf_counter() - started)
    return CandidatePool(indices, scores, "rerank")
