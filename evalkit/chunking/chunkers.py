"""Chunkers: cut documents into span-exact, retrievable chunks.

Every chunker is a pure function ``(Document, ChunkingSpec) -> tuple[Chunk, ...]``
registered in :data:`CHUNKERS`. Whatever the chunker, its chunks satisfy:

- ``chunk.text == doc.text[chunk.start:chunk.end]`` and
  ``chunk.chunk_id == span_id(doc.doc_id, chunk.start, chunk.end)``;
- chunks come in document order (starts and ends strictly increase), ids are
  unique within a document, and no chunk is empty or whitespace-only;
- ``len(chunk.text) <= spec.chunk_size`` (a ``prefix`` is not counted);
- every non-whitespace character of the document lies in some chunk;
- consecutive chunks share at most ``spec.chunk_overlap`` characters.

Sizes are code points. Apart from ``fixed``, chunkers trim whitespace off
both ends of a chunk, so a chunk starts and ends on visible text.

All splitters except ``fixed`` share one engine, :func:`_cut`: a text's legal
cut positions are grouped into levels, coarsest first (paragraph, line,
sentence, clause, space; code and markdown add their own). A chunk ends at
the *furthest* cut of the *coarsest* level that fits in ``chunk_size``, and
the next chunk starts at the *earliest* cut of the coarsest level found in
the last ``chunk_overlap`` characters; with no cut there it falls back to a
character position that does not split a grapheme cluster or a "\\r\\n".
Cut positions are found once per document with regexes and looked up with
``bisect``, so a chunking costs O(n) and never builds strings piecewise.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from evalkit.records import Chunk, ChunkingSpec, Document, Span, span_id

__all__ = [
    "CHUNKERS",
    "ChunkingError",
    "chunk_corpus",
    "chunk_document",
    "code_chunks",
    "fixed_chunks",
    "markdown_chunks",
    "parent_child_chunks",
    "recursive_chunks",
    "validate_spec",
]

Chunker = Callable[[Document, ChunkingSpec], tuple[Chunk, ...]]
_Spans = list[tuple[int, int]]


class ChunkingError(ValueError):
    """A chunking spec (or corpus) that cannot be chunked as asked."""


# --------------------------------------------------------------------------
# Cut positions of plain text
# --------------------------------------------------------------------------

# Line breaks are the ones str.splitlines() knows; "\r\n" is one break.
_BREAKS = "\r\n\x0b\x0c\x1c-\x1e\x85\u2028\u2029"
_SPACE_RUN = re.compile(r"\s+")
# From a run's first line break to the run's end: the run starts at or
# before the match, after horizontal whitespace.
_BREAK_RUN = re.compile(rf"[{_BREAKS}]\s*")
_RARE_BREAKS = re.compile("[\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
# Punctuation stays on the piece it ends (cut at match end): a Chinese
# sentence keeps its 。. ASCII marks need a following space so "3.14",
# "1,000" and URLs are not cut.
_CLOSERS = "\"'”’)\\]）」』》〉】"
_SENTENCE_END = rf"[.!?]+[{_CLOSERS}]*(?=\s)|[。｡．！？；…‼⁇⁈⁉।॥։۔؟။።។]+[{_CLOSERS}]*"
_CLAUSE_END = rf"[,;:][{_CLOSERS}]*(?=\s)|[，、：﹐﹑､،]+"
_PUNCTUATION = re.compile(rf"({_SENTENCE_END})|{_CLAUSE_END}")
_NON_SPACE = re.compile(r"\S")

# Code points a cut must not land before: they belong to the previous one.
_JOINERS = frozenset("\u200d\ufe0e\ufe0f\u20e3")
_MARKS = frozenset(("Mn", "Mc", "Me"))


def _line_breaks(run: str) -> int:
    """Line breaks in a whitespace run, counting "\r\n" once."""
    breaks = run.count("\n") + run.count("\r") - run.count("\r\n")
    return breaks + len(_RARE_BREAKS.findall(run)) if breaks < 2 else breaks


def _text_levels(text: str) -> tuple[list[int], ...]:
    """Cut positions of prose, coarsest level first: paragraph, line, sentence, clause, space.

    Whitespace cuts sit where the visible text before a whitespace run ends
    (one cut per run), so a chunk that fits up to a word's end can take it;
    a run with a line break also separates lines, one with two separates
    paragraphs.
    """
    space = [m.start() for m in _SPACE_RUN.finditer(text)]
    paragraph: list[int] = []
    line: list[int] = []
    for match in _BREAK_RUN.finditer(text):
        run_start = space[bisect_right(space, match.start()) - 1]
        line.append(run_start)
        if _line_breaks(match.group()) > 1:
            paragraph.append(run_start)
    sentence: list[int] = []
    clause: list[int] = []
    for match in _PUNCTUATION.finditer(text):
        (sentence if match.lastindex else clause).append(match.end())
    return paragraph, line, sentence, clause, space


def _skip_space(text: str, pos: int, stop: int) -> int:
    """First non-whitespace position in ``[pos, stop)``, else ``stop``."""
    match = _NON_SPACE.search(text, pos, stop)
    return match.start() if match else stop


def _trim_end(text: str, start: int, end: int) -> int:
    """``end`` moved back over trailing whitespace, not past ``start``."""
    while end > start and text[end - 1].isspace():
        end -= 1
    return end


def _splits_cluster(text: str, pos: int) -> bool:
    """Whether cutting at ``pos`` would split "\\r\\n" or a grapheme cluster."""
    if pos <= 0 or pos >= len(text):
        return False
    char, before = text[pos], text[pos - 1]
    if before == "\r" and char == "\n":
        return True
    if before == "\u200d" or char in _JOINERS:
        return True
    # Skin-tone modifiers and emoji tag characters extend the previous emoji.
    if "\U0001f3fb" <= char <= "\U0001f3ff" or "\U000e0020" <= char <= "\U000e007f":
        return True
    return unicodedata.category(char) in _MARKS


# --------------------------------------------------------------------------
# The shared cutting engine
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Blocks:
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
class _Grid:
    """Where one text may be cut: positions by level, and blocks never cut."""

    text: str
    levels: tuple[list[int], ...]
    """Sorted cut positions per level, coarsest first."""
    atomic: _Blocks = field(default_factory=_Blocks)
    """Blocks that fit a chunk and must stay whole."""
    rigid: _Blocks = field(default_factory=_Blocks)
    """Blocks (tables, code) where an overlap never starts at an arbitrary character."""
    hard_levels: int = 0
    """A chunk ending at a cut of a level below this carries no overlap on."""
    start_levels: int | None = None
    """Overlaps start only at cuts of the first this many levels (None: any cut, else any character)."""

    def min_end(self, first: int) -> int:
        """Least end for a chunk whose new text begins at ``first``."""
        block = self.atomic.at(first)
        return block[1] if block else first + 1


def _pick_end(grid: _Grid, lowest: int, highest: int) -> tuple[int, int]:
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
    while safe > lowest and _splits_cluster(grid.text, safe):
        safe -= 1
    return (pos if _splits_cluster(grid.text, safe) else safe), len(grid.levels)


def _pick_start(grid: _Grid, lowest: int, before: int) -> int:
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
    while pos < before and _splits_cluster(grid.text, pos):
        pos += 1
    return min(pos, before)


def _cut(grid: _Grid, start: int, stop: int, size: int, overlap: int) -> _Spans:
    """Cut ``grid.text[start:stop]`` into trimmed spans of at most ``size`` characters.

    Each span ends at the best cut that fits; the next one starts up to
    ``overlap`` characters before it ends, but never so early that the next
    piece of new text (or atomic block) could not fit.
    """
    text = grid.text
    spans: _Spans = []
    first = _skip_space(text, start, stop)  # first character not yet in a chunk
    begin = first
    while first < stop:
        need = grid.min_end(first)
        highest = min(begin + size, stop)
        if highest >= stop:
            end, level = stop, -1
        else:
            end, level = _pick_end(grid, need, highest)
        last = _trim_end(text, begin, end)
        spans.append((begin, last))
        first = _skip_space(text, end, stop)
        if first >= stop:
            break
        lowest = max(last - overlap, grid.min_end(first) - size, begin + 1)
        if overlap and level >= grid.hard_levels and lowest < last:
            begin = _skip_space(text, _pick_start(grid, lowest, last), stop)
        else:
            begin = first
    return spans


def _chunk(
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


# --------------------------------------------------------------------------
# fixed, recursive, parent_child
# --------------------------------------------------------------------------


def fixed_chunks(doc: Document, spec: ChunkingSpec) -> tuple[Chunk, ...]:
    """Naive baseline: windows of ``chunk_size`` every ``chunk_size - chunk_overlap`` characters.

    Windows are not trimmed or moved to word boundaries; whitespace-only
    windows are skipped. The last window may be shorter.
    """
    _check_sizes(spec)
    text, size = doc.text, spec.chunk_size
    stride = size - spec.chunk_overlap
    chunks = []
    for start in range(0, len(text), stride):
        end = min(start + size, len(text))
        if _NON_SPACE.search(text, start, end):
            chunks.append(_chunk(doc, start, end))
        if end == len(text):
            break
    return tuple(chunks)


def recursive_chunks(doc: Document, spec: ChunkingSpec) -> tuple[Chunk, ...]:
    """Recursive character splitting (LangChain-style), span-exact.

    Separators, coarsest first: blank lines, line breaks, sentence ends
    (". ", "! ", "? ", 。！？；…｡ and kin), clause marks (，、,;:：), spaces,
    then single characters. Punctuation stays on the piece it ends. A chunk
    takes as many whole pieces of the coarsest separator present as fit, so
    a text with no separators at all (a long URL, a Chinese run without
    punctuation) falls back to character windows.
    """
    _check_sizes(spec)
    grid = _Grid(doc.text, _text_levels(doc.text))
    spans = _cut(grid, 0, len(doc.text), spec.chunk_size, spec.chunk_overlap)
    return tuple(_chunk(doc, s, e) for s, e in spans)


def parent_child_chunks(doc: Document, spec: ChunkingSpec) -> tuple[Chunk, ...]:
    """Small children for retrieval, each pointing at the larger parent to return.

    Parents are the ``recursive`` chunks of ``chunk_size`` / ``chunk_overlap``.
    Children are recursive chunks of ``child_size`` (default
    ``chunk_size // 4``) with no overlap. Parents overlap, children do not:
    the text two parents share is cut into children of the earlier parent
    only, so each child is retrieved once and lies inside its ``parent``
    (a :class:`Span` carrying the parent's text).
    """
    _check_sizes(spec)
    text = doc.text
    grid = _Grid(text, _text_levels(text))
    child_size = spec.child_size or max(1, spec.chunk_size // 4)
    chunks: list[Chunk] = []
    covered = 0
    for start, end in _cut(grid, 0, len(text), spec.chunk_size, spec.chunk_overlap):
        parent = Span(doc.doc_id, start, end, text[start:end])
        for s, e in _cut(grid, max(start, covered), end, child_size, 0):
            chunks.append(_chunk(doc, s, e, parent=parent))
        covered = end
    return tuple(chunks)


# --------------------------------------------------------------------------
# code
# --------------------------------------------------------------------------

# Top-level definitions: lines at indentation 0. Names are captured where the
# syntax gives one. Prose rarely matches: each form needs its punctuation.
_DEFINITION = re.compile(
    r"^(?:"
    r"(?:async[ \t]+)?def[ \t]+(\w+)[ \t]*[(\[]"  # Python def
    r"|(?:export[ \t]+(?:default[ \t]+)?)?(?:abstract[ \t]+)?class[ \t]+(\w+)"
    r"[ \t]*(?:[:({<]|extends\b|implements\b)"  # Python / JS / TS class
    r"|(?:export[ \t]+(?:default[ \t]+)?)?(?:async[ \t]+)?function\b\*?[ \t]*(\w*)[ \t]*[(<]"
    r"|(?:export[ \t]+)?(?:const|let|var)[ \t]+(\w+)[ \t]*(?::[^=\n]*)?=[ \t]*(?:async[ \t]*)?"
    r"(?:function\b|\([^)\n]*\)[ \t]*(?::[^=\n]*)?=>|\w+[ \t]*=>)"  # JS arrow / function value
    r"|export[ \t]+(?:default[ \t]+)?(?:declare[ \t]+)?"
    r"(?:interface|type|enum|namespace|const|let|var)[ \t]+(\w+)"  # other JS / TS exports
    r"|export[ \t]+(?:default\b|\{|\*)()"
    r"|(?:interface|enum|namespace)[ \t]+(\w+)[ \t]*[{<]"  # TS
    r"|func[ \t]*(?:\([^)\n]*\)[ \t]*)?(\w+)[ \t]*[(\[]"  # Go func / method
    r"|type[ \t]+(\w+)(?:\[[^\]\n]*\])?[ \t]+(?:struct|interface|func|map|chan)\b"  # Go type
    r"|(?:pub(?:\([^)\n]*\))?[ \t]+)?(?:(?:async|const|unsafe)[ \t]+)*fn[ \t]+(\w+)"  # Rust fn
    r"|(?:pub(?:\([^)\n]*\))?[ \t]+)?(?:struct|enum|trait|mod)[ \t]+(\w+)[ \t]*[{<(;]"
    r"|impl\b(?:[ \t]*<[^>\n]*>)?[ \t]+([\w:]+)"
    r")",
    re.MULTILINE,
)
# Lines that belong to the definition below them: decorators, attributes,
# comments (not a "#!" shebang).
_ATTACHED = re.compile(r"@|#(?!!)|//|/\*|\*|[ \t]+\*")


def _definitions(text: str) -> tuple[list[int], list[str]]:
    """Start of each top-level definition (with its decorators and comments) and its name."""
    starts: list[int] = []
    names: list[str] = []
    floor = 0
    for match in _DEFINITION.finditer(text):
        start = match.start()
        while start > floor:
            above = text.rfind("\n", 0, start - 1) + 1
            if above < floor or not _ATTACHED.match(text, above, start):
                break
            start = above
        if starts and start <= starts[-1]:
            continue
        starts.append(start)
        names.append(next((g for g in match.groups() if g), ""))
        floor = match.start() + 1
    return starts, names


def _definition_path(starts: list[int], names: list[str], start: int, end: int) -> tuple[str, ...]:
    """Name of the definition covering most of ``[start, end)`` (none before the first)."""
    i = bisect_right(starts, start) - 1
    best, best_share = "", 0
    while True:
        low = starts[i] if i >= 0 else 0
        high = starts[i + 1] if i + 1 < len(starts) else end
        share = min(end, high) - max(start, low)
        if share > best_share:
            best, best_share = (names[i] if i >= 0 else ""), share
        i += 1
        if i >= len(starts) or starts[i] >= end:
            break
    return (best,) if best else ()


def code_chunks(doc: Document, spec: ChunkingSpec) -> tuple[Chunk, ...]:
    """Source code cut at top-level definitions; other text cut like ``recursive``.

    Definitions are found by regex on lines at indentation 0: Python
    ``def``/``class`` (with decorators), JS/TS ``function``/``class``/
    ``export``/arrow constants, Go ``func``/``type``, Rust ``fn``/``struct``/
    ``impl``. Comment and decorator lines right above a definition go with
    it. Small definitions are merged up to ``chunk_size``; a larger one is
    cut at blank lines, then lines. No overlap is carried across a
    definition boundary (the next definition starts a fresh chunk), and an
    overlap starts at a line start or not at all.
    ``section_path`` is ``(name,)`` of the definition covering most of the
    chunk (a definition runs to the next one), or ``()`` when most of it is
    text before the first definition or an unnamed one.
    """
    _check_sizes(spec)
    text = doc.text
    starts, names = _definitions(text)
    boundaries = [_trim_end(text, 0, s) for s in starts]
    # Overlap starts at a line start or not at all: half a statement helps no one.
    grid = _Grid(text, (boundaries, *_text_levels(text)), hard_levels=1, start_levels=3)
    spans = _cut(grid, 0, len(text), spec.chunk_size, spec.chunk_overlap)
    return tuple(_chunk(doc, s, e, section_path=_definition_path(starts, names, s, e)) for s, e in spans)


# --------------------------------------------------------------------------
# markdown
# --------------------------------------------------------------------------

_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*")
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_FENCE_CLOSE = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*")
_TABLE_ROW = re.compile(r" {0,3}\|")
_TABLE_DELIMITER = re.compile(r" {0,3}\|[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*")


@dataclass(frozen=True)
class _Heading:
    """One ATX heading line."""

    start: int
    """Start of the heading line: its section begins here."""
    marker: int
    """Position of the first ``#``: where a chunk beginning with the heading starts."""
    end: int
    """End of the line's visible text."""
    level: int
    title: str


@dataclass(frozen=True)
class _Block:
    """A fenced code block or a pipe table."""

    start: int
    """First visible character of the block."""
    body: int
    """Where code lines (after the opening fence) or body rows begin."""
    end: int
    """End of the block's last visible character."""
    head: str
    """Repeated in ``prefix`` of chunks starting inside the body; ends with a newline."""
    guard: int
    """No cut before this: a table's header, delimiter and first row stay together."""


_CANDIDATE = re.compile(r"^ {0,3}[#`~|]", re.MULTILINE)


def _candidate_lines(text: str) -> list[tuple[int, int, int]]:
    """Lines that may be a heading, a fence or a table row: start, end of content, next line's start.

    Other lines never change the parse, so skipping them keeps parsing cheap.
    """
    lines = []
    for match in _CANDIDATE.finditer(text):
        start = match.start()
        newline = text.find("\n", start)
        following = len(text) if newline < 0 else newline + 1
        content_end = following if newline < 0 else newline
        if content_end > start and text[content_end - 1] == "\r":
            content_end -= 1
        lines.append((start, content_end, following))
    return lines


def _fence_close(text: str, lines: list[tuple[int, int, int]], i: int, fence: str) -> int | None:
    """Index of the line closing the fence opened on candidate line ``i``, if any."""
    for j in range(i + 1, len(lines)):
        close = _FENCE_CLOSE.fullmatch(text, lines[j][0], lines[j][1])
        if close and close.group(1)[0] == fence[0] and len(close.group(1)) >= len(fence):
            return j
    return None


def _parse_markdown(text: str) -> tuple[list[_Heading], list[_Block]]:
    """ATX headings, fenced code blocks and pipe tables, in document order."""
    lines = _candidate_lines(text)
    headings: list[_Heading] = []
    blocks: list[_Block] = []
    i = 0
    while i < len(lines):
        start, content_end, following = lines[i]
        fence = _FENCE_OPEN.fullmatch(text, start, content_end)
        if fence and not (fence.group(1)[0] == "`" and "`" in fence.group(2)):
            j = _fence_close(text, lines, i, fence.group(1))
            end = _trim_end(text, start, len(text) if j is None else lines[j][1])
            head = text[start:following] if text[start:following].endswith("\n") else ""
            blocks.append(_Block(fence.start(1), following, end, head, fence.start(1)))
            i = len(lines) if j is None else j + 1
            continue
        heading = _ATX.fullmatch(text, start, content_end)
        if heading:
            title = (heading.group(2) or "").strip()
            end = _trim_end(text, start, content_end)
            headings.append(_Heading(start, heading.start(1), end, len(heading.group(1)), title))
            i += 1
            continue
        if (
            _TABLE_ROW.match(text, start, content_end)
            and i + 1 < len(lines)
            and lines[i + 1][0] == following
            and _TABLE_DELIMITER.fullmatch(text, lines[i + 1][0], lines[i + 1][1])
        ):
            j = i + 2
            while j < len(lines) and lines[j][0] == lines[j - 1][2] and _TABLE_ROW.match(text, *lines[j][:2]):
                j += 1
            body = lines[i + 1][2]
            end = _trim_end(text, start, lines[j - 1][1])
            guard = _trim_end(text, start, lines[i + 2][1]) if j > i + 2 else end
            head = text[start:body] if text[start:body].endswith("\n") else ""
            blocks.append(_Block(text.index("|", start), body, end, head, guard))
            i = j
            continue
        i += 1
    return headings, blocks


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


def _markdown_grid(text: str, size: int, headings: list[_Heading], blocks: list[_Block]) -> _Grid:
    """Cut positions of a markdown text.

    Blocks that fit a chunk are atomic. An oversized fence may be cut only at
    (blank) lines, an oversized table only between rows after its first row.
    No chunk ends right after a heading line, so a heading always travels
    with the text below it.
    """
    paragraph, line, sentence, clause, space = _text_levels(text)
    atomic = [(b.start, b.end) for b in blocks if b.end - b.start <= size]
    whole = [(b.start, b.end) for b in blocks]
    # A one-character span around a heading's end drops exactly that cut.
    banned = {h.end for h in headings}
    after_headings = [(pos - 1, pos + 1) for pos in banned]
    coarse_ban = sorted(atomic + [(b.start, b.guard) for b in blocks if b.end - b.start > size] + after_headings)
    fine_ban = sorted(whole + after_headings)
    # A block starts a new paragraph; its cut sits where the text before it ends.
    edges = {pos for b in blocks for pos in (_trim_end(text, 0, b.start), b.end)} - banned
    levels = (
        sorted(set(_drop_inside(paragraph, coarse_ban)) | edges),
        _drop_inside(line, coarse_ban),
        *(_drop_inside(cuts, fine_ban) for cuts in (sentence, clause, space)),
    )
    atomic_blocks = _Blocks([a for a, _ in atomic], [b for _, b in atomic])
    return _Grid(text, levels, atomic_blocks, _Blocks([a for a, _ in whole], [b for _, b in whole]))


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
        first = _skip_space(self.text, start, end)
        return _trim_end(self.text, first, end) - first <= self.size

    def headings_only(self, start: int, end: int) -> bool:
        """Whether ``[start, end)`` is heading lines and nothing else."""
        root = len(self.starts) - 1
        i = bisect_left(self.starts, start, 0, root)
        if i == root or self.starts[i] != start:
            return False
        j = bisect_left(self.starts, end, 0, root)
        return not any(self.has_body[i:j])


def _outline(text: str, size: int, headings: list[_Heading]) -> _Outline:
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
    has_body = [bool(_NON_SPACE.search(text, h.end, own_ends[i])) for i, h in enumerate(headings)]
    return _Outline(text, size, starts, own_ends, ends, children, has_body)


_Region = tuple[int, int, bool]
"""``(start, end, whole)``: whole regions fit one chunk, others are cut by :func:`_cut`."""


def _plan(outline: _Outline, node: int) -> list[_Region]:
    """Regions of one section: whole if it fits, else its own text and children, siblings merged."""
    start, end = outline.starts[node], outline.ends[node]
    if outline.fits(start, end):
        return [(start, end, True)]
    items: list[list[_Region]] = []
    own_end = outline.own_ends[node]
    if _NON_SPACE.search(outline.text, start, own_end):
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
    _check_sizes(spec)
    text, size = doc.text, spec.chunk_size
    headings, blocks = _parse_markdown(text)
    grid = _markdown_grid(text, size, headings, blocks)
    labels = _Labels.of(headings, blocks)
    chunks = []
    for start, end, whole in _plan(_outline(text, size, headings), len(headings)):
        if whole:
            first = _skip_space(text, start, end)
            spans = [(first, _trim_end(text, first, end))] if first < end else []
        else:
            spans = _cut(grid, start, end, size, spec.chunk_overlap)
        for s, e in spans:
            path = labels.path(s, e)
            chunks.append(_chunk(doc, s, e, section_path=path, prefix=labels.prefix(s, path)))
    return tuple(chunks)


@dataclass(frozen=True)
class _Labels:
    """Section paths and prefixes of markdown chunks."""

    headings: list[_Heading]
    blocks: list[_Block]
    section_starts: list[int]
    """0, then each heading's start: section ``i`` (0 is the text before any heading)."""
    paths: list[tuple[str, ...]]
    """Heading path of each section in ``section_starts``."""
    bodies: list[int]
    """Where each block's body begins."""

    @classmethod
    def of(cls, headings: list[_Heading], blocks: list[_Block]) -> _Labels:
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
        crumb = "" if at_heading or not path else " > ".join(path) + "\n"
        b = bisect_right(self.bodies, start) - 1
        head = self.blocks[b].head if b >= 0 and start < self.blocks[b].end else ""
        return crumb + "\n" + head if crumb and head else crumb or head


def _heading_paths(headings: list[_Heading]) -> list[tuple[str, ...]]:
    """Heading path of the text before each heading and of each section, outermost first."""
    paths: list[tuple[str, ...]] = [()]
    stack: list[_Heading] = []
    for heading in headings:
        while stack and stack[-1].level >= heading.level:
            stack.pop()
        stack.append(heading)
        paths.append(tuple(h.title for h in stack))
    return paths


# --------------------------------------------------------------------------
# Spec checks and the public entry points
# --------------------------------------------------------------------------


def _check_sizes(spec: ChunkingSpec) -> None:
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


def validate_spec(spec: ChunkingSpec) -> None:
    """Raise :class:`ChunkingError` with a clear message if ``spec`` cannot be chunked."""
    if spec.chunker not in CHUNKERS:
        raise ChunkingError(f"unknown chunker {spec.chunker!r}; choose one of: {', '.join(sorted(CHUNKERS))}")
    _check_sizes(spec)
    if spec.child_size and spec.chunker != "parent_child":
        raise ChunkingError(
            f"child_size ({spec.child_size}) is only used by the parent_child chunker; set it to 0 for {spec.chunker!r}"
        )


def chunk_document(doc: Document, spec: ChunkingSpec) -> tuple[Chunk, ...]:
    """Chunk one document with the chunker ``spec`` names."""
    validate_spec(spec)
    return CHUNKERS[spec.chunker](doc, spec)


def chunk_corpus(docs: Sequence[Document], spec: ChunkingSpec) -> tuple[Chunk, ...]:
    """Chunk every document, in order; doc ids must be unique so chunk ids are."""
    validate_spec(spec)
    chunker = CHUNKERS[spec.chunker]
    seen: set[str] = set()
    chunks: list[Chunk] = []
    for doc in docs:
        if doc.doc_id in seen:
            raise ChunkingError(f"duplicate doc_id {doc.doc_id!r}: its chunk ids would collide")
        seen.add(doc.doc_id)
        chunks.extend(chunker(doc, spec))
    return tuple(chunks)


CHUNKERS: Mapping[str, Chunker] = MappingProxyType(
    {
        "fixed": fixed_chunks,
        "recursive": recursive_chunks,
        "markdown": markdown_chunks,
        "code": code_chunks,
        "parent_child": parent_child_chunks,
    }
)
"""Chunker name (``ChunkingSpec.chunker``) to chunking function."""
