"""Retrieval metrics for one question (pure; trec_eval-compatible): the per-question forms, by name.

The definitions live one family per module in :mod:`evalkit.scoring.ir`
(beside their vectorised forms); this module names the per-question ones
(from :data:`evalkit.scoring.ir.forms.FORMS`) and dispatches ``name@k`` strings, ranx style (``ndcg@10``).

Every metric is a small function of what one question's ranked list looked
like once judged: ``rel``, the relevance of the hits actually returned (best
first, after any threshold filtering), ``n_relevant``, the number of relevant
units in the whole chunking (the qrels size), and for multi-hop questions
the evidence spans covered by each prefix of the list (see
:func:`evalkit.chunking.relevance.cumulative_coverage`).

Conventions (those of trec_eval and ranx, checked against ranx in
``tests/test_metrics_reference.py``):

- ``k >= 1`` always; a list shorter than ``k`` is not padded or rewarded
  (precision@k still divides by ``k``).
- A question without any relevant unit scores 0.0 on every ranking metric,
  as in ranx. trec_eval leaves such queries out of its averages; evalkit
  keeps them, because an answerable question whose answer no chunk holds is
  a real failure of that chunking.
- Binary gains; nDCG uses the log2 discount of Järvelin and Kekäläinen.
"""

from __future__ import annotations

import re

from evalkit.scoring.ir.checks import check_k
from evalkit.scoring.ir.forms import FORMS, JudgedRanking, PerQuestion

__all__ = ["METRICS", "parse_metric", "score_metric"]

METRICS: dict[str, PerQuestion] = {name: forms.per_question for name, forms in FORMS.items()}
"""Metric name (without ``@k``) to ``fn(judged, k)``. ``recall`` is evalkit's
answer recall (:func:`evalkit.scoring.ir.coverage.answer_recall_at_k`); ``recall_trec`` is trec_eval's."""

_NAME = re.compile(r"(?P<name>[a-z_]+)@(?P<k>[0-9]+)")


def parse_metric(metric: str) -> tuple[str, int]:
    """Split ``"ndcg@10"`` into ``("ndcg", 10)``; the name must be in :data:`METRICS` and ``k >= 1``."""
    match = _NAME.fullmatch(metric.strip())
    if match is None:
        raise ValueError(f"metric {metric!r} is not of the form name@k, e.g. 'ndcg@10'")
    name, k = match["name"], int(match["k"])
    if name not in METRICS:
        raise ValueError(f"unknown metric {name!r}; known: {', '.join(sorted(METRICS))}")
    return name, check_k(k)


def score_metric(metric: str, judged: JudgedRanking) -> float:
    """Value of ``metric`` (e.g. ``"ndcg@10"``) for one judged ranking."""
    name, k = parse_metric(metric)
    return METRICS[name](judged, k)
