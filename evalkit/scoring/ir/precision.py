"""Counting metrics over the top k: precision@k and trec_eval's recall (``recall_trec``).

Both count the relevant hits in the top ``k``; precision divides by ``k``,
``recall_trec`` by every relevant unit of the chunking (the qrels size). The
latter is not evalkit's headline recall@k (see :mod:`.coverage`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from evalkit.scoring.ir.checks import check_k, check_n_relevant, top
from evalkit.scoring.ir.metric import Column, Metric
from evalkit.scoring.ir.returned import Returned

__all__ = ["METRICS", "precision_at_k", "precision_matrix", "recall_at_k", "recall_trec_matrix"]


def precision_at_k(rel: Sequence[bool], k: int) -> float:
    """Relevant hits in the top ``k`` divided by ``k`` (trec_eval ``P_k``, ranx ``precision``).

    The divisor is ``k`` even when fewer than ``k`` hits were returned: a
    short list is not rewarded.
    """
    return sum(top(rel, k)) / check_k(k)


def precision_matrix(r: Returned) -> np.ndarray:
    """float (n_q,): :func:`precision_at_k` of every returned list."""
    return r.n_hits / r.k


def recall_at_k(rel: Sequence[bool], k: int, n_relevant: int) -> float:
    """Relevant hits in the top ``k`` divided by ``n_relevant`` (trec_eval / ranx ``recall``).

    0.0 when ``n_relevant == 0``. This is the IR recall over units; evalkit's
    headline ``recall@k`` is :func:`evalkit.scoring.ir.coverage.answer_recall_at_k`.
    """
    n_relevant = check_n_relevant(rel, n_relevant)
    found = sum(top(rel, k))
    return found / n_relevant if n_relevant else 0.0


def recall_trec_matrix(r: Returned) -> np.ndarray:
    """float (n_q,): :func:`recall_at_k` of every returned list."""
    return np.where(r.n_relevant > 0, r.n_hits / np.maximum(r.n_relevant, 1), 0.0)


METRICS = (
    Metric(
        "precision",
        lambda j, k: precision_at_k(j.rel, k),
        precision_matrix,
        Column(
            "precision", "precision@k", True, "proportion",
            "Relevant units in the top k divided by k (a short list is not rewarded).",
        ),
        order=30,
    ),
    Metric(
        "recall_trec",
        lambda j, k: recall_at_k(j.rel, k, j.n_relevant),
        recall_trec_matrix,
        Column(
            "recall_trec", "recall_trec@k", True, "proportion",
            "trec_eval recall: relevant units in the top k divided by every relevant unit of the chunking.",
        ),
        order=40,
    ),
)  # fmt: skip
