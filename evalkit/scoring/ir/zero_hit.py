"""Zero-hit: nothing reaches the model (no hit, or the best score strictly below the threshold).

Right for an unanswerable question (a correct abstention), a miss for an
answerable one; the summary splits the rate by the two (see
:mod:`evalkit.scoring.aggregate`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from evalkit.scoring.ir.checks import check_k
from evalkit.scoring.ir.metric import Column, Metric
from evalkit.scoring.ir.returned import Returned

__all__ = ["METRICS", "zero_hit", "zero_hit_at_k", "zero_hit_matrix"]


def zero_hit(best_score: float | None, threshold: float) -> bool:
    """True when no hit exists or the best score is strictly below ``threshold`` (equal passes)."""
    if math.isnan(threshold):
        raise ValueError("threshold is NaN")
    if best_score is None:
        return True
    if math.isnan(best_score):
        raise ValueError("best_score is NaN")
    return best_score < threshold


def zero_hit_matrix(r: Returned) -> np.ndarray:
    """bool (n_q,): :func:`zero_hit` of every question (nothing returned at this grid point)."""
    return r.n_returned == 0


def zero_hit_at_k(rel: Sequence[bool], k: int) -> bool:
    """The same rule on a returned list (already cut by the threshold): True when it is empty.

    ``k`` is checked and otherwise unused: a list returns nothing at every cut-off or at none.
    """
    check_k(k)
    return len(rel) == 0


METRICS = (
    Metric(
        "zero_hit",
        lambda j, k: float(zero_hit_at_k(j.rel, k)),
        zero_hit_matrix,
        Column(
            "zero_hit", "zero-hit", False, "proportion",
            "1 when nothing reaches the model: no pool score at or above the threshold.",
        ),
        order=200,
        answerable_only=False,  # a miss on answerable questions, a correct abstention on unanswerable ones
        comparable=False,  # compared as two measures, zero_hit_answerable and zero_hit_unanswerable (registry)
    ),
)  # fmt: skip
