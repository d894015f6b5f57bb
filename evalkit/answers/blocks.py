"""Context items and how they are rendered into a prompt's context (pure).

- **Item.** A :class:`ContextItem` is one unit that may go into the context: a
  retrieved chunk, or one whole file. Its text is verbatim and never cut.
- **Rendering.** Each item is the block :data:`BLOCK_FORMAT`
  (``[doc_id] title`` then a newline and the verbatim text; no trailing
  space when the title is empty) and blocks are joined by
  :data:`BLOCK_SEPARATOR` (a blank line). ``[doc_id]`` is what answers cite.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

BLOCK_FORMAT = "[{doc_id}] {title}\n{text}"
"""One rendered item; with an empty title the header is just ``[{doc_id}]``."""
BLOCK_SEPARATOR = "\n\n"
"""Between two rendered items (a blank line)."""


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


def render_block(item: ContextItem) -> str:
    """One item as :data:`BLOCK_FORMAT`; ``item.text`` appears verbatim."""
    header = f"[{item.doc_id}] {item.title}" if item.title else f"[{item.doc_id}]"
    return f"{header}\n{item.text}"


def render_context(items: Iterable[ContextItem]) -> str:
    """Blocks of ``items`` in order, joined by :data:`BLOCK_SEPARATOR`."""
    return BLOCK_SEPARATOR.join(render_block(item) for item in items)


def block_span(blocks: Sequence[ContextItem], position: int) -> tuple[int, int]:
    """``[start, end)`` of the block at ``position`` in the rendered context of ``blocks``."""
    start = sum(len(render_block(item)) + len(BLOCK_SEPARATOR) for item in blocks[:position])
    return start, start + len(render_block(blocks[position]))
