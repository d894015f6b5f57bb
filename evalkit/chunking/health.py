"""Chunk health: where a chunking cuts through the structure of its documents.

:func:`chunk_health` is pure: documents and one chunking's chunks in, a frozen
:class:`ChunkHealth` out. Four checks, each a count plus up to five examples:

- ``mid_sentence``: a chunk that starts mid-sentence — the visible text
  before it (skipping spaces and tabs) does not end a sentence (``.!?…`` and
  Chinese ``。！？；``, optionally followed by closing quotes or brackets) and
  is not a line break, and the chunk does not start at the document's start.
  An ASCII mark must be followed by whitespace ("3.|14" is mid-sentence).
- ``lone_heading``: a chunk that is only Markdown heading lines, or that ends
  with a heading whose section body lies after the chunk.
- ``split_table``: a chunk holding body rows of a pipe table but neither the
  table's header and delimiter rows nor a ``prefix`` carrying them.
- ``split_code``: a chunk that starts or ends strictly inside a fenced code
  block or inside an indented Python ``def``/``class`` (with its decorators);
  the example names the innermost definition.

Documents are parsed by :mod:`evalkit.chunking.health_structure`,
independently of the chunkers, so a parser bug in a chunker does not hide
itself. Markdown checks skip source files stored as
documents (``meta.code_lang`` or a code file suffix): their ``#`` lines are
comments, not headings. Python definitions are looked for in Python
documents and in fenced blocks tagged ``python``/``py``.

Pure. May import: records, chunking.health_structure, chunking.health_lookup.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any

from evalkit.chunking.health_lookup import BackScan, innermost
from evalkit.chunking.health_structure import Structure, document_structure
from evalkit.records import Chunk, Document

__all__ = ["ChunkExample", "ChunkHealth", "HealthCheck", "chunk_health"]

MAX_EXAMPLES = 5

_ASCII_ENDS = ".!?"
_WIDE_ENDS = "。！？；…｡．‼⁇⁈⁉"
_CLOSERS = "\"'”’)]）」』》〉】*_`"
_HSPACE = " \t\u3000\u00a0"
_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


@dataclass(frozen=True)
class ChunkExample:
    """One chunk a check flagged."""

    chunk_id: str
    doc_id: str
    start: int
    """Chunk start in the document (code points)."""
    end: int
    """Chunk end in the document, exclusive."""
    detail: str
    """What is wrong, with the text around the cut (newlines shown as ``⏎``)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {
            "chunk_id": self.chunk_id,
            "doc_id": self.doc_id,
            "start": self.start,
            "end": self.end,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class HealthCheck:
    """Result of one check over one chunking."""

    name: str
    """Rule name: mid_sentence, lone_heading, split_table, split_code."""
    description: str
    """One line saying what the rule flags."""
    count: int
    """Chunks flagged."""
    n_chunks: int
    """Chunks examined (the denominator of :attr:`share`)."""
    examples: tuple[ChunkExample, ...]
    """Up to five flagged chunks, in corpus order."""

    @property
    def share(self) -> float:
        """Flagged chunks over all chunks (0.0 for no chunks)."""
        return self.count / self.n_chunks if self.n_chunks else 0.0

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {
            "name": self.name,
            "description": self.description,
            "count": self.count,
            "share": self.share,
            "examples": [e.to_dict() for e in self.examples],
        }


@dataclass(frozen=True)
class ChunkHealth:
    """The four chunk-health checks of one chunking."""

    n_documents: int
    n_chunks: int
    mid_sentence: HealthCheck
    lone_heading: HealthCheck
    split_table: HealthCheck
    split_code: HealthCheck

    @property
    def checks(self) -> tuple[HealthCheck, ...]:
        """Every check, in a fixed order."""
        return (self.mid_sentence, self.lone_heading, self.split_table, self.split_code)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON: counts, shares and examples per check."""
        return {
            "n_documents": self.n_documents,
            "n_chunks": self.n_chunks,
            "checks": {c.name: c.to_dict() for c in self.checks},
        }

    def findings(self, chunking: str) -> list[dict[str, Any]]:
        """Rows for ``chunk_health.json`` (``{"findings": [...]}``), one per check, for the report."""
        return [
            {
                "chunking": chunking,
                "rule": c.name,
                "count": c.count,
                "share": c.share,
                "message": c.description,
                "examples": [e.to_dict() for e in c.examples],
            }
            for c in self.checks
        ]


# --------------------------------------------------------------------------
# The checks: each is O(1) or O(log n) per chunk plus the chunk's own length,
# and builds its example text only when the example is kept, so a document
# of any shape costs linear time and memory.
# --------------------------------------------------------------------------

Detail = Callable[[], str]
"""Builds a flagged chunk's example text, only for the examples kept."""

_MAX_SHOWN = 200
"""Longest heading line, fence language or definition label quoted in an example; longer ones are cut."""


@dataclass(frozen=True)
class _Doc:
    """One document as the checks see it: its text, structure and lookups, built once."""

    text: str
    structure: Structure
    back: BackScan
    table_ends: list[int]
    fence_starts: list[int]
    definition_at: dict[int, int]
    """Chunk start or end -> index of the innermost definition strictly around it."""

    @classmethod
    def of(cls, doc: Document, chunks: Sequence[Chunk]) -> _Doc:
        structure = document_structure(doc)
        spans = [(d.start, d.end) for d in structure.definitions]
        positions = [p for c in chunks for p in (c.start, c.end)] if spans else []
        return cls(
            doc.text,
            structure,
            BackScan(doc.text),
            [t.end for t in structure.tables],
            [f.start for f in structure.fences],
            innermost(spans, positions),
        )


def _show(text: str) -> str:
    return text.replace("\r", "").replace("\n", "⏎")


def _around(text: str, pos: int, width: int = 25) -> str:
    return f"…{_show(text[max(0, pos - width) : pos])}|{_show(text[pos : pos + width])}…"


def _starts_mid_sentence(doc: _Doc, start: int, end: int) -> bool:
    """True when the chunk's first visible character continues a sentence of the text before it."""
    text = doc.text
    pos = start
    while pos < end and text[pos].isspace():
        if text[pos] in _LINE_BREAKS:
            return False
        pos += 1
    i = doc.back.before_run(start - 1, _HSPACE)
    if i < 0 or text[i] in _LINE_BREAKS:
        return False
    gap = i < pos - 1
    i = doc.back.before_run(i, _CLOSERS)
    if i < 0:
        return False
    if text[i] in _WIDE_ENDS:
        return False
    return not (text[i] in _ASCII_ENDS and gap)


def _mid_sentence(doc: _Doc, chunk: Chunk) -> Detail | None:
    if _starts_mid_sentence(doc, chunk.start, chunk.end):
        return lambda: f"starts mid-sentence: {_around(doc.text, chunk.start)}"
    return None


def _visible_lines(text: str, structure: Structure, start: int, end: int) -> list[int]:
    """Line starts of the lines holding visible text of ``[start, end)``."""
    line_starts = structure.line_starts
    first = bisect_right(line_starts, start) - 1
    last = bisect_right(line_starts, max(start, end - 1)) - 1
    out = []
    for k in range(first, last + 1):
        line_start = line_starts[k]
        line_end = line_starts[k + 1] if k + 1 < len(line_starts) else len(text)
        if text[max(line_start, start) : min(line_end, end)].strip():
            out.append(line_start)
    return out


def _cut(name: str) -> str:
    """``name`` cut to :data:`_MAX_SHOWN` characters (a fence's language, a definition's label)."""
    return name if len(name) <= _MAX_SHOWN else name[: _MAX_SHOWN - 1] + "…"


def _heading_text(text: str, start: int, stop: int) -> str:
    """The heading line ``[start, stop)``, stripped; cut at :data:`_MAX_SHOWN` characters."""
    if stop - start <= _MAX_SHOWN:
        return text[start:stop].strip()
    return text[start : start + _MAX_SHOWN].strip() + "…"


def _lone_heading(doc: _Doc, chunk: Chunk) -> Detail | None:
    text, structure = doc.text, doc.structure
    if not structure.headings:
        return None
    lines = _visible_lines(text, structure, chunk.start, chunk.end)
    if not lines or lines[-1] not in structure.headings:
        return None
    newline = structure.heading_newlines[lines[-1]]
    line_end = len(text) if newline < 0 else newline
    if all(line in structure.headings for line in lines):
        return lambda: f"only heading line(s), ending {_heading_text(text, lines[-1], line_end)!r}"
    if max(chunk.end, line_end) < structure.visible_end:
        heading = lines[-1]
        return lambda: (
            f"ends with heading {_heading_text(text, heading, line_end)!r}; its section body is in the next chunk"
        )
    return None


def _split_table(doc: _Doc, chunk: Chunk) -> Detail | None:
    tables = doc.structure.tables
    # Tables are disjoint and in order: only those ending after the chunk's start, up to its end, can be cut.
    for k in range(bisect_right(doc.table_ends, chunk.start), len(tables)):
        table = tables[k]
        if chunk.end <= table.body:
            break
        if chunk.start <= table.header:
            continue
        if table.header_text in chunk.prefix and table.delimiter_text in chunk.prefix:
            continue
        return lambda: f"body rows of the table with header {table.header_text[:60]!r} without its header"
    return None


def _split_code(doc: _Doc, chunk: Chunk) -> Detail | None:
    text, structure = doc.text, doc.structure
    for pos, side in ((chunk.start, "starts"), (chunk.end, "ends")):
        if pos in doc.definition_at:
            best = structure.definitions[doc.definition_at[pos]]
            return lambda: f"{side} inside {_cut(best.label)}: {_around(text, pos)}"
        k = bisect_left(doc.fence_starts, pos) - 1  # fences are disjoint and in order
        if k >= 0 and pos < structure.fences[k].end:
            fence = structure.fences[k]
            lang = f" {_cut(fence.lang)}" if fence.lang else ""
            return lambda: f"{side} inside a fenced{lang} code block: {_around(text, pos)}"
    return None


_DESCRIPTIONS = {
    "mid_sentence": "chunks that start mid-sentence (not at a sentence end, a line start or the document start)",
    "lone_heading": "chunks that are only a heading, or end with a heading whose body is in the next chunk",
    "split_table": "chunks with table rows but neither the header/delimiter rows nor a prefix carrying them",
    "split_code": "chunks cut inside a fenced code block or a Python def/class",
}
_CHECKS: dict[str, Callable[[_Doc, Chunk], Detail | None]] = {
    "mid_sentence": _mid_sentence,
    "lone_heading": _lone_heading,
    "split_table": _split_table,
    "split_code": _split_code,
}


def chunk_health(
    documents: Sequence[Document], chunks: Sequence[Chunk], max_examples: int = MAX_EXAMPLES
) -> ChunkHealth:
    """Run the four chunk-health checks over one chunking of ``documents``.

    Raises ``ValueError`` if a chunk names a document not given. Chunks are
    examined in document order, then by start.
    """
    by_id = {doc.doc_id: doc for doc in documents}
    unknown = sorted({c.doc_id for c in chunks} - by_id.keys())
    if unknown:
        raise ValueError(f"chunks cite documents that were not given: {', '.join(unknown[:5])}")
    order = {doc_id: i for i, doc_id in enumerate(by_id)}
    ordered = sorted(chunks, key=lambda c: (order[c.doc_id], c.start, c.end))
    counts = dict.fromkeys(_CHECKS, 0)
    examples: dict[str, list[ChunkExample]] = {name: [] for name in _CHECKS}
    for doc_id, group in groupby(ordered, key=lambda c: c.doc_id):
        doc_chunks = list(group)
        doc = _Doc.of(by_id[doc_id], doc_chunks)
        for chunk in doc_chunks:
            for name, check in _CHECKS.items():
                detail = check(doc, chunk)
                if detail is None:
                    continue
                counts[name] += 1
                if len(examples[name]) < max_examples:
                    examples[name].append(ChunkExample(chunk.chunk_id, chunk.doc_id, chunk.start, chunk.end, detail()))
    checks = {
        name: HealthCheck(name, _DESCRIPTIONS[name], counts[name], len(ordered), tuple(examples[name]))
        for name in _CHECKS
    }
    return ChunkHealth(n_documents=len(by_id), n_chunks=len(ordered), **checks)
