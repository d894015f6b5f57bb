"""Assemble a prompt's context under a token budget (pure).

One prompt is a system prompt, a context of rendered items and a question.
The system prompt and the question are never dropped; items are whole
retrieved chunks (the ``chunks`` arm), whole files those chunks came from
(the ``files`` arm, :func:`file_items`) or every document in scope (the
``stuff`` arm, :func:`stuff_items` and :func:`stuff_context`). Items and their
rendering are :mod:`evalkit.answers.blocks`; their order and the gold
item's position bucket are :mod:`evalkit.answers.placement`. Every name of
those two stays importable from here.

Rules, each tested in ``tests/test_context.py``:

- **Budget.** The input budget is ``window - max_output - headroom`` and is a
  hard cap on system + context + question tokens. Retrieved items also take
  at most ``floor(window * context_share)`` tokens (:meth:`Budget.context_cap`).
  The ``stuff`` arm ignores the share (stuffing the corpus is the point) but
  never the input budget.
- **Dropping.** Over budget, the lowest-scored item goes first (ties: the one
  later in the given order), whole items only: an item is never cut. What
  remains is always the best-scored prefix, and the largest prefix that fits
  is found by bisection, so a remote token counter is called O(log n) times.
  The ``stuff`` arm drops nothing: it reports ``fits=False, reason="does not
  fit"`` instead of truncating.
- **Gold block.** The gold item's block (see :mod:`evalkit.answers.placement`)
  occupies ``[gold_offset, gold_end)`` of ``context_text``; its midpoint gives
  the position bucket.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from evalkit.answers.blocks import (
    BLOCK_FORMAT,
    BLOCK_SEPARATOR,
    ContextItem,
    block_span,
    render_block,
    render_context,
)
from evalkit.answers.placement import (
    Bucket,
    GoldBucket,
    Placement,
    PlacementPolicy,
    bucket_of,
    first_gold,
    parse_placement,
    place,
    score_order,
)
from evalkit.records import DOES_NOT_FIT, PROMPT_TOO_LONG, Document

__all__ = [
    "BLOCK_FORMAT",
    "BLOCK_SEPARATOR",
    "DOES_NOT_FIT",
    "PROMPT_TOO_LONG",
    "AssembledContext",
    "Bucket",
    "Budget",
    "ContextItem",
    "GoldBucket",
    "Overflow",
    "Placement",
    "PlacementPolicy",
    "assemble",
    "bucket_of",
    "file_items",
    "parse_placement",
    "render_block",
    "render_context",
    "stuff_context",
    "stuff_items",
]

Overflow = Literal["drop", "refuse", "fill"]
"""``drop``: the lowest-scored items go until the context fits its share; ``refuse``: all or nothing;
``fill``: as many of the best-scored as the whole input window holds (the ``stuff`` arm over a corpus)."""
# PROMPT_TOO_LONG and DOES_NOT_FIT live in evalkit.records: scoring reads them without importing answers.


# Records ----------------------------------------------------------------------


@dataclass(frozen=True)
class Budget:
    """Token limits of one model call."""

    window_tokens: int
    """The model's context window (input + output)."""
    max_output_tokens: int
    """``max_tokens`` of the call: reserved for the answer."""
    headroom_tokens: int
    """Reserved for the prompt template and counting error."""
    context_share: float = 0.5
    """Retrieved items take at most this share of the window (0 < share <= 1)."""

    def __post_init__(self) -> None:
        if self.window_tokens <= 0:
            raise ValueError(f"window_tokens must be positive, got {self.window_tokens}")
        if self.max_output_tokens < 0 or self.headroom_tokens < 0:
            raise ValueError("max_output_tokens and headroom_tokens must be >= 0")
        if not 0.0 < self.context_share <= 1.0:
            raise ValueError(f"context_share must lie in (0, 1], got {self.context_share}")

    @property
    def input_tokens(self) -> int:
        """Hard cap on system + context + question: ``window - max_output - headroom`` (may be negative)."""
        return self.window_tokens - self.max_output_tokens - self.headroom_tokens

    @property
    def share_tokens(self) -> int:
        """``floor(window * context_share)``: the most retrieved items may take."""
        return math.floor(self.window_tokens * self.context_share)

    def context_cap(self, fixed_tokens: int, *, use_share: bool = True) -> int:
        """Tokens left for the context once ``fixed_tokens`` (system + question) are placed."""
        left = self.input_tokens - fixed_tokens
        return min(left, self.share_tokens) if use_share else left


@dataclass(frozen=True)
class AssembledContext:
    """A prompt's parts after budgeting and placement."""

    system: str
    """The system prompt, never dropped."""
    context_text: str
    """Rendered blocks of ``items`` in order, joined by :data:`BLOCK_SEPARATOR`."""
    question: str
    """The question, never dropped."""
    items: tuple[ContextItem, ...]
    """Items in placed order."""
    dropped: tuple[ContextItem, ...]
    """Items left out for the budget, in the order they were dropped (lowest score first)."""
    system_tokens: int
    context_tokens: int
    question_tokens: int
    total_tokens: int
    """``system_tokens + context_tokens + question_tokens``."""
    context_cap: int
    """Tokens the context was allowed (see :meth:`Budget.context_cap`)."""
    fits: bool
    """False when the prompt cannot be sent as it stands (see ``reason``)."""
    reason: str
    """Empty when ``fits``; else :data:`PROMPT_TOO_LONG` or :data:`DOES_NOT_FIT`."""
    gold_bucket: GoldBucket
    """Third of ``context_text`` holding the gold block's midpoint, or ``none``."""
    gold_offset: int | None
    """Index in ``context_text`` where the gold block (its ``[doc_id]`` header) starts."""
    gold_end: int | None
    """Index in ``context_text`` just past the gold block."""


# Assembly ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Candidate:
    """One tried context: the placed indices, their rendering and its token count."""

    order: tuple[int, ...]
    text: str
    tokens: int


def assemble(
    system_prompt: str,
    question: str,
    items: Sequence[ContextItem],
    budget: Budget,
    count_tokens: Callable[[str], int],
    placement: Placement,
    seed: int,
    *,
    overflow: Overflow = "drop",
) -> AssembledContext:
    """Place ``items`` between ``system_prompt`` and ``question`` within ``budget``.

    ``overflow="drop"`` (retrieval arms) drops the lowest-scored whole items
    until the context fits ``budget.context_cap``; ``overflow="refuse"`` (the
    ``stuff`` arm) keeps every item, ignores ``context_share`` and reports
    ``fits=False, reason=DOES_NOT_FIT`` when they do not fit. When the system
    prompt and question alone exceed the input budget, every item is dropped
    and ``reason`` is :data:`PROMPT_TOO_LONG`. ``items`` is not modified;
    ``count_tokens`` sees the system prompt, the question and whole candidate
    contexts only.
    """
    system_tokens, question_tokens = count_tokens(system_prompt), count_tokens(question)
    cap = budget.context_cap(system_tokens + question_tokens, use_share=overflow == "drop")
    by_score = score_order(items)

    def build(n_kept: int) -> _Candidate:
        order = tuple(place(by_score[:n_kept], items, placement, seed))
        text = render_context(items[i] for i in order)
        return _Candidate(order, text, count_tokens(text))

    if cap < 0:
        n_kept, chosen = 0, _Candidate((), "", count_tokens(""))
    elif overflow == "refuse":
        n_kept, chosen = len(items), build(len(items))
    else:
        n_kept, chosen = _largest_fitting(len(items), cap, build)

    fits = cap >= 0 and chosen.tokens <= cap
    reason = "" if fits else (DOES_NOT_FIT if overflow == "refuse" and cap >= 0 else PROMPT_TOO_LONG)
    placed = tuple(items[i] for i in chosen.order)
    gold = first_gold(chosen.order, items)
    span = None if gold is None else block_span(placed, chosen.order.index(gold))
    gold_bucket: GoldBucket = "none" if span is None else bucket_of((span[0] + span[1]) // 2, len(chosen.text))
    return AssembledContext(
        system=system_prompt,
        context_text=chosen.text,
        question=question,
        items=placed,
        dropped=tuple(items[i] for i in reversed(by_score[n_kept:])),
        system_tokens=system_tokens,
        context_tokens=chosen.tokens,
        question_tokens=question_tokens,
        total_tokens=system_tokens + chosen.tokens + question_tokens,
        context_cap=cap,
        fits=fits,
        reason=reason,
        gold_bucket=gold_bucket,
        gold_offset=None if span is None else span[0],
        gold_end=None if span is None else span[1],
    )


def _largest_fitting(n: int, cap: int, build: Callable[[int], _Candidate]) -> tuple[int, _Candidate]:
    """Largest ``k <= n`` whose build fits ``cap``, by bisection (token counts grow with ``k``).

    Only a build that was counted and fits is returned (or ``k = 0``, whose
    empty context the caller reports when even that does not fit).
    """
    full = build(n)
    if full.tokens <= cap:
        return n, full
    lo, lo_built, hi = 0, build(0), n  # invariant: build(hi) does not fit; build(lo) fits unless lo == 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        built = build(mid)
        if built.tokens <= cap:
            lo, lo_built = mid, built
        else:
            hi = mid
    return lo, lo_built


# Arms -------------------------------------------------------------------------


def file_items(
    ranked: Sequence[ContextItem],
    documents: Mapping[str, Document],
    gold_doc_ids: Collection[str] | None = None,
) -> tuple[ContextItem, ...]:
    """The ``files`` arm: the whole documents ``ranked`` chunks came from, one per doc, in rank order.

    A file takes the score of its best-ranked chunk (so budgeting drops the
    lowest-ranked file first) and is gold when its doc_id is in
    ``gold_doc_ids``, or, when that is not given, when any of its chunks is.
    Budgeting is :func:`assemble`'s job.
    """
    first: dict[str, ContextItem] = {}
    gold_chunks: set[str] = set()
    for item in ranked:
        first.setdefault(item.doc_id, item)
        if item.is_gold:
            gold_chunks.add(item.doc_id)
    missing = [doc_id for doc_id in first if doc_id not in documents]
    if missing:
        raise KeyError(f"retrieved chunks name documents not in the corpus: {missing}")
    gold = gold_chunks if gold_doc_ids is None else set(gold_doc_ids)
    return tuple(
        whole_item(documents[doc_id], score=chunk.score, is_gold=doc_id in gold) for doc_id, chunk in first.items()
    )


def stuff_items(documents: Iterable[Document], gold_doc_ids: Collection[str] = ()) -> tuple[ContextItem, ...]:
    """The ``stuff`` arm: every document in scope, whole, in the given order, all scored 0.0."""
    return tuple(whole_item(doc, score=0.0, is_gold=doc.doc_id in gold_doc_ids) for doc in documents)


def stuff_context(
    system_prompt: str,
    question: str,
    documents: Iterable[Document],
    budget: Budget,
    count_tokens: Callable[[str], int],
    placement: Placement,
    seed: int,
    gold_doc_ids: Collection[str] = (),
) -> AssembledContext:
    """Every document in the context, or ``fits=False, reason=DOES_NOT_FIT``; never truncated."""
    items = stuff_items(documents, gold_doc_ids)
    return assemble(system_prompt, question, items, budget, count_tokens, placement, seed, overflow="refuse")


def whole_item(doc: Document, *, score: float, is_gold: bool) -> ContextItem:
    return ContextItem(
        unit_id=doc.doc_id,
        doc_id=doc.doc_id,
        start=0,
        end=len(doc.text),
        text=doc.text,
        score=score,
        is_gold=is_gold,
        title=doc.title,
    )
