"""The plan: every context assembled under the budget before anything is sent (pure)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

from evalkit.answers.context import (
    DOES_NOT_FIT,
    AssembledContext,
    Budget,
    ContextItem,
    Overflow,
    Placement,
    assemble,
)
from evalkit.answers.generation.request import GenerationRequest
from evalkit.answers.position.items import arm_items, shuffle_seed
from evalkit.answers.position.placing import PositionBucket, block_bucket, char_bucket, gold_block_index, place_gold
from evalkit.answers.position.settings import CLOSED_BOOK, SHUFFLE, Arm, PositionSettings
from evalkit.answers.requests import (
    CLOSED_BOOK_SYSTEM,
    RequestSpec,
    build_context_request,
    estimate_request_tokens,
    fixed_text,
)
from evalkit.cost.prices import ModelPrice
from evalkit.cost.tokens import estimate_tokens
from evalkit.records import Document, Question

__all__ = ["CLOSED_BOOK_SYSTEM", "PlannedAnswer", "PositionPlan", "QuestionPlanner", "RequestSpec", "plan_position"]


@dataclass(frozen=True)
class PlannedAnswer:
    """One (question, arm, placement, repeat): its assembled context and what it will cost."""

    question_id: str
    lang: str
    answerable: bool
    arm: str
    """Arm name (``stuff``, ``retrieve-5``, ...)."""
    placement: str
    """Placement name (``shuffle``, ``gold_at:head``, ...)."""
    repeat: int
    """0-based repeat; always 0 for a deterministic placement."""
    seed: int
    """Seed handed to :func:`evalkit.answers.context.assemble` (used by ``shuffle``)."""
    items: tuple[ContextItem, ...]
    """Items in the context, in placed order."""
    n_offered: int
    """Items the arm offered before budgeting."""
    n_dropped: int
    """Items left out for the budget (retrieval arms only; ``stuff`` never drops)."""
    gold_bucket: PositionBucket
    """Third of the context text holding the gold block's midpoint; ``only`` (a single block) or ``none``."""
    gold_offset: int | None
    """Where the gold block starts in the context text."""
    gold_block: int | None
    """Index of the gold block among the context's blocks (0-based), or None."""
    gold_block_bucket: PositionBucket
    """Third of the block list holding the gold block (:func:`~evalkit.answers.position.placing.block_bucket`)."""
    context_chars: int
    """Length of the context text."""
    fits: bool
    """False: not sent (see ``reason``)."""
    reason: str
    """Empty, :data:`evalkit.answers.context.DOES_NOT_FIT` or :data:`evalkit.answers.context.PROMPT_TOO_LONG`."""
    prompt_tokens: int
    """Planned prompt tokens of the request (0 when not sent)."""
    tokens_needed: int
    """System + context + question tokens the assembled prompt needs (local estimate): what a ``does not fit``
    context would have taken."""
    tokens_estimated: bool
    """``prompt_tokens`` is a local estimate rather than the model's own count."""

    @property
    def row_key(self) -> str:
        """Identity of the row across runs: question, arm, placement, repeat."""
        return f"{self.question_id}|{self.arm}|{self.placement}|{self.repeat}"

    @property
    def context_key(self) -> tuple[str, tuple[str, ...]]:
        """Question and placed unit ids: equal keys make equal requests (sent once)."""
        return self.question_id, tuple(item.unit_id for item in self.items)


@dataclass(frozen=True, eq=False)
class PositionPlan:
    """Every planned answer of the experiment, with what is needed to send and score it."""

    settings: PositionSettings
    chunking: str
    """Chunking whose pool fed the retrieval arms."""
    budget: Budget
    request_spec: RequestSpec
    tokenizer_family: str
    """Family of the local token estimates."""
    questions: tuple[Question, ...]
    """The subset, in labelled-set order."""
    documents: Mapping[str, Document]
    """Every document of the labelled set by id (scoring checks quotes against them)."""
    entries: tuple[PlannedAnswer, ...]
    skipped_no_gold: int
    """Deterministic-placement contexts skipped because they held no gold item to place."""
    price: ModelPrice | None = None
    """The model's price (conf/pricing), or None when unpriced."""
    sizing: str = ""
    """How the question count was chosen (time budget, powered pilot or re-plan), as printed; '' for a fixed subset."""
    unclean: tuple[tuple[str, str, str], ...] = ()
    """(question id, arm, reason) of every question skipped on a controlled arm for want of a clean placement."""
    cluster_by: str = "document"
    """The unit every interval of the summary resamples (the sweep's ``stats.cluster_by``)."""

    def question(self, question_id: str) -> Question:
        """A question of the subset by id."""
        return self._questions[question_id]

    @cached_property
    def _questions(self) -> dict[str, Question]:
        return {q.id: q for q in self.questions}

    @cached_property
    def doc_texts(self) -> dict[str, str]:
        """Current text of every document by id (what quotes are checked against)."""
        return {doc_id: doc.text for doc_id, doc in self.documents.items()}

    @property
    def to_send(self) -> tuple[PlannedAnswer, ...]:
        return tuple(entry for entry in self.entries if entry.fits)

    @property
    def n_distinct(self) -> int:
        """Requests actually sent at most: identical contexts for one question are sent once."""
        return len({entry.context_key for entry in self.to_send})

    @property
    def prompt_tokens(self) -> int:
        """Planned prompt tokens over distinct requests."""
        seen: dict[tuple[str, tuple[str, ...]], int] = {}
        for entry in self.to_send:
            seen.setdefault(entry.context_key, entry.prompt_tokens)
        return sum(seen.values())

    @property
    def tokens_estimated(self) -> bool:
        return any(entry.tokens_estimated for entry in self.to_send)

    def count(self, reason: str) -> int:
        return sum(1 for entry in self.entries if entry.reason == reason)

    @property
    def n_over_budget(self) -> int:
        """Sent contexts that had to leave items out for the budget."""
        return sum(1 for entry in self.to_send if entry.n_dropped)


@dataclass(frozen=True)
class QuestionEntries:
    """One question's planned answers and what was skipped."""

    entries: tuple[PlannedAnswer, ...]
    skipped_no_gold: int
    """gold_at contexts skipped for holding no gold item."""
    unclean: tuple[tuple[str, str], ...]
    """(arm, reason) of each controlled arm the question has no clean placement on."""


def _overflow(arm: Arm, settings: PositionSettings) -> Overflow:
    """Retrieval drops the lowest-scored items; stuff is all or nothing, or fills the window over a corpus."""
    if arm.kind != "stuff":
        return "drop"
    return "fill" if settings.stuff.scope == "corpus" else "refuse"


def request_for(plan: PositionPlan, entry: PlannedAnswer) -> GenerationRequest:
    """The generation request of a planned answer (rebuilt on demand: contexts are not held twice)."""
    return build_context_request(
        plan.request_spec, plan.question(entry.question_id), entry.items, entry.arm == CLOSED_BOOK
    )


def plan_position(
    settings: PositionSettings,
    questions: Sequence[Question],
    ranked: Mapping[str, Sequence[ContextItem]],
    documents: Mapping[str, Document],
    request_spec: RequestSpec,
    budget: Budget,
    *,
    chunking: str,
    tokenizer_family: str = "generic",
    count_request: Callable[[GenerationRequest], int | None] | None = None,
    price: ModelPrice | None = None,
    subsample: frozenset[str] | None = None,
) -> PositionPlan:
    """Assemble every (question, arm, placement, repeat) context under ``budget``; send nothing.

    ``ranked`` maps a question id to its pool (best first; absent: empty).
    Contexts are budgeted with the local estimate of ``tokenizer_family``
    (deliberately high). Planned prompt tokens of the requests that fit come
    from ``count_request`` (the model's own counter) when given and it
    answers, else from the estimate, and are labelled accordingly. ``subsample``: the questions the
    ``position.subsample_arms`` are asked on (None: every question).
    """
    planner = QuestionPlanner(
        settings, ranked, documents, request_spec, budget, tokenizer_family, count_request, subsample
    )
    entries: list[PlannedAnswer] = []
    unclean: list[tuple[str, str, str]] = []
    skipped = 0
    for question in questions:
        planned = planner.plan(question)
        entries.extend(planned.entries)
        skipped += planned.skipped_no_gold
        unclean.extend((question.id, arm, reason) for arm, reason in planned.unclean)
    return PositionPlan(
        settings=settings,
        chunking=chunking,
        budget=budget,
        request_spec=request_spec,
        tokenizer_family=tokenizer_family,
        questions=tuple(questions),
        documents=documents,
        entries=tuple(entries),
        skipped_no_gold=skipped,
        price=price,
        unclean=tuple(unclean),
    )


@dataclass(frozen=True)
class QuestionPlanner:
    """Plans one question's entries at a time (the time budget grows the subset question by question)."""

    settings: PositionSettings
    ranked: Mapping[str, Sequence[ContextItem]]
    documents: Mapping[str, Document]
    request_spec: RequestSpec
    budget: Budget
    tokenizer_family: str = "generic"
    count_request: Callable[[GenerationRequest], int | None] | None = None
    subsample: frozenset[str] | None = None
    """Questions the subsample arms are asked on; None: every question."""

    @cached_property
    def _count(self) -> Callable[[str], int]:
        family = self.tokenizer_family
        return functools.lru_cache(maxsize=256)(lambda text: estimate_tokens(text, family))

    def plan_all(self, questions: Sequence[Question], *, chunking: str, price: ModelPrice | None) -> PositionPlan:
        """The whole plan of ``questions`` with this planner's settings, pools, budget and counters."""
        return plan_position(
            self.settings,
            questions,
            self.ranked,
            self.documents,
            self.request_spec,
            self.budget,
            chunking=chunking,
            tokenizer_family=self.tokenizer_family,
            count_request=self.count_request,
            price=price,
            subsample=self.subsample,
        )

    def plan(self, question: Question) -> QuestionEntries:
        """The question's entries, the gold_at contexts skipped for holding no gold, and the unclean arms."""
        entries: list[PlannedAnswer] = []
        unclean: list[tuple[str, str]] = []
        skipped = 0
        for arm in self.settings.arms:
            if self.settings.on_subsample(arm) and self.subsample is not None and question.id not in self.subsample:
                continue
            ranked = self.ranked.get(question.id, ())
            offered, reason = arm_items(arm, question, ranked, self.documents, self.settings)
            if reason:
                unclean.append((arm.name, reason))  # never placed dirty: counted and shown instead
                continue
            mine = []
            for placement in self.settings.placements_for(arm):
                planned, n_skipped = self._placement(question, arm, offered, placement)
                mine.extend(planned)
                skipped += n_skipped
            if not mine and self.settings.is_controlled(arm):
                # No gold to place (unanswerable): shuffles of clean distractors still measure refusals.
                mine, _ = self._placement(question, arm, offered, SHUFFLE)
            entries.extend(mine)
        return QuestionEntries(tuple(entries), skipped, tuple(unclean))

    def _placement(
        self, question: Question, arm: Arm, offered: Sequence[ContextItem], placement: Placement
    ) -> tuple[list[PlannedAnswer], int]:
        prompts = self.request_spec.prompts(question.lang)
        fixed = fixed_text(prompts, question)
        overflow = _overflow(arm, self.settings)
        entries: list[PlannedAnswer] = []
        skipped = 0
        for repeat in range(self.settings.repeats_for(placement, arm)):
            seed = shuffle_seed(self.settings.seed, question.id, repeat)
            assembled = assemble(
                prompts["system"], fixed, offered, self.budget, self._count, placement, seed, overflow=overflow
            )
            if arm.kind == "stuff" and question.answerable and assembled.gold_bucket == "none":
                assembled = replace(assembled, fits=False, reason=DOES_NOT_FIT)  # the gold document alone is too long
            if placement.policy == "gold_at":
                if assembled.gold_bucket == "none":
                    skipped += 1  # nothing to place: the prompt would only repeat another placement's
                    continue
                assembled = place_gold(assembled, placement, seed)
            tokens, estimated = 0, False
            if assembled.fits:
                request = build_context_request(
                    self.request_spec, question, assembled.items, closed_book=arm.kind == "closed"
                )
                counted = self.count_request(request) if self.count_request is not None else None
                estimated = counted is None
                tokens = estimate_request_tokens(request, self.tokenizer_family) if counted is None else counted
            key = (arm.name, placement.name, repeat, seed, len(offered))
            entries.append(_planned(question, key, assembled, tokens, estimated))
        return entries, skipped


def _planned(
    question: Question, key: tuple[str, str, int, int, int], assembled: AssembledContext, tokens: int, estimated: bool
) -> PlannedAnswer:
    """A plan entry from its (arm, placement, repeat, seed, items offered) and assembled context."""
    arm, placement, repeat, seed, n_offered = key
    gold_block = gold_block_index(assembled.items, assembled.gold_offset)
    return PlannedAnswer(
        question_id=question.id,
        lang=question.lang,
        answerable=question.answerable,
        arm=arm,
        placement=placement,
        repeat=repeat,
        seed=seed,
        items=assembled.items,
        n_offered=n_offered,
        n_dropped=len(assembled.dropped),
        gold_bucket=char_bucket(assembled),
        gold_offset=assembled.gold_offset,
        gold_block=gold_block,
        gold_block_bucket=block_bucket(gold_block, len(assembled.items)),
        context_chars=len(assembled.context_text),
        fits=assembled.fits,
        reason=assembled.reason,
        prompt_tokens=tokens,
        tokens_needed=assembled.total_tokens,
        tokens_estimated=estimated,
    )
