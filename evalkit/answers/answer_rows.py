"""One answer row's columns, for every experiment that answers (the answer check and the position experiment).

A sent request's answer becomes the same columns wherever it was asked: what came back (text, stop reason,
usage, timing, the load it was timed under, what it cost) and how it scores (:func:`evalkit.scoring.answers.
score_answer`: one correctness rule, one F1 rule, NaN on an unanswerable question). An answer that stopped on
an overflow or an error is recorded and not scored.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from evalkit.answers.generation.request import UNCACHED_STOPS
from evalkit.cost.model import TokenUsage, call_cost
from evalkit.cost.prices import ModelPrice
from evalkit.records import Answer, Question
from evalkit.scoring.answers import score_answer

SCORE_COLUMNS = ("correct", "exact", "contains", "f1", "refused", "citations_valid", "quotes_valid")
"""Score columns of an answer row (NA / NaN where the answer was not scored)."""


def answer_cost(price: ModelPrice | None, answer: Answer) -> float:
    """Dollars the answer cost when it was generated (a cache hit costs nothing now); NaN when unpriced."""
    if price is None:
        return math.nan
    usage = answer.usage
    tokens = TokenUsage(usage.input_tokens, usage.output_tokens, usage.cache_creation_input_tokens,
                        usage.cache_read_input_tokens, estimated=usage.estimated)  # fmt: skip
    return call_cost(tokens, price, batch=answer.backend.endswith("-batch")).usd


def sent_columns(answer: Answer, price: ModelPrice | None) -> dict[str, Any]:
    """What came back for a sent request, whether or not it can be scored."""
    usage = answer.usage
    return {
        "sent": True,
        "answer": answer.text,
        "stop_reason": answer.stop_reason,
        "truncated": answer.truncated,
        "overflow": answer.stop_reason == "overflow",
        "cached": answer.cached,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "usage_estimated": usage.estimated,
        "first_token_s": math.nan if answer.first_token_s is None else answer.first_token_s,
        "in_flight": math.nan if answer.in_flight is None else answer.in_flight,
        "cost_usd": answer_cost(price, answer),
        "backend": answer.backend,
    }


def score_columns(
    question: Question,
    answer: Answer,
    refusals: Sequence[str],
    provided_doc_ids: Collection[str],
    documents: Mapping[str, str],
) -> dict[str, Any]:
    """The answer's scores; empty for an answer that stopped on an overflow or an error (not scored)."""
    if answer.stop_reason in UNCACHED_STOPS:
        return {}
    score = score_answer(question, answer.text, refusals, provided_doc_ids, documents)
    return {
        "correct": score.correct,
        "exact": score.exact,
        "contains": score.contains,
        "f1": score.f1,
        "refused": score.refused,
        "citations_valid": score.citations_valid,
        "quotes_valid": score.quotes_valid,
    }
