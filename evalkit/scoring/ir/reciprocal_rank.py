"""Reciprocal rank@k, one question's share of MRR@k: 1 / rank of the first relevant hit, else 0."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from evalkit.scoring.ir.checks import top
from evalkit.scoring.ir.metric import Column, Metric
from evalkit.scoring.ir.returned import Returned

__all__ = ["METRICS", "reciprocal_rank", "reciprocal_rank_matrix"]


def reciprocal_rank(rel: Sequence[bool], k: int) -> float:
    """1 / rank of the first relevant hit within the top ``k``, else 0.0 (ranx / trec_eval ``mrr``)."""
    for rank, flag in enumerate(top(rel, k), start=1):
        if flag:
            return 1.0 / rank
    return 0.0


def reciprocal_rank_matrix(r: Returned) -> np.ndarray:
    """float (n_q,): :func:`reciprocal_rank` of every returned list."""
    first = np.where(r.relevant, r.position, np.iinfo(np.int64).max).min(axis=1)
    return np.where(r.n_hits > 0, 1.0 / np.maximum(first, 1), 0.0)


METRICS = (
    Metric(
        "mrr",
        lambda j, k: reciprocal_rank(j.rel, k),
        reciprocal_rank_matrix,
        Column("mrr", "MRR", True, "proportion", "1 / rank of the first relevant unit within the top k, else 0."),
        order=60,
    ),
)
