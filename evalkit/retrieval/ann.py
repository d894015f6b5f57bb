"""Approximate dense search (``retriever.index=hnsw``, usearch) and what it costs in recall.

Exact search scores every question against every unit; on a corpus of millions of
units that is the slow part. An HNSW graph answers the same top-n from a few hundred
distance computations per question, at the price of missing some true neighbours.
That price is measured, not assumed: :func:`recall_against_exact` runs exact search
on a sample of the same questions and reports the share of the exact pool the
approximate pool found.

The graph is built and searched on one thread so that the same vectors give the
same graph and the same pool on every run (usearch's multi-threaded insertion
order is not fixed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from evalkit.retrieval.cosine import exact_cosines, to_fixed_point
from evalkit.retrieval.mask import Mask
from evalkit.retrieval.pools import (
    DEFAULT_BLOCK_CELLS,
    CandidatePool,
    DenseIndex,
    QueryVectors,
    check_same_model,
    dense_pool,
)

RECALL_SAMPLE = 256
"""Questions searched exactly as well, to measure the approximate index's recall."""


class AnnUnavailableError(RuntimeError):
    """usearch (the ``ann`` extra) is not installed."""


@dataclass(frozen=True)
class HnswSettings:
    """HNSW graph parameters: more connectivity and expansion, better recall, slower build."""

    connectivity: int = 16
    expansion_add: int = 128
    expansion_search: int = 64


def hnsw_pool(
    index: DenseIndex,
    queries: QueryVectors,
    n: int,
    allowed: Mask | None = None,
    settings: HnswSettings = HnswSettings(),
) -> CandidatePool:
    """Approximate top-n by inner product on unit vectors (= cosine), best first, ties by lower unit.

    With metadata filters the graph is asked for four times the pool and the units a
    question may not see are dropped afterwards; a question can then get fewer than n.
    The score of each hit is its cosine recomputed from the stored vectors.
    """
    check_same_model(index, queries)
    n_units, n_queries = len(index.vectors), len(queries.vectors)
    indices = np.full((n_queries, n), -1, dtype=np.int64)
    scores = np.full((n_queries, n), np.nan)
    if n_units == 0 or n_queries == 0:
        return CandidatePool(indices, scores, "dense")
    graph = _build(index, settings)
    # Candidates are rescored with the exact cosines of the exact index, so a pair scores the same in both.
    units, asked = to_fixed_point(index.vectors), to_fixed_point(queries.vectors)
    fetch = min(n_units, n if allowed is None else 4 * n)
    found = graph.search(queries.vectors, fetch, threads=1, exact=False)
    keys = np.asarray(found.keys, dtype=np.int64).reshape(n_queries, -1)
    # usearch pads short result lists with key 0; ``counts`` says how many are real.
    counts = np.asarray(getattr(found, "counts", [len(found)]), dtype=np.int64).reshape(n_queries)
    for row in range(n_queries):
        members = keys[row][: counts[row]]
        if allowed is not None:
            members = members[allowed[row, members]]
        cosines = exact_cosines(asked.take(slice(row, row + 1)), units.take(members))[0]
        order = np.lexsort((members, -cosines))[:n]
        indices[row, : order.size] = members[order]
        scores[row, : order.size] = cosines[order]
    return CandidatePool(indices, scores, "dense")


def _build(index: DenseIndex, settings: HnswSettings) -> Any:  # a usearch.index.Index
    try:
        from usearch.index import Index
    except ImportError:
        raise AnnUnavailableError(
            'retriever.index=hnsw needs usearch: pip install -e ".[ann]" (or retriever.index=exact)'
        ) from None
    graph = Index(
        ndim=index.dim,
        metric="ip",
        dtype="f32",
        connectivity=settings.connectivity,
        expansion_add=settings.expansion_add,
        expansion_search=settings.expansion_search,
    )
    graph.add(np.arange(len(index.vectors), dtype=np.uint64), index.vectors, threads=1)
    return graph


def recall_sample(n_queries: int, size: int = RECALL_SAMPLE) -> np.ndarray:
    """Evenly spaced question rows (every question when there are fewer than ``size``)."""
    if n_queries <= size:
        return np.arange(n_queries)
    return np.unique(np.linspace(0, n_queries - 1, size).round().astype(np.int64))


def recall_against_exact(
    index: DenseIndex,
    queries: QueryVectors,
    approximate: CandidatePool,
    allowed: Mask | None = None,
    cells: int = DEFAULT_BLOCK_CELLS,
) -> dict[str, float | int]:
    """Share of the exact pool the approximate pool holds, on a sample of questions (mean over them)."""
    rows = recall_sample(len(queries.vectors))
    sample = QueryVectors(queries.model, queries.vectors[rows])
    exact = dense_pool(index, sample, approximate.depth, None if allowed is None else allowed[rows], cells)
    shares, at_10 = [], []
    for i, row in enumerate(rows):
        truth = exact.indices[i][exact.indices[i] >= 0]
        got = approximate.indices[row][approximate.indices[row] >= 0]
        if truth.size:
            shares.append(np.isin(truth, got).mean())
            at_10.append(np.isin(truth[:10], got[:10]).mean())
    return {
        "questions": len(shares),
        "recall_at_pool": float(np.mean(shares)) if shares else float("nan"),
        "recall_at_10": float(np.mean(at_10)) if at_10 else float("nan"),
        "depth": approximate.depth,
    }
