"""nDCG@k with binary gains and the log2 discount of Järvelin and Kekäläinen (trec_eval ``ndcg_cut``, ranx ``ndcg``).

DCG sums ``1 / log2(rank + 1)`` over the relevant hits in the top ``k``; the
ideal DCG puts ``min(k, n_relevant)`` relevant units first. 0.0 when the
chunking holds no relevant unit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from evalkit.scoring.ir.checks import check_k, check_n_relevant, top
from evalkit.scoring.ir.metric import Column, Metric
from evalkit.scoring.ir.returned import Returned

__all__ = ["METRICS", "ndcg_at_k", "ndcg_matrix"]


def _discount(rank: int) -> float:
    """Log2 discount of a 1-based rank."""
    return 1.0 / math.log2(rank + 1)


def ndcg_at_k(rel: Sequence[bool], k: int, n_relevant: int) -> float:
    """nDCG@k of one ranked list whose chunking holds ``n_relevant`` relevant units."""
    k = check_k(k)
    n_relevant = check_n_relevant(rel, n_relevant)
    if n_relevant == 0:
        return 0.0
    dcg = sum(_discount(rank) for rank, flag in enumerate(top(rel, k), start=1) if flag)
    ideal = sum(_discount(rank) for rank in range(1, min(k, n_relevant) + 1))
    return dcg / ideal


def ndcg_matrix(r: Returned) -> np.ndarray:
    """float (n_q,): :func:`ndcg_at_k` of every returned list."""
    discount = 1.0 / np.log2(np.maximum(r.position, 1) + 1.0)  # position 0 (not returned) is masked out below
    dcg = np.where(r.relevant, discount, 0.0).sum(axis=1)
    ideal_discounts = np.concatenate([[0.0], np.cumsum(1.0 / np.log2(np.arange(2, r.k + 2)))])
    idcg = ideal_discounts[np.minimum(r.n_relevant, r.k)]
    return np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1.0), 0.0)


METRICS = (
    Metric(
        "ndcg",
        lambda j, k: ndcg_at_k(j.rel, k, j.n_relevant),
        ndcg_matrix,
        Column("ndcg", "nDCG@k", True, "proportion", "nDCG@k with binary gains and a log2 discount."),
        order=70,
    ),
)
