"""Where the gold ended up, by block and by character, and the paired gold placement (pure).

Two views of "where the gold sits", both recorded on every row:

- **By block** (:func:`block_bucket`): the gold block's index among the
  ``n`` blocks, by its centre ``(2 i + 1) / 2n``: ``head`` when that lies in
  the first third, ``mid`` in the second, ``tail`` in the last (integer
  arithmetic). Five blocks: 0-1 head, 2 mid, 3-4 tail; two blocks: head, tail.
- **By character** (:func:`char_bucket`): the third of the context text
  holding the gold block's midpoint (:func:`evalkit.answers.context.bucket_of`).

A context of a single block is ``only`` in both views: it is neither the head
nor the middle of anything. ``none``: no gold item in the context.

The paired placement (:func:`place_gold`) puts the gold block first, in the
middle slot (``len(others) // 2``) or last, and the other blocks in a seeded
shuffle; with one seed per repeat shared by head, mid and tail, the three
prompts of a repeat differ only in where the gold block is.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Literal

from evalkit.answers.blocks import BLOCK_SEPARATOR as _SEPARATOR
from evalkit.answers.blocks import ContextItem, block_span, render_block
from evalkit.answers.context import AssembledContext, Placement, bucket_of, render_context

PositionBucket = Literal["only", "head", "mid", "tail", "none"]
POSITION_BUCKETS: tuple[str, ...] = ("only", "head", "mid", "tail", "none")
"""Buckets in the order the summary lists them (``all`` follows)."""


def block_bucket(index: int | None, n_blocks: int) -> PositionBucket:
    """Third of the block list holding block ``index`` (by its centre); ``only`` for one block, ``none`` for no gold."""
    if index is None:
        return "none"
    if not 0 <= index < n_blocks:
        raise ValueError(f"block index {index} outside 0..{n_blocks - 1}")
    if n_blocks == 1:
        return "only"
    centre2 = 2 * index + 1  # twice the centre, in blocks; compare 3 * centre with n and 2n
    if 3 * centre2 < 2 * n_blocks:
        return "head"
    return "mid" if 3 * centre2 < 4 * n_blocks else "tail"


def gold_block_index(items: tuple[ContextItem, ...], gold_offset: int | None) -> int | None:
    """Index of the block that starts at ``gold_offset`` (the first gold item's block), or None."""
    if gold_offset is None:
        return None
    offset = 0
    for index, item in enumerate(items):
        if offset == gold_offset:
            return index
        offset += len(render_block(item)) + len(_SEPARATOR)
    raise ValueError(f"no block starts at offset {gold_offset}")


def char_bucket(assembled: AssembledContext) -> PositionBucket:
    """The character bucket of an assembled context, with a single block reported as ``only``."""
    if assembled.gold_offset is not None and len(assembled.items) == 1:
        return "only"
    return assembled.gold_bucket


def place_gold(assembled: AssembledContext, placement: Placement, seed: int) -> AssembledContext:
    """The same kept items with the gold block at ``placement.position`` and the others shuffled by ``seed``.

    The kept set does not change (the budget does not depend on the order), so
    token counts carry over; the text, the gold span and its bucket are redone.
    """
    index = gold_block_index(assembled.items, assembled.gold_offset)
    if placement.policy != "gold_at" or index is None:
        return assembled
    gold = assembled.items[index]
    others = [item for i, item in enumerate(assembled.items) if i != index]
    random.Random(seed).shuffle(others)
    slot = {"head": 0, "mid": len(others) // 2, "tail": len(others)}[str(placement.position)]
    placed = (*others[:slot], gold, *others[slot:])
    text = render_context(placed)
    start, end = block_span(placed, slot)
    return replace(
        assembled,
        items=placed,
        context_text=text,
        gold_offset=start,
        gold_end=end,
        gold_bucket=bucket_of((start + end) // 2, len(text)),
    )
