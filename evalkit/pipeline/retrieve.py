"""The retrieval stages of one unit: one candidate pool per chunking, then its rerank."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalkit.cache import Cache
from evalkit.pipeline.counters import RunStats
from evalkit.pipeline.plan import SweepPlan
from evalkit.pipeline.units import Units
from evalkit.records import Question
from evalkit.retrieval.backends import SearchParts
from evalkit.retrieval.bm25 import BM25Index, BM25Params, cached_tokens, complete_tokens, store_tokens
from evalkit.retrieval.embedding.base import Embedder, embed_texts
from evalkit.retrieval.mask import Mask
from evalkit.retrieval.pools import DEFAULT_BLOCK_CELLS, CandidatePool, DenseIndex, QueryVectors
from evalkit.retrieval.rerank.base import Reranker, cached_scores, rerank_scores
from evalkit.retrieval.settings import RetrieverSettings
from evalkit.retrieval.vectorstore import STORE_FOLDER, StoreTable, table_name
from evalkit.run.progress import bar


@dataclass(frozen=True)
class SearchInputs:
    """What a pool is searched from, with every cache lookup already done (a worker needs no cache)."""

    passage_vectors: np.ndarray | None
    query_vectors: np.ndarray | None
    embedder_identity: str | None
    dim: int
    known_tokens: dict[str, list[str]] | None
    """BM25 tokens the cache held for the unit and query texts (None: no BM25); the query texts' only when
    ``bm25`` is given."""
    bm25: BM25Index | None = None
    """The chunking's BM25 index, built by an earlier search and kept in the unit store (None: build it)."""


def embed_inputs(
    retriever: RetrieverSettings,
    units_text: Sequence[str],
    questions: Sequence[Question],
    embedder: Embedder | None,
    cache: Cache,
    stats: RunStats,
    progress: bool = False,
    bm25: BM25Index | None = None,
) -> SearchInputs:
    """The local path: vectors and tokens from the cache, computing the misses in this process.

    ``bm25``: the chunking's stored BM25 index; only the questions are then tokenised (not every unit).
    """
    passages = queries = None
    if retriever.backend.embeds:
        assert embedder is not None
        started = time.perf_counter()
        passages = embed_texts(embedder, units_text, "passage", cache, stats.embed, progress, stats.spend)
        questions_text = [q.question for q in questions]
        queries = embed_texts(embedder, questions_text, "query", cache, stats.embed, progress, stats.spend)
        stats.add_time("embed", time.perf_counter() - started)
    known = None
    if retriever.backend.tokenizes:
        texts = [*(units_text if bm25 is None else ()), *(q.question for q in questions)]
        known = cached_tokens(texts, cache)
        _, fresh = complete_tokens(texts, known)
        store_tokens(cache, fresh)
        known.update(fresh)
    identity = embedder.identity if embedder is not None else None
    return SearchInputs(passages, queries, identity, embedder.dim if embedder is not None else 0, known, bm25)


def bm25_params(retriever: RetrieverSettings) -> BM25Params:
    return BM25Params(retriever.bm25_k1, retriever.bm25_b)


def store_table(plan: SweepPlan, chunking: str, embedder_identity: str | None) -> StoreTable | None:
    """Where ``retriever.index=lancedb`` keeps this chunking's table: beside the cache file (None: no store)."""
    if plan.retriever.index != "lancedb":
        return None
    folder = plan.options.cache_path.parent / STORE_FOLDER
    return StoreTable(folder, table_name(chunking, str(embedder_identity), plan.labelset_path))


def search_parts(
    retriever: RetrieverSettings,
    pool_size: int,
    units_text: Sequence[str],
    questions: Sequence[Question],
    inputs: SearchInputs,
    allowed: Mask | None = None,
    cells: int = DEFAULT_BLOCK_CELLS,
    store: StoreTable | None = None,
) -> tuple[SearchParts, dict[str, list[str]]]:
    """The built index (dense vectors, BM25) and queries a search reads, and the BM25 tokens computed for it.

    A BM25 index given in ``inputs`` is searched as it is (its units are not tokenised again).
    """
    backend = retriever.backend
    index = queries = bm25 = None
    fresh: dict[str, list[str]] = {}
    if backend.embeds:
        assert inputs.passage_vectors is not None and inputs.query_vectors is not None
        index = DenseIndex(str(inputs.embedder_identity), inputs.dim, inputs.passage_vectors)
        queries = QueryVectors(str(inputs.embedder_identity), inputs.query_vectors)
    if backend.tokenizes:
        assert inputs.known_tokens is not None
        bm25 = inputs.bm25
        asked = [q.question for q in questions]
        texts = [*(units_text if bm25 is None else ()), *asked]
        tokens, fresh = complete_tokens(texts, inputs.known_tokens)
        if bm25 is None:
            bm25 = BM25Index(units_text, bm25_params(retriever), tokens=tokens[: len(units_text)])
        bm25.set_queries(asked, tokens=tokens[len(texts) - len(asked) :])
    return SearchParts(len(questions), pool_size, index, queries, bm25, allowed, cells, store), fresh


def search(
    retriever: RetrieverSettings,
    pool_size: int,
    units_text: Sequence[str],
    questions: Sequence[Question],
    inputs: SearchInputs,
    allowed: Mask | None = None,
    cells: int = DEFAULT_BLOCK_CELLS,
    store: StoreTable | None = None,
) -> tuple[CandidatePool, dict[str, Any], dict[str, list[str]]]:
    """One candidate pool of ``pool_size`` per question; pure given ``inputs`` (and the store's table).

    Returns the pool, what the search reports (the approximate index's recall against
    exact search), and BM25 tokens it had to compute (for the driver to cache). The backend
    says what it reads (vectors, tokens) and searches (evalkit.retrieval.backends).
    """
    backend = retriever.backend
    assert backend.search is not None, f"retriever={retriever.name} is searched by production (an external unit)"
    parts, fresh = search_parts(retriever, pool_size, units_text, questions, inputs, allowed, cells, store)
    pool, report = backend.search(retriever, parts)
    return pool, report, fresh


def retrieve_with_index(
    retriever: RetrieverSettings,
    pool_size: int,
    units_text: Sequence[str],
    questions: Sequence[Question],
    embedder: Embedder | None,
    cache: Cache,
    stats: RunStats,
    allowed: Mask | None = None,
    cells: int = DEFAULT_BLOCK_CELLS,
    progress: bool = False,
    store: StoreTable | None = None,
    bm25: BM25Index | None = None,
) -> tuple[CandidatePool, dict[str, Any], SearchParts]:
    """:func:`retrieve`, also returning the index it built (the latency pass times queries on it, not a rebuild).

    ``bm25``: the chunking's BM25 index from the unit store, searched instead of building one.
    """
    backend = retriever.backend
    assert backend.search is not None, f"retriever={retriever.name} is searched by production (an external unit)"
    inputs = embed_inputs(retriever, units_text, questions, embedder, cache, stats, progress, bm25)
    started = time.perf_counter()
    parts, _ = search_parts(retriever, pool_size, units_text, questions, inputs, allowed, cells, store)
    pool, report = backend.search(retriever, parts)
    stats.add_time("retrieve", time.perf_counter() - started)
    return pool, report, parts


def retrieve(
    retriever: RetrieverSettings,
    pool_size: int,
    units_text: Sequence[str],
    questions: Sequence[Question],
    embedder: Embedder | None,
    cache: Cache,
    stats: RunStats,
    allowed: Mask | None = None,
    cells: int = DEFAULT_BLOCK_CELLS,
    progress: bool = False,
    store: StoreTable | None = None,
) -> tuple[CandidatePool, dict[str, Any]]:
    """One candidate pool of ``pool_size`` per question for this chunking (in this process)."""
    pool, report, _ = retrieve_with_index(
        retriever, pool_size, units_text, questions, embedder, cache, stats, allowed, cells, progress, store
    )
    return pool, report


def rerank_pool(
    pool: CandidatePool,
    units: Units,
    questions: Sequence[Question],
    reranker: Reranker,
    cache: Cache,
    stats: RunStats,
    progress: bool = False,
) -> CandidatePool:
    """Rerank every question's whole pool once; every threshold is then a slice of these scores.

    ``progress``: a bar over the (question, chunk) pairs of the questions the cache could not
    answer whole (pairs per second; a fully cached pool shows none).
    """
    started = time.perf_counter()
    indices = np.full_like(pool.indices, -1)
    scores = np.full(pool.scores.shape, np.nan)
    members_of = [pool.indices[row][pool.indices[row] >= 0] for row in range(len(questions))]
    texts_of = [[units.texts[int(i)] for i in members] for members in members_of]
    known = cached_scores(reranker, [(q.question, texts) for q, texts in zip(questions, texts_of)], cache)
    pending = sum(len(texts) for texts, found in zip(texts_of, known) if found is None)
    with bar(pending, "rerank", "pairs", progress and pending > 0) as shown:
        for row in range(len(questions)):
            members = members_of[row]
            if members.size == 0:
                continue
            member_scores = known[row]
            if member_scores is None:
                member_scores = rerank_scores(
                    reranker, questions[row].question, texts_of[row], cache, stats.rerank, stats.spend
                )
                shown.update(len(texts_of[row]))
            order = np.argsort(-member_scores, kind="stable")  # ties keep the retriever's order
            indices[row, : members.size] = members[order]
            scores[row, : members.size] = member_scores[order]
    stats.add_time("rerank", time.perf_counter() - started)
    return CandidatePool(indices, scores, "rerank")
