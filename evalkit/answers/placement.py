"""Where items go in the context, and which third of it holds the gold item (pure).

- **Placement.** ``score``: best first (ties keep the given order).
  ``shuffle``: a permutation of the score order by ``random.Random(seed)``.
  ``gold_at``: the gold item goes at the start (``head``), the end (``tail``)
  or the slot whose block midpoint lies nearest the context's midpoint
  (``mid``); the others keep score order.
- **Gold item.** The first ``is_gold`` item, in the given (rank) order, that
  survived the budget.
- **Position bucket.** :func:`bucket_of` of the gold block's midpoint
  ``gold_offset + (gold_end - gold_offset) // 2`` against
  ``len(context_text)``: ``head`` when ``3 * midpoint < length``, ``mid``
  when ``3 * midpoint < 2 * length``, else ``tail`` (integer arithmetic, no
  float boundaries). The midpoint, not the start, makes the rule symmetric:
  reversing the order swaps head and tail, and a gold block placed last among
  two lands in ``tail``. ``none`` when no gold item is in the context.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from evalkit.answers.blocks import BLOCK_SEPARATOR, ContextItem, render_block

Bucket = Literal["head", "mid", "tail"]
GoldBucket = Literal["head", "mid", "tail", "none"]
PlacementPolicy = Literal["score", "shuffle", "gold_at"]

_BUCKETS: tuple[Bucket, ...] = ("head", "mid", "tail")


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


def score_order(items: Sequence[ContextItem]) -> list[int]:
    """Indices of ``items``, best score first; ties keep the given order."""
    return sorted(range(len(items)), key=lambda i: -items[i].score)


def first_gold(kept: Sequence[int], items: Sequence[ContextItem]) -> int | None:
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


def place(kept: Sequence[int], items: Sequence[ContextItem], placement: Placement, seed: int) -> list[int]:
    """Order of the ``kept`` indices under ``placement``."""
    keep = set(kept)
    order = [i for i in score_order(items) if i in keep]
    if placement.policy == "shuffle":
        random.Random(seed).shuffle(order)
        return order
    gold = first_gold(kept, items)
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
