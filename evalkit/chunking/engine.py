"""The shared cutting engine: one text, its cut levels, spans of at most ``chunk_size``.

All splitters except ``fixed`` use :func:`cut`: a chunk ends at the
*furthest* cut of the *coarsest* level that fits in ``chunk_size``, and the
next chunk starts at the *earliest* cut of the coarsest level found in the
last ``chunk_overlap`` characters; with no cut there it falls back to a
character position that does not split a grapheme cluster or a "\\r\\n".
Cut positions are looked up with ``bisect``, so a chunking costs O(n) and
never builds strings piecewise. Also here: :class:`ChunkingError`, the size
checks every chunker runs, and :func:`make_chunk` (the one place a
:class:`Chunk` is built, so ``text == doc.text[start:end]`` by construction).
Pure. May import: records, chunking.text_cuts.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field

from evalkit.chunking.text_cuts import skip_space, splits_cluster, trim_end
from evalkit.records import Chunk, ChunkingSpec, Document, Span, span_id

Spans = list[tuple[int, int]]


class ChunkingError(ValueError):
    """A chunking spec (or corpus) that cannot be chunked as asked."""


def check_sizes(spec: ChunkingSpec) -> None:
    """Raise :class:`ChunkingError` unless the spec's sizes make sense together."""
    for name in ("chunk_size", "chunk_overlap", "child_size"):
        value = getattr(spec, name)
        if not isinstance(value, int) or isinstance(value, bool):
            raise ChunkingError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
    size, overlap, child = spec.chunk_size, spec.chunk_overlap, spec.child_size
    if size < 1:
        raise ChunkingError(f"chunk_size must be at least 1 character, got {size}")
    if overlap < 0:
        raise ChunkingError(f"chunk_overlap must be 0 or more characters, got {overlap}")
    if overlap >= size:
        raise ChunkingError(
            f"chunk_overlap ({overlap}) must be smaller than chunk_size ({size}): every chunk must add new text"
        )
    if child < 0:
        raise ChunkingError(f"child_size must be 0 (default: chunk_size // 4) or more, got {child}")
    if child > size:
        raise ChunkingError(
            f"child_size ({child}) must not exceed chunk_size ({size}): children are cut inside parents"
        )


@dataclass(frozen=True)
class Blocks:
    """Sorted, disjoint ``[start, end)`` blocks of a text."""

    starts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)

    def at(self, pos: int) -> tuple[int, int] | None:
        """The block holding ``pos`` (start inclusive), if any."""
        i = bisect_right(self.starts, pos) - 1
        if i >= 0 and pos < self.ends[i]:
            return self.starts[i], self.ends[i]
        return None


@dataclass(frozen=True)
class Grid:
    """Where one text may be cut: positions by level, and blocks never cut."""

    text: str
    levels: tuple[list[int], ...]
    """Sorted cut positions per level, coarsest first."""
    atomic: Blocks = field(default_factory=Blocks)
    """Blocks that fit a chunk and must stay whole."""
    rigid: Blocks = field(default_factory=Blocks)
    """Blocks (tables, code) where an overlap never starts at an arbitrary character."""
    hard_levels: int = 0
    """A chunk ending at a cut of a level below this carries no overlap on."""
    start_levels: int | None = None
    """Overlaps start only at cuts of the first this many levels (None: any cut, else any character)."""

    def min_end(self, first: int) -> int:
        """Least end for a chunk whose new text begins at ``first``."""
        block = self.atomic.at(first)
        return block[1] if block else first + 1


def _pick_end(grid: Grid, lowest: int, highest: int) -> tuple[int, int]:
    """End a chunk at the furthest cut of the coarsest level in ``[lowest, highest]``.

    Returns the position and its level (``len(levels)`` for a character cut).
    """
    for level, cuts in enumerate(grid.levels):
        i = bisect_right(cuts, highest) - 1
        if i >= 0 and cuts[i] >= lowest:
            return cuts[i], level
    # No separator fits: cut by characters, but before an atomic block rather
    # than inside it, and never inside a grapheme cluster unless it is the
    # only way to make progress.
    pos = highest
    block = grid.atomic.at(pos)
    if block and block[0] < pos and block[0] >= lowest:
        pos = block[0]
    safe = pos
    while safe > lowest and splits_cluster(grid.text, safe):
        safe -= 1
    return (pos if splits_cluster(grid.text, safe) else safe), len(grid.levels)


def _pick_start(grid: Grid, lowest: int, before: int) -> int:
    """Start an overlapping chunk at the earliest cut of the coarsest level in ``[lowest, before)``."""
    for cuts in grid.levels[: grid.start_levels]:
        i = bisect_left(cuts, lowest)
        if i < len(cuts) and cuts[i] < before:
            return cuts[i]
    if grid.start_levels is not None:
        return before  # no overlap rather than one from mid-line
    # Exactly ``overlap`` characters back, moved forward out of a table or
    # code block (a half row is noise) and off a grapheme cluster's inside.
    pos = lowest
    block = grid.rigid.at(pos)
    if block and block[0] < pos:
        pos = block[1]
    while pos < before and splits_cluster(grid.text, pos):
        pos += 1
    return min(pos, before)


def cut(grid: Grid, start: int, stop: int, size: int, overlap: int) -> Spans:
    """Cut ``grid.text[start:stop]`` into trimmed spans of at most ``size`` characters.

    Each span ends at the best cut that fits; the next one starts up to
    ``overlap`` characters before it ends, but never so early that the next
    piece of new text (or atomic block) could not fit.
    """
    text = grid.text
    spans: Spans = []
    first = skip_space(text, start, stop)  # first character not yet in a chunk
    begin = first
    while first < stop:
        need = grid.min_end(first)
        highest = min(begin + size, stop)
        if highest >= stop:
            end, level = stop, -1
        else:
            end, level = _pick_end(grid, need, highest)
        last = trim_end(text, begin, end)
        spans.append((begin, last))
        first = skip_space(text, end, stop)
        if first >= stop:
            break
        lowest = max(last - overlap, grid.min_end(first) - size, begin + 1)
        if overlap and level >= grid.hard_levels and lowest < last:
            begin = skip_space(text, _pick_start(grid, lowest, last), stop)
        else:
            begin = first
    return spans


def make_chunk(
    doc: Document,
    start: int,
    end: int,
    *,
    section_path: tuple[str, ...] = (),
    prefix: str = "",
    parent: Span | None = None,
) -> Chunk:
    """The chunk of ``doc`` spanning ``[start, end)``."""
    return Chunk(
        chunk_id=span_id(doc.doc_id, start, end),
        doc_id=doc.doc_id,
        start=start,
        end=end,
        text=doc.text[start:end],
        section_path=section_path,
        prefix=prefix,
        parent=parent,
    )
