"""Every (top_k, threshold) of the sweep as a slice of one candidate pool (pure, vectorised).

The per-question metric definitions live in :mod:`evalkit.scoring.metrics` as small
scalar functions; this module computes the same numbers for all questions of
a chunking at once, and the tests check the two agree. The returned list is:
pool entries whose score is at least the threshold, in pool order, cut at k.
Nothing falls back to the top-1 hit when every score is below the threshold:
that is a zero-hit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PoolJudgement:
    """Relevance of one chunking's candidate pool, per question (rows) and rank (columns)."""

    relevant: np.ndarray
    """bool (n_q, N): the unit at this rank is relevant to the question."""
    scores: np.ndarray
    """float (n_q, N): threshold scores; NaN past the end of a pool."""
    n_relevant: np.ndarray
    """int (n_q,): relevant units in the whole chunking (trec qrels size)."""


@dataclass(frozen=True)
class SliceMetrics:
    """Per-question metric values for one (top_k, threshold); every array has shape (n_q,)."""

    hit: np.ndarray
    precision: np.ndarray
    recall_trec: np.ndarray
    context_precision: np.ndarray
    reciprocal_rank: np.ndarray
    ndcg: np.ndarray
    zero_hit: np.ndarray
    n_returned: np.ndarray
    returned: np.ndarray
    """bool (n_q, N): which pool entries were returned."""


def returned_mask(scores: np.ndarray, k: int, threshold: float) -> np.ndarray:
    """Pool entries at or above the threshold, first k of them per question."""
    keep = np.nan_to_num(scores, nan=-np.inf) >= threshold
    return keep & (np.cumsum(keep, axis=1) <= k)


def slice_metrics(judgement: PoolJudgement, k: int, threshold: float) -> SliceMetrics:
    """Metrics of the returned list for every question at once (definitions in :mod:`evalkit.scoring.metrics`)."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    returned = returned_mask(judgement.scores, k, threshold)
    position = np.cumsum(returned, axis=1)  # 1-based rank within the returned list
    relevant = judgement.relevant & returned
    n_hits = relevant.sum(axis=1)
    n_returned = returned.sum(axis=1)

    precision_at_rank = np.cumsum(relevant, axis=1) / np.maximum(position, 1)
    context_precision = np.where(n_hits > 0, (precision_at_rank * relevant).sum(axis=1) / np.maximum(n_hits, 1), 0.0)

    first = np.where(relevant, position, np.iinfo(np.int64).max).min(axis=1)
    reciprocal_rank = np.where(n_hits > 0, 1.0 / np.maximum(first, 1), 0.0)

    discount = 1.0 / np.log2(np.maximum(position, 1) + 1.0)  # position 0 (not returned) is masked out below
    dcg = np.where(relevant, discount, 0.0).sum(axis=1)
    ideal_discounts = np.concatenate([[0.0], np.cumsum(1.0 / np.log2(np.arange(2, k + 2)))])
    idcg = ideal_discounts[np.minimum(judgement.n_relevant, k)]
    ndcg = np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1.0), 0.0)

    recall_trec = np.where(judgement.n_relevant > 0, n_hits / np.maximum(judgement.n_relevant, 1), 0.0)
    return SliceMetrics(
        hit=(n_hits > 0).astype(np.float64),
        precision=n_hits / k,
        recall_trec=recall_trec,
        context_precision=context_precision,
        reciprocal_rank=reciprocal_rank,
        ndcg=ndcg,
        zero_hit=n_returned == 0,
        n_returned=n_returned,
        returned=returned,
    )


def best_score(scores: np.ndarray) -> np.ndarray:
    """Each question's best pool score (NaN for an empty pool)."""
    filled = np.nan_to_num(scores, nan=-np.inf)
    best = filled.max(axis=1) if filled.shape[1] else np.full(filled.shape[0], -np.inf)
    return np.where(np.isfinite(best), best, np.nan)
