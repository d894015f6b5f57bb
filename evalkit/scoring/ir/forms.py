"""Each metric's two forms under one name: the dispatch table of the registry (pure).

Names are those of the result columns the sweep writes (``recall``, ``hit``,
``precision``, ``recall_trec``, ``context_precision``, ``mrr``, ``ndcg``,
``zero_hit``) plus ``span_recall`` (multi-hop coverage alone, no column).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from evalkit.records import EvidenceMode
from evalkit.scoring.ir.context_precision import context_precision_at_k, context_precision_matrix
from evalkit.scoring.ir.coverage import (
    answer_recall_at_k,
    answer_recall_matrix,
    covered_at_k,
    span_recall_at_k,
    span_recall_matrix,
)
from evalkit.scoring.ir.hit import hit_at_k, hit_matrix
from evalkit.scoring.ir.ndcg import ndcg_at_k, ndcg_matrix
from evalkit.scoring.ir.precision import precision_at_k, precision_matrix, recall_at_k, recall_trec_matrix
from evalkit.scoring.ir.reciprocal_rank import reciprocal_rank, reciprocal_rank_matrix
from evalkit.scoring.ir.returned import Returned
from evalkit.scoring.ir.zero_hit import zero_hit_at_k, zero_hit_matrix

__all__ = ["FORMS", "JudgedRanking", "MetricForms"]


@dataclass(frozen=True)
class JudgedRanking:
    """One question's ranked list once judged: everything a per-question form needs."""

    rel: tuple[bool, ...]
    """Relevance of the hits returned, best first (after threshold filtering)."""
    n_relevant: int
    """Relevant units in the whole chunking (qrels size)."""
    mode: EvidenceMode = "any"
    """The question's evidence mode."""
    coverage: tuple[frozenset[int], ...] = ()
    """Mode ``all``: evidence indices covered by each prefix of the list."""
    n_spans: int = 0
    """Mode ``all``: number of evidence spans."""


PerQuestion = Callable[[JudgedRanking, int], float]
Vectorised = Callable[[Returned], np.ndarray]


@dataclass(frozen=True)
class MetricForms:
    """A metric's per-question definition and its vectorised form, which must agree."""

    name: str
    """Result column (and ``name@k`` prefix) of the metric."""
    per_question: PerQuestion
    """``fn(judged, k) -> float`` for one question."""
    vectorised: Vectorised
    """``fn(returned) -> array (n_q,)`` for every question of a grid point (k is ``returned.k``)."""


def _recall(j: JudgedRanking, k: int) -> float:
    return answer_recall_at_k(j.mode, j.rel, k, j.coverage, j.n_spans)


def _span_recall(j: JudgedRanking, k: int) -> float:
    return span_recall_at_k(covered_at_k(j.coverage, k), j.n_spans)


def _forms(name: str, per_question: PerQuestion, vectorised: Vectorised) -> tuple[str, MetricForms]:
    return name, MetricForms(name, per_question, vectorised)


FORMS: dict[str, MetricForms] = dict(
    (
        _forms("recall", _recall, answer_recall_matrix),
        _forms("hit", lambda j, k: hit_at_k(j.rel, k), hit_matrix),
        _forms("recall_trec", lambda j, k: recall_at_k(j.rel, k, j.n_relevant), recall_trec_matrix),
        _forms("precision", lambda j, k: precision_at_k(j.rel, k), precision_matrix),
        _forms("context_precision", lambda j, k: context_precision_at_k(j.rel, k), context_precision_matrix),
        _forms("mrr", lambda j, k: reciprocal_rank(j.rel, k), reciprocal_rank_matrix),
        _forms("ndcg", lambda j, k: ndcg_at_k(j.rel, k, j.n_relevant), ndcg_matrix),
        _forms("zero_hit", lambda j, k: float(zero_hit_at_k(j.rel, k)), zero_hit_matrix),
        _forms("span_recall", _span_recall, span_recall_matrix),
    )
)
"""Metric name to its two forms. ``recall`` is evalkit's answer recall; ``recall_trec`` is trec_eval's."""
