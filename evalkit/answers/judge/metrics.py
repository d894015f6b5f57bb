"""The judge metrics: ragas' "collections" metrics that need only an LLM, no embeddings, by name.

ragas is imported inside each builder, so naming or validating a metric imports nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_METRIC = "answer_correctness"


@dataclass(frozen=True)
class MetricSpec:
    """How to build one ragas metric and what a row costs in judge calls."""

    build: Callable[[Any], Any]
    uses_question: bool
    calls_per_row: int
    """Judge calls one row costs when every call succeeds (for dry runs and tests)."""


def _answer_correctness(llm: Any) -> Any:
    from ragas.metrics.collections import AnswerCorrectness

    # Factuality only: statement-level TP/FP/FN F1. The similarity half needs embeddings.
    return AnswerCorrectness(llm=llm, weights=[1.0, 0.0])


def _answer_accuracy(llm: Any) -> Any:
    from ragas.metrics.collections import AnswerAccuracy

    # One attempt per judge: ragas' retries would re-send silently and hide the cost.
    return AnswerAccuracy(llm=llm, max_retries=1)


def _factual_correctness(llm: Any) -> Any:
    from ragas.metrics.collections import FactualCorrectness

    return FactualCorrectness(llm=llm, mode="f1")


JUDGE_METRICS: Mapping[str, MetricSpec] = {
    "answer_correctness": MetricSpec(_answer_correctness, uses_question=True, calls_per_row=3),
    "answer_accuracy": MetricSpec(_answer_accuracy, uses_question=True, calls_per_row=2),
    "factual_correctness": MetricSpec(_factual_correctness, uses_question=False, calls_per_row=4),
}
"""ragas LLM metrics that need no embeddings, by name.

- ``answer_correctness``: ragas ``AnswerCorrectness`` with weights ``[1, 0]``: statements of answer and
  reference, classified TP/FP/FN; F1. 3 calls per row.
- ``answer_accuracy``: ragas ``AnswerAccuracy`` (NVIDIA's two judges rate 0/2/4, averaged, /4). 2 calls.
- ``factual_correctness``: ragas ``FactualCorrectness`` (claims checked by NLI both ways; F1, 2 decimals).
  4 calls.
"""


def metric_spec(metric: str) -> MetricSpec:
    """The metric of that name; ``ValueError`` lists the known ones."""
    try:
        return JUDGE_METRICS[metric]
    except KeyError:
        raise ValueError(f"unknown judge metric {metric!r}; known: {', '.join(sorted(JUDGE_METRICS))}") from None
