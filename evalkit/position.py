"""Answer accuracy by where the gold sits in the context: stuff vs retrieve-k vs whole files.

The experiment (issue: "accuracy of stuffing everything vs retrieving 5 vs
retrieving 10, each question repeated with shuffled chunk order, grouped by
where the gold chunk sat") runs after a retrieval sweep, on one chunking's
ranked candidate pool (``pools/<chunking>.parquet``):

1. **Settings** (:class:`PositionSettings`, from the ``position:`` config block):
   arms, repeats, placements, the question subset, the token budget.
2. **Plan** (:func:`plan_position`, pure): every (question, arm, placement,
   repeat) context assembled with :func:`evalkit.context.assemble` under the
   budget, its gold bucket and planned prompt tokens, so the number of answers,
   prompt tokens, time and cost, and every "does not fit", are known before a
   single request is sent (:func:`describe`).
3. **Run** (:func:`run_position`): answers through the shared response cache
   (:func:`evalkit.generation.generate_many`; Message Batches when the
   generator has them enabled), scored with :func:`evalkit.answers.score_answer`,
   written to ``position/rows.parquet`` as they finish (a re-run reuses written
   rows and cached answers), then ``position/summary.parquet``.

Arms (config spelling):

- ``stuff``: every document in scope, whole (:func:`evalkit.context.stuff_context`):
  sent only when it fits the budget, else a ``does not fit`` row; never truncated.
  In scope: the question's ``tags.context_doc_ids`` / ``tags.scope_doc_id`` when
  given, else every document of the labelled set.
- ``retrieve-<k>``: the top k units of the pool; ``is_gold`` is the pool's
  ``relevant`` column (span projection, DESIGN §2).
- ``files`` / ``files-<k>``: the whole files the top k units came from
  (:func:`evalkit.context.file_items`); a file is gold when it holds an evidence span.

Placements: ``shuffle`` is repeated ``repeats`` times with a seeded shuffle per
(seed, question, repeat); deterministic placements (``score``, ``gold_at:head``,
``gold_at:mid``, ``gold_at:tail``) run once, on ``controlled_arms`` only, and only
where the context holds a gold item (placing nothing proves nothing).

Accuracy in the summary is question-weighted: each question's share of correct
answers in a cell, averaged over questions, with a bootstrap interval over
questions (repeats of one question are not independent draws).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import random
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from evalkit.answers import DEFAULT_REFUSALS, flip_rate, score_answer
from evalkit.budget import SpendGuard
from evalkit.context import (
    DOES_NOT_FIT,
    PROMPT_TOO_LONG,
    AssembledContext,
    Budget,
    ContextItem,
    GoldBucket,
    Placement,
    assemble,
    file_items,
    parse_placement,
    render_context,
    stuff_items,
)
from evalkit.costs import TokenUsage, call_cost, estimate_tokens
from evalkit.generation import make_generator, prompts_for
from evalkit.generation.base import (
    UNCACHED_STOPS,
    GenerationCounter,
    GenerationRequest,
    Generator,
    build_request,
    count_tokens_cached,
    generate_many,
    request_key,
    response_namespace,
)
from evalkit.plan import PROJECT_ROOT, ConfigError
from evalkit.pricing import ModelPrice, PricingError, load_price_table
from evalkit.records import Answer, ChunkingSpec, Document, Question
from evalkit.results import RunFolder, read_json, write_json, write_table
from evalkit.stats import bootstrap_ci

if TYPE_CHECKING:
    from evalkit.cache import Cache
    from evalkit.labelset import LabelSet

__all__ = [
    "BUCKETS",
    "ROW_COLUMNS",
    "Arm",
    "BudgetSpec",
    "PlannedAnswer",
    "PositionPlan",
    "PositionSettings",
    "RequestSpec",
    "SubsetSpec",
    "arm_items",
    "choose_chunking",
    "choose_subset",
    "describe",
    "gold_doc_ids",
    "parse_arm",
    "plan_position",
    "pool_items",
    "position_experiment",
    "request_for",
    "resolve_budget",
    "run_position",
    "scope_documents",
    "shuffle_seed",
    "summarise_position",
]

ArmKind = Literal["stuff", "retrieve", "files"]
OUT_DIR = "position"
"""Subfolder of the run folder the experiment writes to."""
BUCKETS: tuple[str, ...] = ("head", "mid", "tail", "none")
"""Gold position buckets in the order the summary lists them (``all`` follows)."""
DEFAULT_ARMS = ("stuff", "retrieve-5", "retrieve-10", "files")
DEFAULT_PLACEMENTS = ("shuffle", "gold_at:head", "gold_at:mid", "gold_at:tail")


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class Arm:
    """One way of filling the context."""

    name: str
    """Config spelling: ``stuff``, ``retrieve-<k>``, ``files`` or ``files-<k>``."""
    kind: ArmKind
    """``stuff``, ``retrieve`` or ``files``."""
    k: int = 0
    """Pool units retrieved (``retrieve`` and ``files``); 0 for ``stuff``."""


def parse_arm(name: str, files_top_k: int = 5) -> Arm:
    """``"retrieve-5"`` as ``Arm("retrieve-5", "retrieve", 5)``; ``files`` takes ``files_top_k`` units."""
    kind, _, k_text = str(name).partition("-")
    if kind == "stuff" and not k_text:
        return Arm("stuff", "stuff")
    if kind in ("retrieve", "files"):
        if not k_text and kind == "files":
            return Arm("files", "files", files_top_k)
        if k_text.isdigit() and int(k_text) >= 1:
            return Arm(str(name), kind, int(k_text))  # type: ignore[arg-type]  # checked above
    raise ConfigError(f"position.arms: {name!r} is not stuff, retrieve-<k>, files or files-<k> (k >= 1)")


@dataclass(frozen=True)
class SubsetSpec:
    """Which questions the experiment asks."""

    size: int | None = 12
    """Questions in the subset; None: every question of the sweep."""
    unanswerable: int = 2
    """Unanswerable questions included (as many as exist, up to this), the rest answerable."""
    seed: int = 0
    """Seed of the stratified draw (by ``lang`` within answerable and within unanswerable)."""


@dataclass(frozen=True)
class BudgetSpec:
    """Token budget of one prompt; None fields come from the generator."""

    window: int | None = None
    """Context window; None: the generator's (llama.cpp ``n_ctx``, Claude's window), else the price table's."""
    max_output: int | None = None
    """Reserved for the answer; None: the generator config's ``max_tokens``."""
    headroom: int = 256
    """Reserved for chat templates and counting error (at least the generator's own ``headroom``)."""
    context_share: float = 0.5
    """Retrieved items (retrieve and files arms) take at most this share of the window."""


@dataclass(frozen=True)
class PositionSettings:
    """The ``position:`` config block, validated."""

    arms: tuple[Arm, ...] = tuple(parse_arm(a) for a in DEFAULT_ARMS)
    """Arms, in the order the summary lists them."""
    repeats: int = 5
    """Repeats of each shuffled placement (a new seeded shuffle each)."""
    placements: tuple[Placement, ...] = tuple(parse_placement(p) for p in DEFAULT_PLACEMENTS)
    """``shuffle`` (repeated) and deterministic placements (``score``, ``gold_at:*``: once each)."""
    controlled_arms: tuple[str, ...] | None = ("retrieve-10",)
    """Arms the deterministic placements run on; None: every arm."""
    subset: SubsetSpec = SubsetSpec()
    chunking: str | None = None
    """Chunking key whose pool is read; None: the baseline chunking when swept, else the first of the grid."""
    budget: BudgetSpec = BudgetSpec()
    refusals: tuple[str, ...] = ()
    """Extra strings scored as refusals, besides the generator's and :data:`DEFAULT_REFUSALS`."""
    seed: int = 0
    """Seed of the shuffles."""
    tokenizer_family: str | None = None
    """Family for local token estimates; None: the model's in conf/pricing, else ``generic``."""
    count_with_model: bool = True
    """Count planned prompts with the model's own counter when it has one (Anthropic count_tokens)."""
    prompt_tokens_per_s: float = 150.0
    """Prompt reading speed of a local model, for the planned time."""
    output_tokens_per_s: float = 31.0
    """Generation speed of a local model, for the planned time."""
    expected_output_tokens: int = 32
    """Output tokens assumed per answer in the planned time and cost."""
    workers: int = 1
    """Parallel single requests (remote backends); a local model answers one at a time anyway."""
    flush_every: int = 8
    """Rows are written after every this many answers."""
    n_resamples: int = 2000
    """Bootstrap resamples of each interval."""
    dry_run: bool = False
    """Plan and print, send nothing."""

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any] | None, *, seed: int = 0) -> PositionSettings:
        """Read the ``position:`` block (unknown keys are errors); ``seed`` is the sweep's, used when unset."""
        cfg = dict(cfg or {})
        known = {
            "arms", "files_top_k", "repeats", "placements", "controlled_arms", "subset", "chunking", "budget",
            "refusals", "seed", "tokenizer_family", "count_with_model", "prompt_tokens_per_s",
            "output_tokens_per_s", "expected_output_tokens", "workers", "flush_every", "n_resamples", "dry_run",
        }  # fmt: skip
        _check_keys(cfg, known, "position")
        files_k = _int(cfg.get("files_top_k", 5), "position.files_top_k", 1)
        arms = tuple(parse_arm(a, files_k) for a in _list(cfg.get("arms", DEFAULT_ARMS), "position.arms"))
        if not arms or len({a.name for a in arms}) != len(arms):
            raise ConfigError("position.arms: give at least one arm, each once")
        try:
            placements = tuple(parse_placement(str(p)) for p in _list(cfg.get("placements", DEFAULT_PLACEMENTS), ""))
        except ValueError as exc:
            raise ConfigError(f"position.placements: {exc}") from exc
        if not placements or len({p.name for p in placements}) != len(placements):
            raise ConfigError("position.placements: give at least one placement, each once")
        controlled = cfg.get("controlled_arms", ("retrieve-10",))
        controlled_arms = None if controlled is None else tuple(str(a) for a in _list(controlled, ""))
        names = {a.name for a in arms}
        deterministic = any(p.policy != "shuffle" for p in placements)
        if deterministic and controlled_arms is not None and not set(controlled_arms) <= names:
            missing = ", ".join(sorted(set(controlled_arms) - names))
            raise ConfigError(f"position.controlled_arms: {missing} not among position.arms")
        subset_cfg = dict(cfg.get("subset") or {})
        _check_keys(subset_cfg, {"size", "unanswerable", "seed"}, "position.subset")
        size = subset_cfg.get("size", 12)
        budget_cfg = dict(cfg.get("budget") or {})
        _check_keys(budget_cfg, {"window", "max_output", "headroom", "context_share"}, "position.budget")
        window, max_output = budget_cfg.get("window"), budget_cfg.get("max_output")
        share = float(budget_cfg.get("context_share", 0.5))
        if not 0.0 < share <= 1.0:
            raise ConfigError(f"position.budget.context_share: {share} must lie in (0, 1]")
        family = cfg.get("tokenizer_family")
        run_seed = _int(cfg.get("seed", seed), "position.seed", 0)
        return cls(
            arms=arms,
            repeats=_int(cfg.get("repeats", 5), "position.repeats", 1),
            placements=placements,
            controlled_arms=controlled_arms,
            subset=SubsetSpec(
                size=None if size is None else _int(size, "position.subset.size", 1),
                unanswerable=_int(subset_cfg.get("unanswerable", 2), "position.subset.unanswerable", 0),
                seed=_int(subset_cfg.get("seed", run_seed), "position.subset.seed", 0),
            ),
            chunking=None if cfg.get("chunking") is None else str(cfg["chunking"]),
            budget=BudgetSpec(
                window=None if window is None else _int(window, "position.budget.window", 1),
                max_output=None if max_output is None else _int(max_output, "position.budget.max_output", 1),
                headroom=_int(budget_cfg.get("headroom", 256), "position.budget.headroom", 0),
                context_share=share,
            ),
            refusals=tuple(str(r) for r in _list(cfg.get("refusals") or (), "position.refusals")),
            seed=run_seed,
            tokenizer_family=None if family is None else str(family),
            count_with_model=bool(cfg.get("count_with_model", True)),
            prompt_tokens_per_s=_positive(cfg.get("prompt_tokens_per_s", 150.0), "position.prompt_tokens_per_s"),
            output_tokens_per_s=_positive(cfg.get("output_tokens_per_s", 31.0), "position.output_tokens_per_s"),
            expected_output_tokens=_int(cfg.get("expected_output_tokens", 32), "position.expected_output_tokens", 0),
            workers=_int(cfg.get("workers", 1), "position.workers", 1),
            flush_every=_int(cfg.get("flush_every", 8), "position.flush_every", 1),
            n_resamples=_int(cfg.get("n_resamples", 2000), "position.n_resamples", 1),
            dry_run=bool(cfg.get("dry_run", False)),
        )

    def placements_for(self, arm: Arm) -> tuple[Placement, ...]:
        """Placements run on ``arm``: shuffle always; deterministic ones on the controlled arms only."""
        controlled = self.controlled_arms is None or arm.name in self.controlled_arms
        return tuple(p for p in self.placements if p.policy == "shuffle" or controlled)

    def repeats_for(self, placement: Placement) -> int:
        """``repeats`` for ``shuffle``; 1 for a deterministic placement (a repeat would resend the same prompt)."""
        return self.repeats if placement.policy == "shuffle" else 1


def _check_keys(cfg: Mapping[str, Any], known: set[str], where: str) -> None:
    """A typo must not fall back to a default: unknown keys are errors."""
    unknown = sorted(set(cfg) - known)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")


def _list(value: Any, key: str) -> list[Any]:
    if isinstance(value, str):
        return [value]
    try:
        return list(value)
    except TypeError as exc:
        raise ConfigError(f"{key}: expected a list, got {value!r}") from exc


def _int(value: Any, key: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ConfigError(f"{key}: {value!r} is not a whole number")
    try:
        number = int(value)
    except ValueError as exc:
        raise ConfigError(f"{key}: {value!r} is not a whole number") from exc
    if number < minimum:
        raise ConfigError(f"{key}: {number} is below the minimum {minimum}")
    return number


def _positive(value: Any, key: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{key}: {value!r} is not a number") from exc
    if not number > 0 or math.isinf(number):
        raise ConfigError(f"{key}: {number} must be a positive number")
    return number


# --------------------------------------------------------------------------- questions and items (pure)


def _stable_int(*parts: Any) -> int:
    """A 63-bit integer from ``parts``, the same on every machine and Python run (no ``hash()``)."""
    digest = hashlib.sha256(json.dumps([str(p) for p in parts]).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def shuffle_seed(seed: int, question_id: str, repeat: int) -> int:
    """Seed of repeat ``repeat``'s shuffle for one question: adding a question never reshuffles another."""
    return _stable_int("position-shuffle", seed, question_id, repeat)


def _allocate(total: int, sizes: Mapping[str, int]) -> dict[str, int]:
    """Split ``total`` over strata proportionally to ``sizes`` (largest remainder; ties by name), capped by size."""
    available = sum(sizes.values())
    total = min(total, available)
    if total <= 0:
        return dict.fromkeys(sizes, 0)
    quotas = {name: total * size / available for name, size in sizes.items()}
    counts = {name: min(sizes[name], math.floor(q)) for name, q in quotas.items()}
    by_remainder = sorted(sizes, key=lambda name: (-(quotas[name] - math.floor(quotas[name])), name))
    while sum(counts.values()) < total:
        for name in by_remainder:
            if sum(counts.values()) < total and counts[name] < sizes[name]:
                counts[name] += 1
    return counts


def choose_subset(questions: Sequence[Question], spec: SubsetSpec) -> tuple[Question, ...]:
    """A seeded subset, stratified by ``lang`` within answerable and unanswerable; in the given order.

    ``spec.unanswerable`` unanswerable questions (or all there are) and the
    rest answerable, each side split over languages proportionally (largest
    remainder). Without a size, or a size of at least the set, every question.
    """
    if spec.size is None or spec.size >= len(questions):
        return tuple(questions)
    rng = random.Random(_stable_int("position-subset", spec.seed))
    answerable = [q for q in questions if q.answerable]
    unanswerable = [q for q in questions if not q.answerable]
    n_unanswerable = min(spec.unanswerable, len(unanswerable), spec.size)
    n_answerable = min(spec.size - n_unanswerable, len(answerable))
    n_unanswerable = min(spec.size - n_answerable, len(unanswerable))  # top up when answerable run short
    chosen: set[str] = set()
    for pool, n in ((answerable, n_answerable), (unanswerable, n_unanswerable)):
        strata: dict[str, list[Question]] = {}
        for question in pool:
            strata.setdefault(question.lang, []).append(question)
        counts = _allocate(n, {lang: len(members) for lang, members in sorted(strata.items())})
        for lang in sorted(strata):
            chosen.update(q.id for q in rng.sample(strata[lang], counts[lang]))
    return tuple(q for q in questions if q.id in chosen)


def pool_items(pool: pd.DataFrame, documents: Mapping[str, Document]) -> dict[str, tuple[ContextItem, ...]]:
    """Each question's ranked pool (``pools/<chunking>.parquet``) as context items, best rank first.

    Unit text is ``document.text[start:end]``; ``is_gold`` is the pool's
    ``relevant`` column; the title is the document's.
    """
    missing = sorted(set(pool["doc_id"]) - set(documents))
    if missing:
        raise ValueError(f"the pool names documents not in the labelled set: {missing[:5]}")
    items: dict[str, list[ContextItem]] = {}
    for row in pool.sort_values(["question_id", "rank"], kind="stable").itertuples(index=False):
        doc = documents[str(row.doc_id)]
        start, end = int(row.start), int(row.end)
        items.setdefault(str(row.question_id), []).append(
            ContextItem(
                unit_id=str(row.unit_id),
                doc_id=doc.doc_id,
                start=start,
                end=end,
                text=doc.text[start:end],
                score=float(row.score),
                is_gold=bool(row.relevant),
                title=doc.title,
            )
        )
    return {qid: tuple(ranked) for qid, ranked in items.items()}


def gold_doc_ids(question: Question) -> tuple[str, ...]:
    """Documents holding the question's evidence, in evidence order."""
    return tuple(dict.fromkeys(span.doc_id for span in question.evidence))


def scope_documents(question: Question, documents: Mapping[str, Document]) -> tuple[Document, ...]:
    """Documents the ``stuff`` arm puts in the context: the question's scope tags, else all, in the given order.

    ``tags.context_doc_ids`` (a list) and ``tags.scope_doc_id`` (an id or a
    list) name the documents in scope; with neither, every document is.
    """
    named: list[str] = []
    for tag in ("context_doc_ids", "scope_doc_id"):
        value = question.tags.get(tag)
        if value:
            named.extend([value] if isinstance(value, str) else [str(v) for v in value])
    if not named:
        return tuple(documents.values())
    unknown = [doc_id for doc_id in named if doc_id not in documents]
    if unknown:
        raise ValueError(f"question {question.id!r} scopes unknown documents: {unknown}")
    return tuple(documents[doc_id] for doc_id in dict.fromkeys(named))


def arm_items(
    arm: Arm, question: Question, ranked: Sequence[ContextItem], documents: Mapping[str, Document]
) -> tuple[ContextItem, ...]:
    """The items ``arm`` offers the context for ``question`` (``ranked``: its pool, best first)."""
    if arm.kind == "stuff":
        return stuff_items(scope_documents(question, documents), gold_doc_ids(question))
    if arm.kind == "retrieve":
        return tuple(ranked[: arm.k])
    return file_items(ranked[: arm.k], documents, gold_doc_ids(question))


# --------------------------------------------------------------------------- the plan (pure)


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
        """System prompt and templates for a language (:func:`evalkit.generation.prompts_for`)."""
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
    """Seed handed to :func:`evalkit.context.assemble` (used by ``shuffle``)."""
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
    """Empty, :data:`evalkit.context.DOES_NOT_FIT` or :data:`evalkit.context.PROMPT_TOO_LONG`."""
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


# --------------------------------------------------------------------------- running


ROW_COLUMNS = (
    "question_id", "lang", "answerable", "arm", "placement", "repeat", "seed", "gold_bucket", "gold_offset",
    "context_chars", "n_offered", "n_items", "n_dropped", "prompt_tokens", "prompt_tokens_estimated", "sent",
    "answer", "correct", "exact", "contains", "f1", "refused", "citations_valid", "quotes_valid", "stop_reason",
    "truncated", "overflow", "cached", "input_tokens", "output_tokens", "cache_creation_input_tokens",
    "cache_read_input_tokens", "usage_estimated", "cost_usd", "model", "backend", "chunking", "request_key",
    "row_key",
)  # fmt: skip
"""Columns of ``position/rows.parquet``, in order. ``sent``: False for a context that cannot fit (``stop_reason``
``does not fit`` / ``prompt too long``); ``overflow``: the prompt did not fit, unsent or refused by the model's window
(``stop_reason`` ``overflow``); ``correct`` and the other scores are NA when no answer was scored; ``cost_usd``: what
the answer cost when generated, NaN when the model is unpriced; ``request_key``: the response cache key."""

_BOOL_COLUMNS = ("correct", "exact", "contains", "refused", "citations_valid", "quotes_valid")


def _base_row(plan: PositionPlan, entry: PlannedAnswer) -> dict[str, Any]:
    return {
        "question_id": entry.question_id,
        "lang": entry.lang,
        "answerable": entry.answerable,
        "arm": entry.arm,
        "placement": entry.placement,
        "repeat": entry.repeat,
        "seed": entry.seed,
        "gold_bucket": entry.gold_bucket,
        "gold_offset": entry.gold_offset,
        "context_chars": entry.context_chars,
        "n_offered": entry.n_offered,
        "n_items": len(entry.items),
        "n_dropped": entry.n_dropped,
        "prompt_tokens": entry.prompt_tokens,
        "prompt_tokens_estimated": entry.tokens_estimated,
        "chunking": plan.chunking,
        "row_key": entry.row_key,
    }


def _unsent_row(plan: PositionPlan, entry: PlannedAnswer) -> dict[str, Any]:
    """A context that cannot fit: recorded, never sent, excluded from accuracy."""
    return _base_row(plan, entry) | {
        "sent": False,
        "answer": "",
        "stop_reason": entry.reason,
        "truncated": False,
        "overflow": True,
        "cached": False,
        "model": plan.request_spec.model,
        "backend": plan.request_spec.backend,
        "request_key": "",
    }


def _answer_row(
    plan: PositionPlan, entry: PlannedAnswer, question: Question, answer: Answer, key: str, refusals: Sequence[str]
) -> dict[str, Any]:
    """A sent request's answer, scored; an overflow or error answer is recorded but not scored."""
    usage = answer.usage
    row = _base_row(plan, entry) | {
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
        "cost_usd": _cost(plan.price, answer),
        "model": answer.model or plan.request_spec.model,
        "backend": answer.backend,
        "request_key": key,
    }
    if answer.stop_reason in UNCACHED_STOPS:
        return row
    provided = {item.doc_id for item in entry.items}
    score = score_answer(question, answer.text, refusals, provided, plan.doc_texts)
    return row | {
        "correct": score.correct,
        "exact": score.exact,
        "contains": score.contains,
        "f1": score.f1,
        "refused": score.refused,
        "citations_valid": score.citations_valid,
        "quotes_valid": score.quotes_valid,
    }


def _cost(price: ModelPrice | None, answer: Answer) -> float:
    """Dollars the answer cost when it was generated (a cache hit costs nothing now); NaN when unpriced."""
    if price is None:
        return math.nan
    usage = answer.usage
    tokens = TokenUsage(
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_creation_input_tokens,
        usage.cache_read_input_tokens,
        estimated=usage.estimated,
    )
    return call_cost(tokens, price, batch=answer.backend.endswith("-batch")).usd


def rows_frame(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Rows as a table with :data:`ROW_COLUMNS`; score columns are nullable booleans (NA: not scored)."""
    frame = pd.DataFrame(list(rows), columns=list(ROW_COLUMNS))
    for column in _BOOL_COLUMNS:
        frame[column] = frame[column].astype("boolean")
    for column in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
        frame[column] = frame[column].fillna(0).astype("int64")
    frame["usage_estimated"] = frame["usage_estimated"].astype("boolean").fillna(False).astype(bool)
    frame["f1"] = frame["f1"].astype("float64")
    frame["cost_usd"] = frame["cost_usd"].astype("float64")
    frame["gold_offset"] = frame["gold_offset"].astype("Int64")
    return frame


def _refusals(plan: PositionPlan) -> tuple[str, ...]:
    spec = plan.request_spec
    configured = tuple(str(r) for r in (spec.generator_cfg.get("refusal") or {}).values())
    return tuple(dict.fromkeys((*configured, *DEFAULT_REFUSALS, *plan.settings.refusals)))


def _written_rows(path: Path) -> dict[str, dict[str, Any]]:
    """Rows already on disk by row_key (an earlier, interrupted or finished run)."""
    if not path.exists():
        return {}
    frame = pd.read_parquet(path)
    if "row_key" not in frame.columns:
        return {}
    records = frame.astype(object).where(frame.notna(), None).to_dict("records")
    return {str(r["row_key"]): r for r in records}


def run_position(
    plan: PositionPlan,
    generator: Generator,
    cache: Cache,
    out_dir: Path,
    progress: bool = True,
    *,
    counter: GenerationCounter | None = None,
    spend: SpendGuard | None = None,
) -> pd.DataFrame:
    """Generate, score and write every planned answer; returns the summary (also in ``out_dir``).

    Writes ``rows.parquet`` (+csv) after every ``flush_every`` answers and at
    the end, then ``summary.parquet`` (+csv). A re-run keeps rows already
    written for the same request and serves the rest from the response cache,
    so only what is missing is sent. With the generator's batches enabled,
    every missing request goes into Message Batches at once. ``spend`` is
    charged before each chunk of uncached requests is sent (planned prompt
    tokens plus the full ``max_tokens``: an upper bound) and raises
    :class:`evalkit.budget.BudgetExceeded`, sending nothing of the chunk that would cross the cap.
    """
    from tqdm.auto import tqdm

    started = time.perf_counter()
    counter = counter or GenerationCounter()
    rows_path = out_dir / "rows.parquet"
    written = _written_rows(rows_path)
    refusals = _refusals(plan)
    rows: dict[str, dict[str, Any]] = {}
    pending: list[tuple[PlannedAnswer, GenerationRequest, str]] = []
    for entry in plan.entries:
        if not entry.fits:
            rows[entry.row_key] = _unsent_row(plan, entry)
            continue
        request = request_for(plan, entry)
        key = request_key(generator, request)
        earlier = written.get(entry.row_key)
        if earlier is not None and earlier.get("request_key") == key:
            rows[entry.row_key] = earlier
        else:
            pending.append((entry, request, key))

    def flush() -> None:
        ordered = [rows[e.row_key] for e in plan.entries if e.row_key in rows]
        write_table(rows_path, rows_frame(ordered), csv=True)

    use_batch = generator.batch_enabled and generator.supports_batch
    step = (len(pending) or 1) if use_batch else plan.settings.flush_every
    bar = tqdm(total=len(pending), desc="position answers", unit="answer", disable=not progress, file=sys.stderr)
    try:
        for offset in range(0, len(pending), step):
            chunk = pending[offset : offset + step]
            if spend is not None:
                _charge(plan, generator, cache, chunk, spend, batch=use_batch)
            answers = generate_many(
                generator,
                [request for _, request, _ in chunk],
                cache,
                counter,
                batch=use_batch,
                workers=plan.settings.workers,
            )
            for (entry, _, key), answer in zip(chunk, answers, strict=True):
                rows[entry.row_key] = _answer_row(plan, entry, plan.question(entry.question_id), answer, key, refusals)
            bar.update(len(chunk))
            flush()
    finally:
        bar.close()
        flush()
    frame = pd.read_parquet(rows_path)
    summary = summarise_position(frame, n_resamples=plan.settings.n_resamples, seed=plan.settings.seed)
    write_table(out_dir / "summary.parquet", summary, csv=True)
    write_json(out_dir / "run_stats.json", _run_stats(plan, counter, len(pending), time.perf_counter() - started))
    return summary


def _charge(
    plan: PositionPlan,
    generator: Generator,
    cache: Cache,
    chunk: Sequence[tuple[PlannedAnswer, GenerationRequest, str]],
    spend: SpendGuard,
    *,
    batch: bool,
) -> None:
    """Charge ``spend`` once for the chunk's distinct uncached requests; raises before any of them is sent."""
    if plan.price is None:
        return
    stored = cache.get_many(response_namespace(generator), [key for _, _, key in chunk])
    fresh = {key: (entry, request) for entry, request, key in chunk if key not in stored}
    usd = sum(
        call_cost(TokenUsage(entry.prompt_tokens, request.max_tokens, estimated=True), plan.price, batch=batch).usd
        for entry, request in fresh.values()
    )
    spend.charge(usd, f"generate: {len(fresh)} position answers")


def _run_stats(plan: PositionPlan, counter: GenerationCounter, pending: int, seconds: float) -> dict[str, Any]:
    total = counter.total()
    return {
        "seconds": round(seconds, 3),
        "rows": len(plan.entries),
        "answers_pending_at_start": pending,
        "requests_sent": total.requests,
        "cache_hits": sum(counter.cache_hits.values()),
        "overflows": sum(counter.overflows.values()),
        "errors": sum(counter.errors.values()),
        "input_tokens": total.input_tokens,
        "output_tokens": total.output_tokens,
        "token_count_requests": sum(counter.token_counts.values()),
    }


# --------------------------------------------------------------------------- summary (pure)


def _question_shares(cell: pd.DataFrame) -> np.ndarray:
    """Each question's share of correct answers among the cell's scored rows."""
    scored = cell[cell["correct"].notna()]
    if scored.empty:
        return np.zeros(0)
    return scored.assign(c=scored["correct"].astype(float)).groupby("question_id", sort=True)["c"].mean().to_numpy()


def _cell(cell: pd.DataFrame, n_resamples: int, seed: int) -> dict[str, Any]:
    """Accuracy (question-weighted, bootstrap interval over questions) and counts of one cell."""
    shares = _question_shares(cell)
    scored = cell[cell["correct"].notna()]
    if shares.size:
        interval = bootstrap_ci(shares, n_resamples=n_resamples, seed=seed)
        accuracy = {"accuracy": interval.mean, "accuracy_low": interval.low, "accuracy_high": interval.high}
        accuracy["ci_method"] = interval.method
    else:
        accuracy = {"accuracy": math.nan, "accuracy_low": math.nan, "accuracy_high": math.nan, "ci_method": ""}
    sent = cell[cell["sent"].astype(bool)]
    priced = sent["cost_usd"].notna()
    return {
        "n_rows": len(cell),
        "n_answers": len(scored),
        "n_questions": int(shares.size),
        **accuracy,
        "exact": float(scored["exact"].astype(float).mean()) if len(scored) else math.nan,
        "f1": float(scored["f1"].mean()) if len(scored) else math.nan,
        "refused_share": float(scored["refused"].astype(float).mean()) if len(scored) else math.nan,
        "n_does_not_fit": int((cell["stop_reason"] == DOES_NOT_FIT).sum()),
        "n_prompt_too_long": int((cell["stop_reason"] == PROMPT_TOO_LONG).sum()),
        "n_overflow": int((cell["stop_reason"] == "overflow").sum()),
        "n_over_budget": int((sent["n_dropped"] > 0).sum()),
        "n_truncated": int(cell["truncated"].astype(bool).sum()),
        "n_errors": int((cell["stop_reason"] == "error").sum()),
        "n_cached": int(sent["cached"].astype(bool).sum()),
        "mean_prompt_tokens": float(sent["prompt_tokens"].mean()) if len(sent) else math.nan,
        "input_tokens": int(sent["input_tokens"].sum()),
        "output_tokens": int(sent["output_tokens"].sum()),
        "cache_creation_input_tokens": int(sent["cache_creation_input_tokens"].sum()),
        "cache_read_input_tokens": int(sent["cache_read_input_tokens"].sum()),
        "usage_estimated": bool(sent["usage_estimated"].astype(bool).any()),
        "cost_usd": float(sent.loc[priced, "cost_usd"].sum()) if priced.any() else math.nan,
        "cost_per_answer_usd": float(sent.loc[priced, "cost_usd"].mean()) if priced.any() else math.nan,
    }


def _flips(group: pd.DataFrame) -> tuple[float, int]:
    """Flip rate over the group's repeats and the number of questions with at least two scored repeats."""
    scored = group[group["correct"].notna()].sort_values(["question_id", "repeat"])
    by_question = {qid: [bool(c) for c in g["correct"]] for qid, g in scored.groupby("question_id", sort=True)}
    repeated = sum(1 for outcomes in by_question.values() if len(outcomes) >= 2)
    return flip_rate(by_question), repeated


def summarise_position(rows: pd.DataFrame, n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """One row per (arm, placement, gold bucket), buckets head/mid/tail/none then ``all``.

    ``accuracy``: mean over questions of each question's share of correct
    answers in the cell, with a 95% bootstrap interval over questions
    (``evalkit.stats.bootstrap_ci``); rows not sent (does not fit) and
    overflow/error answers are not scored and not in it. ``flip_rate`` (on the
    ``all`` row; NaN for a single repeat) is the share of questions whose
    correctness changes across repeats. Counts and tokens are per cell:
    ``n_does_not_fit`` stuffed contexts over the budget and ``n_prompt_too_long``
    prompts whose fixed parts alone are (neither sent); ``n_overflow`` requests
    the model's window refused (pre-count or the provider); ``n_over_budget``
    sent contexts that left whole items out; ``n_truncated`` answers cut short.
    """
    out: list[dict[str, Any]] = []
    arm_order = list(dict.fromkeys(rows["arm"]))
    placement_order = list(dict.fromkeys(rows["placement"]))
    for arm in arm_order:
        for placement in placement_order:
            group = rows[(rows["arm"] == arm) & (rows["placement"] == placement)]
            if group.empty:
                continue
            repeats = int(group["repeat"].max()) + 1
            for bucket in (*BUCKETS, "all"):
                cell = group if bucket == "all" else group[group["gold_bucket"] == bucket]
                if cell.empty and bucket != "all":
                    continue
                flips, repeated = _flips(group) if bucket == "all" and repeats > 1 else (math.nan, 0)
                out.append(
                    {"arm": arm, "placement": placement, "gold_bucket": bucket, "repeats": repeats}
                    | _cell(cell, n_resamples, seed)
                    | {"flip_rate": flips, "flip_questions": repeated}
                )
    return pd.DataFrame(out)


# --------------------------------------------------------------------------- wiring (I/O)


def choose_chunking(run_dir: Path, wanted: str | None, cfg: Mapping[str, Any]) -> str:
    """The chunking whose pool the experiment reads.

    ``wanted`` when given; else the baseline chunking (``baseline.chunk_size`` /
    ``chunk_overlap`` with the configured chunker) when the sweep ran it; else
    the first chunking of the sweep's grid (``manifest.json``).
    """
    folder = RunFolder(run_dir)
    manifest = run_dir / "manifest.json"
    grid = list(read_json(manifest).get("grid", {}).get("chunkings", [])) if manifest.exists() else []
    available = [key for key in grid if folder.pool_path(key).exists()] or sorted(
        p.stem for p in (run_dir / "pools").glob("*.parquet")
    )
    if wanted is not None:
        if wanted not in available:
            raise ConfigError(f"position.chunking: no pool for {wanted!r} in {run_dir}; swept: {', '.join(available)}")
        return wanted
    if not available:
        raise ConfigError(f"position: {run_dir}/pools holds no candidate pool; run the retrieval sweep first")
    baseline, chunker = cfg.get("baseline") or {}, cfg.get("chunker") or {}
    if baseline.get("chunk_size") is not None and chunker.get("name"):
        key = ChunkingSpec(
            str(chunker["name"]),
            int(baseline["chunk_size"]),
            int(baseline.get("chunk_overlap") or 0),
            int(chunker.get("child_size") or 0),
        ).key
        if key in available:
            return key
    return available[0]


def resolve_budget(
    spec: BudgetSpec, generator: Generator, generator_cfg: Mapping[str, Any], price: ModelPrice | None
) -> Budget:
    """The :class:`Budget` of every prompt: configured values, else the generator's, else the price table's."""
    window = spec.window or generator.window or (price.context_window if price is not None else None)
    if not window:
        raise ConfigError("position.budget.window: the generator has no window; set position.budget.window")
    max_output = spec.max_output or int(generator_cfg.get("max_tokens", 256))
    headroom = max(spec.headroom, int(generator.headroom or 0))
    budget = Budget(int(window), max_output, headroom, spec.context_share)
    if budget.input_tokens <= 0:
        raise ConfigError(f"position.budget: window {window} leaves no input after {max_output} + {headroom}")
    return budget


def _price(model: str, pricing_dir: Path) -> ModelPrice | None:
    """The model's price from conf/pricing, or None when it is not listed (costs are then NaN)."""
    try:
        return load_price_table(pricing_dir).model(model)
    except PricingError:
        return None


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def position_experiment(
    run_dir: Path,
    labelset: LabelSet,
    cfg: Mapping[str, Any],
    cache: Cache,
    progress: bool = True,
    *,
    generator: Generator | None = None,
    log: Callable[[str], None] = _stderr,
    pricing_dir: Path = PROJECT_ROOT / "conf" / "pricing",
    out_dir: Path | None = None,
    spend: SpendGuard | None = None,
) -> Path:
    """Run the position experiment on a finished sweep in ``run_dir``; returns its folder (``run_dir/position``).

    ``cfg`` is the plain (resolved) sweep config with a ``position:`` block and
    a ``generator:`` group. Reads the chosen chunking's pool, draws the
    subset, plans, prints :func:`describe` through ``log``, and (unless
    ``position.dry_run``) runs. The generator is built from
    ``cfg["generator"]`` unless one is given; ``spend`` is the sweep's
    spending cap (``budget_usd``), charged before every uncached paid answer.
    """
    settings = PositionSettings.from_config(cfg.get("position"), seed=int(cfg.get("seed", 0)))
    generator_cfg = cfg.get("generator")
    if not generator_cfg:
        raise ConfigError("generator: not set; add generator=local or generator=anthropic")
    chunking = choose_chunking(run_dir, settings.chunking, cfg)
    documents = {doc.doc_id: doc for doc in labelset.documents}
    ranked = pool_items(pd.read_parquet(RunFolder(run_dir).pool_path(chunking)), documents)
    limit = (cfg.get("labelset") or {}).get("limit")
    questions = choose_subset(labelset.questions[:limit] if limit else labelset.questions, settings.subset)
    generator = generator or make_generator(generator_cfg)
    model = str(generator.model or generator_cfg.get("model") or "")
    price = _price(model, pricing_dir)
    family = settings.tokenizer_family or (price.tokenizer_family if price is not None else "generic")
    budget = resolve_budget(settings.budget, generator, generator_cfg, price)
    counter = GenerationCounter()
    count_request = None
    if settings.count_with_model:

        def count_request(request: GenerationRequest) -> int | None:
            return count_tokens_cached(generator, request, cache, counter)

    plan = plan_position(
        settings,
        questions,
        ranked,
        documents,
        RequestSpec.from_config(generator_cfg, model, generator.backend),
        budget,
        chunking=chunking,
        tokenizer_family=family,
        count_request=count_request,
        price=price,
    )
    out_dir = out_dir or run_dir / OUT_DIR
    text = describe(plan)
    log(text)
    write_json(out_dir / "plan.json", _plan_record(plan, text))
    if not settings.dry_run:
        run_position(plan, generator, cache, out_dir, progress, counter=counter, spend=spend)
    return out_dir


def _plan_record(plan: PositionPlan, text: str) -> dict[str, Any]:
    """What the plan promised, kept beside the results (the report shows planned against done)."""
    return {
        "chunking": plan.chunking,
        "model": plan.request_spec.model,
        "backend": plan.request_spec.backend,
        "budget": {
            "window": plan.budget.window_tokens,
            "max_output": plan.budget.max_output_tokens,
            "headroom": plan.budget.headroom_tokens,
            "context_share": plan.budget.context_share,
        },
        "questions": [q.id for q in plan.questions],
        "arms": [arm.name for arm in plan.settings.arms],
        "placements": [p.name for p in plan.settings.placements],
        "repeats": plan.settings.repeats,
        "rows": len(plan.entries),
        "answers": len(plan.to_send),
        "distinct_requests": plan.n_distinct,
        "prompt_tokens": plan.prompt_tokens,
        "prompt_tokens_estimated": plan.tokens_estimated,
        "tokenizer_family": plan.tokenizer_family,
        "does_not_fit": plan.count(DOES_NOT_FIT),
        "prompt_too_long": plan.count(PROMPT_TOO_LONG),
        "over_budget": plan.n_over_budget,
        "skipped_no_gold": plan.skipped_no_gold,
        "description": text,
    }
