"""Context precision@k: average precision over the top k, as ragas defines it.

``sum(precision@i * rel_i for i <= k) / (relevant hits in the top k)``; 0.0
when the top k holds nothing relevant. Unlike trec_eval's AP the divisor is
the number of relevant hits *retrieved*, not the qrels size.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from evalkit.scoring.ir.checks import top
from evalkit.scoring.ir.metric import Column, Metric
from evalkit.scoring.ir.returned import Returned

__all__ = ["METRICS", "context_precision_at_k", "context_precision_matrix"]


def context_precision_at_k(rel: Sequence[bool], k: int) -> float:
    """Average precision over the top ``k`` (ragas' context precision)."""
    total, found = 0.0, 0
    for rank, flag in enumerate(top(rel, k), start=1):
        if flag:
            found += 1
            total += found / rank
    return total / found if found else 0.0


def context_precision_matrix(r: Returned) -> np.ndarray:
    """float (n_q,): :func:`context_precision_at_k` of every returned list."""
    relevant, n_hits = r.relevant, r.n_hits
    precision_at_rank = np.cumsum(relevant, axis=1) / np.maximum(r.position, 1)
    return np.where(n_hits > 0, (precision_at_rank * relevant).sum(axis=1) / np.maximum(n_hits, 1), 0.0)


METRICS = (
    Metric(
        "context_precision",
        lambda j, k: context_precision_at_k(j.rel, k),
        context_precision_matrix,
        Column(
            "context_precision", "context precision@k", True, "proportion",
            "Average precision over the top k as ragas defines it (mean precision@i at the relevant ranks).",
        ),
        order=50,
    ),
)  # fmt: skip
