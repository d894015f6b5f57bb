"""Sizing the subset to a time budget from planned tokens and the model's speeds (pure).

Questions are taken in a seeded order that keeps the subset stratified as it
grows: answerable and unanswerable questions each in a seeded round-robin over
languages, merged so that unanswerable questions make up ``unanswerable_share``
of every prefix. Each question is planned in turn and kept while the planned
time of everything kept stays within ``time_budget_s``; the first question that
would cross it ends the subset. A larger budget therefore keeps every question
a smaller one chose (and every cached answer stays useful), and the subset
depends on the configured speeds only, never on how busy the machine is.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from evalkit.answers.position.items import _stable_int
from evalkit.answers.position.settings import PositionSettings, SubsetSpec
from evalkit.records import Question


@dataclass(frozen=True)
class Sized:
    """What fits the budget: the questions (in the given order) and their planned seconds."""

    questions: tuple[Question, ...]
    seconds: float
    """Planned seconds of the kept questions' distinct requests."""
    next_seconds: float | None
    """Planned seconds of the first question left out (None: none was left out)."""
    candidates: int
    """Questions that could have been asked."""


def _round_robin(questions: Sequence[Question], rng: random.Random) -> list[Question]:
    """Questions shuffled within each language, then interleaved one language at a time (languages sorted)."""
    strata: dict[str, list[Question]] = {}
    for question in questions:
        strata.setdefault(question.lang, []).append(question)
    for lang in sorted(strata):
        rng.shuffle(strata[lang])
    out: list[Question] = []
    for i in range(max((len(v) for v in strata.values()), default=0)):
        out.extend(strata[lang][i] for lang in sorted(strata) if i < len(strata[lang]))
    return out


def candidate_order(questions: Sequence[Question], spec: SubsetSpec) -> tuple[Question, ...]:
    """Every question in the seeded, stratified order the budget takes them in."""
    rng = random.Random(_stable_int("position-budget-order", spec.seed))
    answerable = _round_robin([q for q in questions if q.answerable], rng)
    unanswerable = _round_robin([q for q in questions if not q.answerable], rng)
    out: list[Question] = []
    n_unanswerable = 0
    while answerable or unanswerable:
        # The (i+1)-th question is unanswerable when that keeps the share at floor((i+1) * share + 1/2).
        wanted = math.floor((len(out) + 1) * spec.unanswerable_share + 0.5)
        take_unanswerable = unanswerable and (n_unanswerable < wanted or not answerable)
        source = unanswerable if take_unanswerable else answerable
        out.append(source.pop(0))
        n_unanswerable += bool(take_unanswerable)
    return tuple(out)


FORCED_ANSWER_SECONDS = 0.3
"""Planned seconds to score one forced gold answer with ``position.loglik``, its prompt already read by its own
generation (measured on 3 prompts of ~800 tokens, 2 cores: 0.12, 0.53 and 0.23 s for gold answers of 1, 9 and
3 tokens, against 6.0-6.3 s when the prompt was read again)."""


def planned_seconds(prompt_tokens: int, n_requests: int, settings: PositionSettings) -> float:
    """Seconds a local model takes for ``n_requests`` distinct requests of ``prompt_tokens`` in all.

    With ``position.loglik`` each request adds one forced gold answer scored on the prompt its generation just
    read (:data:`FORCED_ANSWER_SECONDS`). Unanswerable rows are not scored, so this is an upper bound on sets
    with unanswerable questions.
    """
    output = n_requests * settings.expected_output_tokens
    scoring = n_requests * FORCED_ANSWER_SECONDS if settings.loglik else 0.0
    return prompt_tokens / settings.prompt_tokens_per_s + output / settings.output_tokens_per_s + scoring


def fit_budget(
    order: Sequence[Question],
    cost_of: Callable[[Question], tuple[int, int]],
    settings: PositionSettings,
) -> Sized:
    """The longest prefix of ``order`` whose planned time fits ``settings.time_budget_s`` (and ``subset.size``).

    ``cost_of(question)`` gives the question's distinct requests' prompt tokens and their number.
    """
    budget = math.inf if settings.time_budget_s is None else settings.time_budget_s
    cap = len(order) if settings.subset.size is None else settings.subset.size
    kept: list[Question] = []
    total = 0.0
    for question in order:
        if len(kept) >= cap:
            return Sized(tuple(kept), total, None, len(order))
        tokens, requests = cost_of(question)
        seconds = planned_seconds(tokens, requests, settings)
        if total + seconds > budget:
            return Sized(tuple(kept), total, seconds, len(order))
        kept.append(question)
        total += seconds
    return Sized(tuple(kept), total, None, len(order))


def subsample_ids(settings: PositionSettings, asked: Sequence[Question]) -> frozenset[str] | None:
    """The questions ``position.subsample_arms`` are asked on: the first ``subsample_size`` of the seeded,
    stratified order, so growing the run never changes which questions the subsample holds."""
    if settings.subsample_size is None or not settings.subsample_arms:
        return None
    return frozenset(q.id for q in candidate_order(asked, settings.subset)[: settings.subsample_size])
