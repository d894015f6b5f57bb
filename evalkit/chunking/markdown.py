"""The ``markdown`` chunker: sections by heading, fences and tables kept whole, breadcrumbs in ``prefix``."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field

from evalkit.chunking.engine import Blocks, Grid, check_sizes, cut, make_chunk
from evalkit.chunking.markdown_parse import Block, Heading, parse_markdown
from evalkit.chunking.text_cuts import NON_SPACE, skip_space, text_levels, trim_end
from evalkit.records import Chunk, ChunkingSpec, Document


def _drop_inside(cuts: list[int], spans: list[tuple[int, int]]) -> list[int]:
    """``cuts`` without those strictly inside one of the ``spans`` (sorted by start)."""
    kept: list[int] = []
    done = 0
    for low, high in spans:
        first = max(bisect_right(cuts, low), done)
        kept.extend(cuts[done:first])
        done = max(bisect_left(cuts, high), first)
    kept.extend(cuts[done:])
    return kept


def _markdown_grid(text: str, size: int, headings: list[Heading], blocks: list[Block]) -> Grid:
    """Cut positions of a markdown text.

    Blocks that fit a chunk are atomic. An oversized fence may be cut only at
    (blank) lines, an oversized table only between rows after its first row.
    No chunk ends right after a heading line, so a heading always travels
    with the text below it.
    """
    paragraph, line, sentence, clause, space = text_levels(text)
    atomic = [(b.start, b.end) for b in blocks if b.end - b.start <= size]
    whole = [(b.start, b.end) for b in blocks]
    # A one-character span around a heading's end drops exactly that cut.
    banned = {h.end for h in headings}
    after_headings = [(pos - 1, pos + 1) for pos in banned]
    coarse_ban = sorted(atomic + [(b.start, b.guard) for b in blocks if b.end - b.start > size] + after_headings)
    fine_ban = sorted(whole + after_headings)
    # A block starts a new paragraph; its cut sits where the text before it ends.
    edges = {pos for b in blocks for pos in (trim_end(text, 0, b.start), b.end)} - banned
    levels = (
        sorted(set(_drop_inside(paragraph, coarse_ban)) | edges),
        _drop_inside(line, coarse_ban),
        *(_drop_inside(cuts, fine_ban) for cuts in (sentence, clause, space)),
    )
    atomic_blocks = Blocks([a for a, _ in atomic], [b for _, b in atomic])
    return Grid(text, levels, atomic_blocks, Blocks([a for a, _ in whole], [b for _, b in whole]))


@dataclass(frozen=True)
class _Outline:
    """The heading tree of one markdown text, as flat per-node lists.

    Nodes ``0..len(headings)-1`` are headings; node ``len(headings)`` is the
    root (the text before the first heading is its own content).
    """

    text: str
    size: int
    starts: list[int]
    own_ends: list[int]
    ends: list[int]
    children: list[list[int]]
    has_body: list[bool]

    def fits(self, start: int, end: int) -> bool:
        """Whether ``[start, end)``, trimmed, fits one chunk."""
        first = skip_space(self.text, start, end)
        return trim_end(self.text, first, end) - first <= self.size

    def headings_only(self, start: int, end: int) -> bool:
        """Whether ``[start, end)`` is heading lines and nothing else."""
        root = len(self.starts) - 1
        i = bisect_left(self.starts, start, 0, root)
        if i == root or self.starts[i] != start:
            return False
        j = bisect_left(self.starts, end, 0, root)
        return not any(self.has_body[i:j])


def _outline(text: str, size: int, headings: list[Heading]) -> _Outline:
    """Build the heading tree: a heading's section runs to the next heading of its level or above."""
    n, count = len(text), len(headings)
    starts = [h.start for h in headings] + [0]
    own_ends = [h.start for h in headings[1:]] + [n] if count else []
    own_ends.append(headings[0].start if count else n)
    ends = [n] * (count + 1)
    children: list[list[int]] = [[] for _ in range(count + 1)]
    stack = [count]
    for i, heading in enumerate(headings):
        while stack[-1] != count and headings[stack[-1]].level >= heading.level:
            ends[stack.pop()] = heading.start
        children[stack[-1]].append(i)
        stack.append(i)
    has_body = [bool(NON_SPACE.search(text, h.end, own_ends[i])) for i, h in enumerate(headings)]
    return _Outline(text, size, starts, own_ends, ends, children, has_body)


_Region = tuple[int, int, bool]
"""``(start, end, whole)``: whole regions fit one chunk, others are cut by :func:`cut`."""


def _plan(outline: _Outline, node: int) -> list[_Region]:
    """Regions of one section: whole if it fits, else its own text and children, siblings merged."""
    start, end = outline.starts[node], outline.ends[node]
    if outline.fits(start, end):
        return [(start, end, True)]
    items: list[list[_Region]] = []
    own_end = outline.own_ends[node]
    if NON_SPACE.search(outline.text, start, own_end):
        items.append([(start, own_end, outline.fits(start, own_end))])
    items.extend(_plan(outline, child) for child in outline.children[node])
    return _merge_siblings(outline, items)


def _merge_siblings(outline: _Outline, items: list[list[_Region]]) -> list[_Region]:
    """Merge runs of whole sibling regions greedily up to the chunk size.

    A run that is only heading lines is glued to the region after it, so a
    heading is never a chunk of its own unless nothing follows it.
    """
    out: list[_Region] = []
    run: tuple[int, int] | None = None
    for item in items:
        _, first_end, first_whole = item[0]
        if run is not None:
            if len(item) == 1 and first_whole and outline.fits(run[0], first_end):
                run = (run[0], first_end)
                continue
            if outline.headings_only(*run):
                glued = (run[0], first_end, outline.fits(run[0], first_end))
                item = [glued, *item[1:]]
            else:
                out.append((run[0], run[1], True))
            run = None
        if len(item) == 1 and item[0][2]:
            run = (item[0][0], item[0][1])
        else:
            out.extend(item)
    if run is not None:
        out.append((run[0], run[1], True))
    return out


def _common_prefix(paths: Sequence[tuple[str, ...]]) -> tuple[str, ...]:
    """Longest tuple every path starts with."""
    common = paths[0]
    for path in paths[1:]:
        n = 0
        while n < min(len(common), len(path)) and common[n] == path[n]:
            n += 1
        common = common[:n]
    return common


def markdown_chunks(doc: Document, spec: ChunkingSpec) -> tuple[Chunk, ...]:
    """Structure-aware markdown chunking.

    - ATX headings (``#``..``######``, not inside fences) split the text into
      sections. A section that fits ``chunk_size`` is one chunk, and runs of
      small sibling sections are merged up to ``chunk_size``; a larger one
      yields its own text and its subsections in turn, its own text being
      cut like ``recursive``. A heading with no text of its own goes with
      what follows it.
    - ``section_path`` is the heading path shared by everything the chunk
      touches, outermost first: a chunk inside "Parameters" under
      "RateLimiter" under "API reference" has all three; merged sibling
      sections get their parent's path.
    - A fenced code block is never cut if it fits a chunk; a larger one is
      cut at blank lines or lines, and later pieces get the opening fence
      line (e.g. "```python\\n") in ``prefix``.
    - A pipe table that fits is never cut; a larger one is cut between rows
      (never before its first row), and every piece that starts inside the
      body carries the header and delimiter rows in ``prefix``, so that
      ``prefix + text`` renders as a table. ``start/end/text`` map to the
      source rows only.
    - Breadcrumb: a chunk that does not begin with the heading line of its
      deepest section (the last entry of ``section_path``) gets
      ``" > ".join(section_path) + "\\n"`` in ``prefix``; one that begins
      with that heading line gets none. A table header or fence line
      follows the breadcrumb after a blank line, so the prefix renders.
    - Overlap applies within a section's text; chunks of different sections
      do not overlap.
    """
    check_sizes(spec)
    text, size = doc.text, spec.chunk_size
    headings, blocks = parse_markdown(text)
    grid = _markdown_grid(text, size, headings, blocks)
    labels = _Labels.of(headings, blocks)
    chunks = []
    for start, end, whole in _plan(_outline(text, size, headings), len(headings)):
        if whole:
            first = skip_space(text, start, end)
            spans = [(first, trim_end(text, first, end))] if first < end else []
        else:
            spans = cut(grid, start, end, size, spec.chunk_overlap)
        for s, e in spans:
            path = labels.path(s, e)
            chunks.append(make_chunk(doc, s, e, section_path=path, prefix=labels.prefix(s, path)))
    return tuple(chunks)


@dataclass(frozen=True)
class _Labels:
    """Section paths and prefixes of markdown chunks."""

    headings: list[Heading]
    blocks: list[Block]
    section_starts: list[int]
    """0, then each heading's start: section ``i`` (0 is the text before any heading)."""
    paths: list[tuple[str, ...]]
    """Heading path of each section in ``section_starts``."""
    bodies: list[int]
    """Where each block's body begins."""
    joined: dict[tuple[tuple[str, ...], int], str] = field(default_factory=dict)
    """Prefix per (path, block index or -1): built once, so chunks of one section share one string."""

    @classmethod
    def of(cls, headings: list[Heading], blocks: list[Block]) -> _Labels:
        """Labels for a text with these headings and blocks."""
        starts = [0] + [h.start for h in headings]
        return cls(headings, blocks, starts, _heading_paths(headings), [b.body for b in blocks])

    def path(self, start: int, end: int) -> tuple[str, ...]:
        """The heading path every section the chunk touches shares."""
        low = bisect_right(self.section_starts, start) - 1
        high = bisect_right(self.section_starts, end - 1) - 1
        return _common_prefix(self.paths[low : high + 1])

    def prefix(self, start: int, path: tuple[str, ...]) -> str:
        """Breadcrumb unless the chunk begins with its section's heading, then a block's head."""
        low = bisect_right(self.section_starts, start) - 1
        at_heading = low > 0 and self.headings[low - 1].marker == start and self.paths[low] == path
        b = bisect_right(self.bodies, start) - 1
        if not (b >= 0 and start < self.blocks[b].end):
            b = -1
        if at_heading or not path:
            return self.blocks[b].head if b >= 0 else ""
        key = (path, b)
        if key not in self.joined:
            crumb = " > ".join(path) + "\n"
            self.joined[key] = crumb + "\n" + self.blocks[b].head if b >= 0 and self.blocks[b].head else crumb
        return self.joined[key]


def _heading_paths(headings: list[Heading]) -> list[tuple[str, ...]]:
    """Heading path of the text before each heading and of each section, outermost first."""
    paths: list[tuple[str, ...]] = [()]
    stack: list[Heading] = []
    for heading in headings:
        while stack and stack[-1].level >= heading.level:
            stack.pop()
        stack.append(heading)
        paths.append(tuple(h.title for h in stack))
    return paths
