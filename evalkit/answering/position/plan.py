"""The plan: every context assembled under the budget before anything is sent (pure)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from evalkit.answering.context import (
    DOES_NOT_FIT,
    PROMPT_TOO_LONG,
    AssembledContext,
    Budget,
    ContextItem,
    GoldBucket,
    assemble,
    render_context,
)
from evalkit.answering.generation import prompts_for
from evalkit.answering.generation.base import (
    GenerationRequest,
    build_request,
)
from evalkit.cost.model import TokenUsage, call_cost
from evalkit.cost.prices import ModelPrice
from evalkit.cost.tokens import estimate_tokens
from evalkit.records import Document, Question

if TYPE_CHECKING:
    pass

from evalkit.answering.position.items import arm_items, shuffle_seed
from evalkit.answering.position.settings import PositionSettings


@dataclass(frozen=True)
class RequestSpec:
    """How a context becomes a generation request (from the generator config)."""

    model: str
    """Model id sent to the provider."""
    backend: str
    """Generator backend (``local``, ``anthropic``, ...): the planned time is shown for ``local``."""
    generator_cfg: Mapping[str, Any]
    """The ``generator:`` config: prompts and refusal strings per language."""
    max_tokens: int
    """Output cap of every request."""
    stop_sequences: tuple[str, ...] = ()
    cache_prefix: bool = False
    """Mark the system prompt and context as a prompt-cache prefix."""

    @classmethod
    def from_config(cls, generator_cfg: Mapping[str, Any], model: str, backend: str) -> RequestSpec:
        return cls(
            model=model,
            backend=backend,
            generator_cfg=generator_cfg,
            max_tokens=int(generator_cfg.get("max_tokens", 256)),
            stop_sequences=tuple(generator_cfg.get("stop_sequences") or ()),
            cache_prefix=bool(generator_cfg.get("cache_prefix", False)),
        )

    def prompts(self, lang: str) -> dict[str, str]:
        """System prompt and templates for a language (:func:`evalkit.answering.generation.prompts_for`)."""
        return prompts_for(self.generator_cfg, lang)


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
    """Seed handed to :func:`evalkit.answering.context.assemble` (used by ``shuffle``)."""
    items: tuple[ContextItem, ...]
    """Items in the context, in placed order."""
    n_offered: int
    """Items the arm offered before budgeting."""
    n_dropped: int
    """Items left out for the budget (retrieval arms only; ``stuff`` never drops)."""
    gold_bucket: GoldBucket
    """Third of the context holding the gold block's midpoint, or ``none``."""
    gold_offset: int | None
    """Where the gold block starts in the context text."""
    context_chars: int
    """Length of the context text."""
    fits: bool
    """False: not sent (see ``reason``)."""
    reason: str
    """Empty, :data:`evalkit.answering.context.DOES_NOT_FIT` or :data:`evalkit.answering.context.PROMPT_TOO_LONG`."""
    prompt_tokens: int
    """Planned prompt tokens of the request (0 when not sent)."""
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


def _fixed_text(prompts: Mapping[str, str], question: Question) -> str:
    """The request text around the context: the context template's frame and the question block."""
    return prompts["context_template"].format(context="") + prompts["question_template"].format(
        question=question.question
    )


def request_for(plan: PositionPlan, entry: PlannedAnswer) -> GenerationRequest:
    """The generation request of a planned answer (rebuilt on demand: contexts are not held twice)."""
    return _request(plan.request_spec, plan.question(entry.question_id), entry.items)


def _request(spec: RequestSpec, question: Question, items: Sequence[ContextItem]) -> GenerationRequest:
    prompts = spec.prompts(question.lang)
    return build_request(
        question.question,
        render_context(items),
        model=spec.model,
        system=prompts["system"],
        max_tokens=spec.max_tokens,
        context_template=prompts["context_template"],
        question_template=prompts["question_template"],
        question_id=question.id,
        stop_sequences=spec.stop_sequences,
        cache_prefix=spec.cache_prefix,
    )


def estimate_request_tokens(request: GenerationRequest, family: str) -> int:
    """Local estimate of a request's prompt tokens: system prompt plus every message block."""
    blocks = [request.system, *(text for _, content in request.messages for text in content)]
    return sum(estimate_tokens(text, family) for text in blocks)


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
) -> PositionPlan:
    """Assemble every (question, arm, placement, repeat) context under ``budget``; send nothing.

    ``ranked`` maps a question id to its pool (best first; absent: empty).
    Contexts are budgeted with the local estimate of ``tokenizer_family``
    (deliberately high). Planned prompt tokens of the requests that fit come
    from ``count_request`` (the model's own counter) when given and it
    answers, else from the estimate, and are labelled accordingly.
    """
    count = functools.lru_cache(maxsize=256)(lambda text: estimate_tokens(text, tokenizer_family))
    entries: list[PlannedAnswer] = []
    skipped = 0
    for question in questions:
        prompts = request_spec.prompts(question.lang)
        fixed = _fixed_text(prompts, question)
        for arm in settings.arms:
            offered = arm_items(arm, question, ranked.get(question.id, ()), documents)
            overflow = "refuse" if arm.kind == "stuff" else "drop"
            for placement in settings.placements_for(arm):
                for repeat in range(settings.repeats_for(placement)):
                    seed = shuffle_seed(settings.seed, question.id, repeat)
                    assembled = assemble(
                        prompts["system"], fixed, offered, budget, count, placement, seed, overflow=overflow
                    )
                    if placement.policy == "gold_at" and assembled.gold_bucket == "none":
                        skipped += 1  # nothing to place: the prompt would only repeat another placement's
                        continue
                    tokens, estimated = 0, False
                    if assembled.fits:
                        request = _request(request_spec, question, assembled.items)
                        counted = count_request(request) if count_request is not None else None
                        estimated = counted is None
                        tokens = estimate_request_tokens(request, tokenizer_family) if counted is None else counted
                    key = (arm.name, placement.name, repeat, seed, len(offered))
                    entries.append(_planned(question, key, assembled, tokens, estimated))
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
    )


def _planned(
    question: Question, key: tuple[str, str, int, int, int], assembled: AssembledContext, tokens: int, estimated: bool
) -> PlannedAnswer:
    """A plan entry from its (arm, placement, repeat, seed, items offered) and assembled context."""
    arm, placement, repeat, seed, n_offered = key
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
        gold_bucket=assembled.gold_bucket,
        gold_offset=assembled.gold_offset,
        context_chars=len(assembled.context_text),
        fits=assembled.fits,
        reason=assembled.reason,
        prompt_tokens=tokens,
        tokens_estimated=estimated,
    )


def _thousands(n: float) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else f"{n:.0f}"


def describe(plan: PositionPlan) -> str:
    """What the run will do, printed before it starts: answers, prompt tokens, time or cost, what does not fit."""
    s, b = plan.settings, plan.budget
    entries, send = plan.entries, plan.to_send
    shuffled = [p.name for p in s.placements if p.policy == "shuffle"]
    fixed = [p.name for p in s.placements if p.policy != "shuffle"]
    shape = f"{len(plan.questions)} questions x {len(s.arms)} arms"
    parts = [f"{'/'.join(shuffled)} x {s.repeats} repeats"] if shuffled else []
    if fixed:
        on = "every arm" if s.controlled_arms is None else "/".join(s.controlled_arms)
        parts.append(f"{'/'.join(fixed)} x 1 on {on}")
    tokens = plan.prompt_tokens
    label = "estimated, " + plan.tokenizer_family + " heuristic" if plan.tokens_estimated else "counted by the model"
    lines = [
        f"position: chunking {plan.chunking}; budget {b.window_tokens} window - {b.max_output_tokens} output - "
        f"{b.headroom_tokens} headroom = {b.input_tokens} input tokens, retrieved items <= {b.share_tokens}",
        f"planned: {shape} ({'; '.join(parts)}) = {len(entries)} rows"
        + (f" ({plan.skipped_no_gold} gold_at contexts skipped: no gold to place)" if plan.skipped_no_gold else ""),
        f"  does not fit: {plan.count(DOES_NOT_FIT)} (stuff, not sent), prompt too long: {plan.count(PROMPT_TOO_LONG)}"
        f", over budget (items dropped): {plan.n_over_budget}",
        f"  answers: {len(send)} ({plan.n_distinct} distinct requests), ~{_thousands(tokens)} prompt tokens ({label})",
    ]
    output = plan.n_distinct * s.expected_output_tokens
    if plan.request_spec.backend == "local":
        minutes = (tokens / s.prompt_tokens_per_s + output / s.output_tokens_per_s) / 60
        lines.append(
            f"  ≈ {minutes:.1f} min at {s.prompt_tokens_per_s:g} prompt tok/s and {s.output_tokens_per_s:g} output "
            f"tok/s (~{s.expected_output_tokens} output tokens per answer), before cache hits"
        )
    if plan.price is not None:
        usage = TokenUsage(tokens, output, estimated=plan.tokens_estimated)
        cost = call_cost(usage, plan.price)
        lines.append(f"  ≈ ${cost.usd:.2f} at list price for {plan.price.model_id}, before cache hits")
    for arm in s.arms:
        mine = [e for e in entries if e.arm == arm.name]
        sent = [e for e in mine if e.fits]
        lines.append(
            f"  {arm.name}: {len(sent)} answers, ~{_thousands(sum(e.prompt_tokens for e in sent))} tokens"
            + (f", {len(mine) - len(sent)} not sent ({DOES_NOT_FIT})" if len(mine) > len(sent) else "")
        )
    return "\n".join(lines)
