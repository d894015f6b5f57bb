"""Every (top_k, threshold) of the sweep as a slice of one candidate pool (pure, vectorised).

The returned list is: pool entries whose score is at least the threshold, in
pool order, cut at k (:func:`returned_mask`). Nothing falls back to the top-1
hit when every score is below the threshold: that is a zero-hit. The metric
maths is the vectorised form of each family in :mod:`evalkit.scoring.ir`;
this module only composes them into the record the pipeline writes rows from.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalkit.scoring.ir.context_precision import context_precision_matrix
from evalkit.scoring.ir.coverage import SpanCoverage, answer_recall
from evalkit.scoring.ir.hit import hit_matrix
from evalkit.scoring.ir.ndcg import ndcg_matrix
from evalkit.scoring.ir.precision import precision_matrix, recall_trec_matrix
from evalkit.scoring.ir.reciprocal_rank import reciprocal_rank_matrix
from evalkit.scoring.ir.returned import Returned, returned_mask
from evalkit.scoring.ir.zero_hit import zero_hit_matrix

__all__ = [
    "PoolJudgement",
    "SliceMetrics",
    "SpanCoverage",
    "answer_recall",
    "best_score",
    "returned_mask",
    "slice_metrics",
]


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
    """Written as the ``mrr`` column."""
    ndcg: np.ndarray
    zero_hit: np.ndarray
    n_returned: np.ndarray
    returned: np.ndarray
    """bool (n_q, N): which pool entries were returned."""


def slice_metrics(judgement: PoolJudgement, k: int, threshold: float) -> SliceMetrics:
    """Metrics of the returned list for every question at once (definitions in :mod:`evalkit.scoring.ir`).

    ``recall`` is not here: for multi-hop questions it needs the span coverage
    of ``returned``, which the caller computes; :func:`answer_recall` then
    combines it with ``hit``.
    """
    r = Returned.slice(judgement.relevant, judgement.scores, judgement.n_relevant, k, threshold)
    return SliceMetrics(
        hit=hit_matrix(r),
        precision=precision_matrix(r),
        recall_trec=recall_trec_matrix(r),
        context_precision=context_precision_matrix(r),
        reciprocal_rank=reciprocal_rank_matrix(r),
        ndcg=ndcg_matrix(r),
        zero_hit=zero_hit_matrix(r),
        n_returned=r.n_returned,
        returned=r.returned,
    )


def best_score(scores: np.ndarray) -> np.ndarray:
    """Each question's best pool score (NaN for an empty pool)."""
    filled = np.nan_to_num(scores, nan=-np.inf)
    best = filled.max(axis=1) if filled.shape[1] else np.full(filled.shape[0], -np.inf)
    return np.where(np.isfinite(best), best, np.nan)
