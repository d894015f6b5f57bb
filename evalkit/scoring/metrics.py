"""Retrieval metrics for one question (pure; trec_eval-compatible).

Every metric is a small function of what one question's ranked list looked
like once judged: ``rel``, the relevance of the hits actually returned (best
first, after any threshold filtering), ``n_relevant``, the number of relevant
units in the whole chunking (the qrels size), and for multi-hop questions
the evidence spans covered by each prefix of the list (see
:func:`evalkit.chunking.relevance.cumulative_coverage`). Aggregation over questions
lives in ``stats.py``; per-question values are what is kept.

Conventions (those of trec_eval and ranx, checked against ranx in
``tests/test_metrics_reference.py``):

- ``k >= 1`` always; a list shorter than ``k`` is not padded or rewarded
  (precision@k still divides by ``k``).
- A question without any relevant unit scores 0.0 on every ranking metric,
  as in ranx. trec_eval leaves such queries out of its averages; evalkit
  keeps them, because an answerable question whose answer no chunk holds is
  a real failure of that chunking.
- Binary gains; nDCG uses the log2 discount of Järvelin and Kekäläinen.

Metric names look like ranx's (``ndcg@10``); :func:`parse_metric` splits
them and :data:`METRICS` dispatches them on a :class:`JudgedRanking`.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from evalkit.records import EvidenceMode

__all__ = [
    "METRICS",
    "JudgedRanking",
    "answer_recall_at_k",
    "context_precision_at_k",
    "covered_at_k",
    "hit_at_k",
    "ndcg_at_k",
    "parse_metric",
    "precision_at_k",
    "recall_at_k",
    "reciprocal_rank",
    "score_metric",
    "span_recall_at_k",
    "zero_hit",
]


# Checks ---------------------------------------------------------------------


def _check_k(k: int) -> int:
    """Return ``k`` as an int: TypeError unless an integer, ValueError unless >= 1."""
    if isinstance(k, bool):
        raise TypeError(f"k must be an integer, got {k!r}")
    k = operator.index(k)  # TypeError for floats and strings
    if k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k}")
    return k


def _top(rel: Sequence[bool], k: int) -> list[bool]:
    """The first ``k`` relevance flags as bools (``k`` checked)."""
    return [bool(flag) for flag in rel[: _check_k(k)]]


def _check_n_relevant(rel: Sequence[bool], n_relevant: int) -> int:
    """Raise when ``n_relevant`` cannot be the qrels size behind ``rel``.

    More relevant hits than relevant units means duplicated units in the
    ranking (e.g. children of one parent returned twice): a caller bug that
    would push recall above 1.
    """
    n_relevant = operator.index(n_relevant)
    if n_relevant < 0:
        raise ValueError(f"n_relevant must be >= 0, got {n_relevant}")
    found = sum(bool(flag) for flag in rel)
    if found > n_relevant:
        raise ValueError(f"{found} relevant hits but only {n_relevant} relevant units: is a unit ranked twice?")
    return n_relevant


# Ranking metrics --------------------------------------------------------------


def hit_at_k(rel: Sequence[bool], k: int) -> float:
    """1.0 if any of the top ``k`` hits is relevant, else 0.0 (ranx ``hit_rate``, trec_eval ``success``)."""
    return 1.0 if any(_top(rel, k)) else 0.0


def recall_at_k(rel: Sequence[bool], k: int, n_relevant: int) -> float:
    """Relevant hits in the top ``k`` divided by ``n_relevant`` (trec_eval / ranx ``recall``).

    0.0 when ``n_relevant == 0``. This is the IR recall over units; evalkit's
    headline ``recall@k`` is :func:`answer_recall_at_k`.
    """
    n_relevant = _check_n_relevant(rel, n_relevant)
    found = sum(_top(rel, k))
    return found / n_relevant if n_relevant else 0.0


def precision_at_k(rel: Sequence[bool], k: int) -> float:
    """Relevant hits in the top ``k`` divided by ``k`` (trec_eval ``P_k``, ranx ``precision``).

    The divisor is ``k`` even when fewer than ``k`` hits were returned: a
    short list is not rewarded.
    """
    return sum(_top(rel, k)) / _check_k(k)


def context_precision_at_k(rel: Sequence[bool], k: int) -> float:
    """Average precision over the top ``k``, as ragas defines context precision.

    ``sum(precision@i * rel_i for i <= k) / (relevant hits in the top k)``;
    0.0 when the top ``k`` holds nothing relevant. Unlike trec_eval's AP the
    divisor is the number of relevant hits *retrieved*, not ``n_relevant``.
    """
    total, found = 0.0, 0
    for rank, flag in enumerate(_top(rel, k), start=1):
        if flag:
            found += 1
            total += found / rank
    return total / found if found else 0.0


def reciprocal_rank(rel: Sequence[bool], k: int) -> float:
    """1 / rank of the first relevant hit within the top ``k``, else 0.0 (one question's share of MRR@k)."""
    for rank, flag in enumerate(_top(rel, k), start=1):
        if flag:
            return 1.0 / rank
    return 0.0


def _discount(rank: int) -> float:
    """Log2 discount of a 1-based rank."""
    return 1.0 / math.log2(rank + 1)


def ndcg_at_k(rel: Sequence[bool], k: int, n_relevant: int) -> float:
    """nDCG@k with binary gains and a log2 discount (trec_eval ``ndcg_cut``, ranx ``ndcg``).

    DCG sums ``1 / log2(rank + 1)`` over the relevant hits in the top ``k``;
    the ideal DCG puts ``min(k, n_relevant)`` relevant units first. 0.0 when
    ``n_relevant == 0``.
    """
    k = _check_k(k)
    n_relevant = _check_n_relevant(rel, n_relevant)
    if n_relevant == 0:
        return 0.0
    dcg = sum(_discount(rank) for rank, flag in enumerate(_top(rel, k), start=1) if flag)
    ideal = sum(_discount(rank) for rank in range(1, min(k, n_relevant) + 1))
    return dcg / ideal


# Multi-hop coverage -----------------------------------------------------------


def covered_at_k(coverage: Sequence[frozenset[int]], k: int) -> frozenset[int]:
    """Spans covered by the union of the top ``k`` hits, from per-prefix coverage.

    ``coverage[i]`` covers the top ``i + 1`` hits (as
    :func:`evalkit.chunking.relevance.cumulative_coverage` returns it); a ``k`` past
    the end of the list takes the whole list.
    """
    k = _check_k(k)
    return coverage[min(k, len(coverage)) - 1] if coverage else frozenset()


def span_recall_at_k(covered: frozenset[int], n_spans: int) -> float:
    """Share of a multi-hop question's evidence spans covered by the union of the top-k hits.

    ``covered`` is the set of evidence indices covered (see
    :func:`covered_at_k`); 0.0 when ``n_spans == 0``.
    """
    n_spans = operator.index(n_spans)
    if n_spans < 0:
        raise ValueError(f"n_spans must be >= 0, got {n_spans}")
    if any(not 0 <= j < n_spans for j in covered):
        raise ValueError(f"covered indices {sorted(covered)} out of range for {n_spans} spans")
    return len(covered) / n_spans if n_spans else 0.0


def answer_recall_at_k(
    mode: EvidenceMode,
    rel: Sequence[bool],
    k: int,
    coverage: Sequence[frozenset[int]] = (),
    n_spans: int = 0,
) -> float:
    """evalkit's ``recall@k``: did the top ``k`` bring the answer's evidence?

    - mode ``any``: :func:`hit_at_k` (one relevant unit holds an answer);
    - mode ``all`` (multi-hop): :func:`span_recall_at_k` over the spans
      covered by the union of the top ``k`` hits (``coverage`` is per prefix,
      one entry per hit in ``rel``; ``n_spans`` is the number of evidence
      spans);
    - mode ``none``: ValueError. An unanswerable question has nothing to
      recall; score it with :func:`zero_hit` instead.

    This differs from trec_eval's recall (:func:`recall_at_k`), which
    divides by every relevant unit of the chunking.
    """
    k = _check_k(k)
    if mode == "any":
        return hit_at_k(rel, k)
    if mode == "all":
        if len(coverage) != len(rel):
            raise ValueError(
                f"coverage has {len(coverage)} prefixes for {len(rel)} hits; "
                "build it with relevance.cumulative_coverage"
            )
        return span_recall_at_k(covered_at_k(coverage, k), n_spans)
    raise ValueError(f"recall is undefined for evidence mode {mode!r}; use zero_hit")


# Abstention -----------------------------------------------------------------


def zero_hit(best_score: float | None, threshold: float) -> bool:
    """True when nothing would reach the model: no hit, or the best score is strictly below ``threshold``.

    Right for an unanswerable question (a correct abstention), a miss for an
    answerable one. A score equal to the threshold passes.
    """
    if math.isnan(threshold):
        raise ValueError("threshold is NaN")
    if best_score is None:
        return True
    if math.isnan(best_score):
        raise ValueError("best_score is NaN")
    return best_score < threshold


# Dispatch ---------------------------------------------------------------------


@dataclass(frozen=True)
class JudgedRanking:
    """One question's ranked list once judged: everything a metric needs."""

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


MetricFn = Callable[[JudgedRanking, int], float]

METRICS: dict[str, MetricFn] = {
    "recall": lambda j, k: answer_recall_at_k(j.mode, j.rel, k, j.coverage, j.n_spans),
    "hit": lambda j, k: hit_at_k(j.rel, k),
    "ir_recall": lambda j, k: recall_at_k(j.rel, k, j.n_relevant),
    "precision": lambda j, k: precision_at_k(j.rel, k),
    "context_precision": lambda j, k: context_precision_at_k(j.rel, k),
    "mrr": lambda j, k: reciprocal_rank(j.rel, k),
    "ndcg": lambda j, k: ndcg_at_k(j.rel, k, j.n_relevant),
    "span_recall": lambda j, k: span_recall_at_k(covered_at_k(j.coverage, k), j.n_spans),
}
"""Metric name (without ``@k``) to ``fn(judged, k)``. ``recall`` is evalkit's
answer recall (:func:`answer_recall_at_k`); ``ir_recall`` is trec_eval's."""

_NAME = re.compile(r"(?P<name>[a-z_]+)@(?P<k>[0-9]+)")


def parse_metric(metric: str) -> tuple[str, int]:
    """Split ``"ndcg@10"`` into ``("ndcg", 10)``; the name must be in :data:`METRICS` and ``k >= 1``."""
    match = _NAME.fullmatch(metric.strip())
    if match is None:
        raise ValueError(f"metric {metric!r} is not of the form name@k, e.g. 'ndcg@10'")
    name, k = match["name"], int(match["k"])
    if name not in METRICS:
        raise ValueError(f"unknown metric {name!r}; known: {', '.join(sorted(METRICS))}")
    return name, _check_k(k)


def score_metric(metric: str, judged: JudgedRanking) -> float:
    """Value of ``metric`` (e.g. ``"ndcg@10"``) for one judged ranking."""
    name, k = parse_metric(metric)
    return METRICS[name](judged, k)
