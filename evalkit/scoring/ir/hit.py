"""hit@k: did the top k bring any relevant unit? (ranx ``hit_rate``, trec_eval ``success``).

For evidence mode ``any`` this is also evalkit's headline ``recall@k`` (one
relevant unit holds an answer); multi-hop recall is in :mod:`.coverage`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from evalkit.scoring.ir.checks import top
from evalkit.scoring.ir.metric import Column, Metric
from evalkit.scoring.ir.returned import Returned

__all__ = ["METRICS", "hit_at_k", "hit_matrix"]


def hit_at_k(rel: Sequence[bool], k: int) -> float:
    """1.0 if any of the top ``k`` hits is relevant, else 0.0."""
    return 1.0 if any(top(rel, k)) else 0.0


def hit_matrix(r: Returned) -> np.ndarray:
    """float (n_q,): :func:`hit_at_k` of every returned list."""
    return (r.n_hits > 0).astype(np.float64)


METRICS = (
    Metric(
        "hit",
        lambda j, k: hit_at_k(j.rel, k),
        hit_matrix,
        Column("hit", "hit@k", True, "proportion", "1 if any of the top k returned units is relevant, else 0."),
        order=20,
    ),
)
