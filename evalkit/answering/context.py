"""Assemble a prompt's context under a token budget (pure).

One prompt is a system prompt, a context of rendered items and a question.
The system prompt and the question are never dropped; items are whole
retrieved chunks (the ``chunks`` arm), whole files those chunks came from
(the ``files`` arm, :func:`file_items`) or every document in scope (the
``stuff`` arm, :func:`stuff_items` and :func:`stuff_context`).

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
- **Rendering.** Each item is the block :data:`BLOCK_FORMAT`
  (``[doc_id] title`` then a newline and the verbatim text; no trailing
  space when the title is empty) and blocks are joined by
  :data:`BLOCK_SEPARATOR` (a blank line). ``[doc_id]`` is what answers cite.
- **Placement.** ``score``: best first (ties keep the given order).
  ``shuffle``: a permutation of the score order by ``random.Random(seed)``.
  ``gold_at``: the gold item goes at the start (``head``), the end (``tail``)
  or the slot whose block midpoint lies nearest the context's midpoint
  (``mid``); the others keep score order.
- **Gold item.** The first ``is_gold`` item, in the given (rank) order, that
  survived the budget. Its block occupies ``[gold_offset, gold_end)`` of
  ``context_text``.
- **Position bucket.** :func:`bucket_of` of the gold block's midpoint
  ``gold_offset + (gold_end - gold_offset) // 2`` against
  ``len(context_text)``: ``head`` when ``3 * midpoint < length``, ``mid``
  when ``3 * midpoint < 2 * length``, else ``tail`` (integer arithmetic, no
  float boundaries). The midpoint, not the start, makes the rule symmetric:
  reversing the order swaps head and tail, and a gold block placed last among
  two lands in ``tail``. ``none`` when no gold item is in the context.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from evalkit.records import Document

__all__ = [
    "BLOCK_FORMAT",
    "BLOCK_SEPARATOR",
    "DOES_NOT_FIT",
    "PROMPT_TOO_LONG",
    "AssembledContext",
    "Budget",
    "ContextItem",
    "Placement",
    "assemble",
    "bucket_of",
    "file_items",
    "parse_placement",
    "render_block",
    "render_context",
    "stuff_context",
    "stuff_items",
]

Bucket = Literal["head", "mid", "tail"]
GoldBucket = Literal["head", "mid", "tail", "none"]
PlacementPolicy = Literal["score", "shuffle", "gold_at"]
Overflow = Literal["drop", "refuse"]

BLOCK_FORMAT = "[{doc_id}] {title}\n{text}"
"""One rendered item; with an empty title the header is just ``[{doc_id}]``."""
BLOCK_SEPARATOR = "\n\n"
"""Between two rendered items (a blank line)."""

PROMPT_TOO_LONG = "system prompt and question exceed the budget"
"""``reason`` when nothing but the fixed parts already breaks the input budget."""
DOES_NOT_FIT = "does not fit"
"""``reason`` when the ``stuff`` arm's documents do not all fit (nothing is truncated)."""

_BUCKETS: tuple[Bucket, ...] = ("head", "mid", "tail")


# Records ----------------------------------------------------------------------


@dataclass(frozen=True)
class ContextItem:
    """One unit that may go into the context: a retrieved chunk or one whole file."""

    unit_id: str
    """Chunk id, parent-span id, or the doc_id for a whole file."""
    doc_id: str
    """Document the text comes from; rendered as ``[doc_id]`` for citation."""
    start: int
    """First code point of ``text`` in the document, inclusive."""
    end: int
    """Last code point of ``text`` in the document, exclusive."""
    text: str
    """Verbatim text, never cut or rewritten."""
    score: float
    """Retrieval (or rerank) score: the lowest is dropped first."""
    is_gold: bool
    """Holds gold evidence (as judged by ``relevance.py``)."""
    title: str = ""
    """Shown after ``[doc_id]`` in the block header."""

    def __post_init__(self) -> None:
        if math.isnan(self.score):
            raise ValueError(f"item {self.unit_id!r} has a NaN score: it cannot be ranked")


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
class Placement:
    """Where items go in the context; see :func:`parse_placement` for config strings."""

    policy: PlacementPolicy = "score"
    """``score``, ``shuffle`` or ``gold_at``."""
    position: Bucket | None = None
    """For ``gold_at`` only: ``head``, ``mid`` or ``tail``."""

    def __post_init__(self) -> None:
        if self.policy not in ("score", "shuffle", "gold_at"):
            raise ValueError(f"unknown placement policy {self.policy!r}")
        if (self.policy == "gold_at") != (self.position is not None):
            raise ValueError("a position is required for gold_at and allowed for gold_at only")
        if self.position is not None and self.position not in _BUCKETS:
            raise ValueError(f"gold_at position must be one of {_BUCKETS}, got {self.position!r}")

    @property
    def name(self) -> str:
        """Config spelling: ``score``, ``shuffle`` or ``gold_at:<position>``."""
        return f"gold_at:{self.position}" if self.position else self.policy


def parse_placement(name: str) -> Placement:
    """``"score"``, ``"shuffle"`` or ``"gold_at:head|mid|tail"`` as a :class:`Placement`."""
    policy, _, position = name.partition(":")
    if policy == "gold_at":
        return Placement("gold_at", position)  # type: ignore[arg-type]  # validated in __post_init__
    if position:
        raise ValueError(f"placement {name!r} takes no position")
    return Placement(policy)  # type: ignore[arg-type]


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


# Pure helpers -----------------------------------------------------------------


def bucket_of(offset: int, length: int) -> Bucket:
    """Third of a text of ``length`` characters that ``offset`` falls in.

    ``head`` when ``3 * offset < length``, ``mid`` when ``3 * offset < 2 * length``,
    else ``tail``; for length 9: offsets 0-2 head, 3-5 mid, 6-8 tail.
    """
    if length <= 0 or not 0 <= offset < length:
        raise ValueError(f"offset must lie in [0, length) with length > 0, got offset={offset}, length={length}")
    if 3 * offset < length:
        return "head"
    return "mid" if 3 * offset < 2 * length else "tail"


def render_block(item: ContextItem) -> str:
    """One item as :data:`BLOCK_FORMAT`; ``item.text`` appears verbatim."""
    header = f"[{item.doc_id}] {item.title}" if item.title else f"[{item.doc_id}]"
    return f"{header}\n{item.text}"


def render_context(items: Iterable[ContextItem]) -> str:
    """Blocks of ``items`` in order, joined by :data:`BLOCK_SEPARATOR`."""
    return BLOCK_SEPARATOR.join(render_block(item) for item in items)


def _score_order(items: Sequence[ContextItem]) -> list[int]:
    """Indices of ``items``, best score first; ties keep the given order."""
    return sorted(range(len(items)), key=lambda i: -items[i].score)


def _first_gold(kept: Sequence[int], items: Sequence[ContextItem]) -> int | None:
    """Index of the first gold item in the given (rank) order among ``kept``."""
    return next((i for i in sorted(kept) if items[i].is_gold), None)


def _mid_slot(gold_len: int, other_lens: Sequence[int]) -> int:
    """Insertion slot among ``other_lens`` putting the gold block's midpoint nearest the centre."""
    total = sum(other_lens) + gold_len + len(BLOCK_SEPARATOR) * len(other_lens)
    best_slot, best_gap, offset = 0, None, 0
    for slot in range(len(other_lens) + 1):
        gap = abs(2 * offset + gold_len - total)  # twice the distance of midpoint from centre
        if best_gap is None or gap < best_gap:
            best_slot, best_gap = slot, gap
        if slot < len(other_lens):
            offset += other_lens[slot] + len(BLOCK_SEPARATOR)
    return best_slot


def _place(kept: Sequence[int], items: Sequence[ContextItem], placement: Placement, seed: int) -> list[int]:
    """Order of the ``kept`` indices under ``placement``."""
    keep = set(kept)
    order = [i for i in _score_order(items) if i in keep]
    if placement.policy == "shuffle":
        random.Random(seed).shuffle(order)
        return order
    gold = _first_gold(kept, items)
    if placement.policy == "score" or gold is None:
        return order
    others = [i for i in order if i != gold]
    if placement.position == "head":
        slot = 0
    elif placement.position == "tail":
        slot = len(others)
    else:
        slot = _mid_slot(len(render_block(items[gold])), [len(render_block(items[i])) for i in others])
    return [*others[:slot], gold, *others[slot:]]


def _block_span(blocks: Sequence[ContextItem], position: int) -> tuple[int, int]:
    """``[start, end)`` of the block at ``position`` in the rendered context of ``blocks``."""
    start = sum(len(render_block(item)) + len(BLOCK_SEPARATOR) for item in blocks[:position])
    return start, start + len(render_block(blocks[position]))


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
    by_score = _score_order(items)

    def build(n_kept: int) -> _Candidate:
        order = tuple(_place(by_score[:n_kept], items, placement, seed))
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
    gold = _first_gold(chosen.order, items)
    span = None if gold is None else _block_span(placed, chosen.order.index(gold))
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
        _whole(documents[doc_id], score=chunk.score, is_gold=doc_id in gold) for doc_id, chunk in first.items()
    )


def stuff_items(documents: Iterable[Document], gold_doc_ids: Collection[str] = ()) -> tuple[ContextItem, ...]:
    """The ``stuff`` arm: every document in scope, whole, in the given order, all scored 0.0."""
    return tuple(_whole(doc, score=0.0, is_gold=doc.doc_id in gold_doc_ids) for doc in documents)


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


def _whole(doc: Document, *, score: float, is_gold: bool) -> ContextItem:
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
