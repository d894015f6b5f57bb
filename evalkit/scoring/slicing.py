"""Every (top_k, threshold) of the sweep as a slice of one candidate pool (pure, vectorised).

The returned list is: pool entries whose score is at least the threshold, in
pool order, cut at k (:func:`returned_mask`). Nothing falls back to the top-1
hit when every score is below the threshold: that is a zero-hit. The metric
maths is the vectorised form of each family in :mod:`evalkit.scoring.ir`;
this module only composes them into the record the pipeline writes rows from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from evalkit.scoring.ir.coverage import SpanCoverage, answer_recall
from evalkit.scoring.ir.forms import WRITTEN
from evalkit.scoring.ir.returned import Returned, returned_mask

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

    values: Mapping[str, np.ndarray]
    """Metric name -> its vectorised form's values, for every metric written as a column
    (:data:`evalkit.scoring.ir.forms.WRITTEN`, in column order). ``recall`` here is hit@k for every
    question: the caller replaces multi-hop rows with their span coverage (:func:`answer_recall`)."""
    n_returned: np.ndarray
    returned: np.ndarray
    """bool (n_q, N): which pool entries were returned."""


def slice_metrics(judgement: PoolJudgement, k: int, threshold: float) -> SliceMetrics:
    """Metrics of the returned list for every question at once (definitions in :mod:`evalkit.scoring.ir`).

    Multi-hop ``recall`` needs the span coverage of ``returned``, which the caller computes.
    """
    r = Returned.slice(judgement.relevant, judgement.scores, judgement.n_relevant, k, threshold)
    return SliceMetrics(
        values={m.name: m.vectorised(r) for m in WRITTEN},
        n_returned=r.n_returned,
        returned=r.returned,
    )


def best_score(scores: np.ndarray) -> np.ndarray:
    """Each question's best pool score (NaN for an empty pool)."""
    filled = np.nan_to_num(scores, nan=-np.inf)
    best = filled.max(axis=1) if filled.shape[1] else np.full(filled.shape[0], -np.inf)
    return np.where(np.isfinite(best), best, np.nan)
