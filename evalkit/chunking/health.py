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

Documents are parsed here, independently of the chunkers, so a parser bug in
a chunker does not hide itself. Markdown checks skip source files stored as
documents (``meta.code_lang`` or a code file suffix): their ``#`` lines are
comments, not headings. Python definitions are looked for in Python
documents and in fenced blocks tagged ``python``/``py``.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from evalkit.records import Chunk, Document

__all__ = ["ChunkExample", "ChunkHealth", "HealthCheck", "chunk_health"]

MAX_EXAMPLES = 5

_ASCII_ENDS = ".!?"
_WIDE_ENDS = "。！？；…｡．‼⁇⁈⁉"
_CLOSERS = "\"'”’)]）」』》〉】*_`"
_HSPACE = " \t\u3000\u00a0"
_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"

_ATX = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*([^`\s]*)")
_DELIMITER = re.compile(r"^ {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_PY_DEF = re.compile(r"([ \t]*)(?:async[ \t]+def|def|class)[ \t]+([A-Za-z_]\w*)")
_CODE_SUFFIXES = (".py", ".ts", ".js", ".go", ".rs", ".java", ".c", ".cc", ".cpp", ".h", ".rb", ".sh", ".tsx", ".jsx")


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
# Document structure
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Fence:
    start: int
    """Position of the opening fence's first backtick or tilde."""
    end: int
    """End of the closing fence line's content (document end if unclosed)."""
    lang: str


@dataclass(frozen=True)
class _Table:
    header: int
    """First visible character of the header row."""
    body: int
    """Start of the first body row's line."""
    end: int
    """End of the last body row's content."""
    header_text: str
    delimiter_text: str


@dataclass(frozen=True)
class _Definition:
    start: int
    """Start of the first decorator or of the def/class line."""
    end: int
    """End of the body's last line."""
    label: str
    """e.g. ``def verify`` or ``class RateLimiter``."""


@dataclass(frozen=True)
class _Structure:
    """What the checks need to know about one document, found once."""

    line_starts: tuple[int, ...]
    headings: frozenset[int]
    """Line starts of Markdown heading lines (outside fences)."""
    fences: tuple[_Fence, ...]
    tables: tuple[_Table, ...]
    definitions: tuple[_Definition, ...]


def _lines(text: str) -> list[tuple[int, int]]:
    """(start, content end) of every line; "\\r\\n", "\\n" and "\\r" end a line."""
    out, pos = [], 0
    for match in re.finditer(r"\r\n|\n|\r", text):
        out.append((pos, match.start()))
        pos = match.end()
    out.append((pos, len(text)))
    return out


def _is_code_document(doc: Document) -> bool:
    """A source file stored as a document: its ``#`` lines are comments, not headings."""
    meta = doc.meta or {}
    names = (doc.path, doc.title, str(meta.get("source_path") or ""))
    return bool(meta.get("code_lang")) or any(name.lower().endswith(_CODE_SUFFIXES) for name in names)


def _is_python_document(doc: Document) -> bool:
    meta = doc.meta or {}
    if str(meta.get("code_lang", "")).lower() in ("python", "py"):
        return True
    return any(n.endswith(".py") for n in (doc.path, doc.title, str(meta.get("source_path", ""))) if n)


def _fences(text: str, lines: list[tuple[int, int]]) -> tuple[list[_Fence], list[tuple[int, int]]]:
    """Fenced code blocks, and (first body line index, end line index) of each, exclusive."""
    fences, ranges = [], []
    i = 0
    while i < len(lines):
        start, stop = lines[i]
        opening = _FENCE.match(text, start, stop)
        if not opening or (opening.group(1)[0] == "`" and "`" in text[opening.end(1) : stop]):
            i += 1
            continue
        mark = opening.group(1)
        j = i + 1
        while j < len(lines):
            close = re.fullmatch(r" {0,3}(`{3,}|~{3,})[ \t]*", text[lines[j][0] : lines[j][1]])
            if close and close.group(1)[0] == mark[0] and len(close.group(1)) >= len(mark):
                break
            j += 1
        end = lines[j][1] if j < len(lines) else len(text)
        fences.append(_Fence(opening.start(1), end, opening.group(2).lower()))
        ranges.append((i + 1, j))
        i = j + 1
    return fences, ranges


def _tables(text: str, lines: list[tuple[int, int]], skip: set[int]) -> list[_Table]:
    """Pipe tables: a header row with a pipe, a delimiter row, then rows with a pipe."""
    tables = []
    i = 0
    while i + 1 < len(lines):
        (h0, h1), (d0, d1) = lines[i], lines[i + 1]
        header, delimiter = text[h0:h1], text[d0:d1]
        if i in skip or i + 1 in skip or "|" not in header or "|" not in delimiter or not _DELIMITER.match(delimiter):
            i += 1
            continue
        j = i + 2
        while (
            j < len(lines)
            and j not in skip
            and "|" in text[lines[j][0] : lines[j][1]]
            and text[lines[j][0] : lines[j][1]].strip()
        ):
            j += 1
        if j > i + 2:
            body = lines[i + 2][0]
            visible = h0 + len(header) - len(header.lstrip())
            tables.append(_Table(visible, body, lines[j - 1][1], header.strip(), delimiter.strip()))
        i = max(j, i + 2)
    return tables


def _python_definitions(text: str, lines: list[tuple[int, int]], first: int, stop: int) -> list[_Definition]:
    """def/class spans among lines ``first..stop-1``: decorators through the body's last line."""
    out = []
    for i in range(first, stop):
        start, end = lines[i]
        match = _PY_DEF.match(text, start, end)
        if not match:
            continue
        indent = len(match.group(1).expandtabs(4))
        # The signature may run over several lines: it ends where brackets balance on a ':'.
        depth, j = 0, i
        while j < stop:
            code = text[lines[j][0] : lines[j][1]].split("#", 1)[0]
            depth += sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}")
            if depth <= 0 and code.rstrip().endswith(":"):
                break
            j += 1
        last = min(j, stop - 1)
        k = last + 1
        while k < stop:
            line = text[lines[k][0] : lines[k][1]]
            if line.strip():
                if len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip()) <= indent:
                    break
                last = k
            k += 1
        top = i
        while top > first and text[lines[top - 1][0] : lines[top - 1][1]].lstrip().startswith("@"):
            top -= 1
        kind = "class" if "class" in text[match.end(1) : match.start(2)] else "def"
        out.append(_Definition(lines[top][0], lines[last][1], f"{kind} {match.group(2)}"))
    return out


def _structure(doc: Document) -> _Structure:
    """Headings, fences, tables and Python definitions of one document."""
    text = doc.text
    lines = _lines(text)
    fences, ranges = _fences(text, lines)
    inside = {k for first, stop in ranges for k in range(first - 1, min(stop + 1, len(lines)))}
    definitions: list[_Definition] = []
    if _is_python_document(doc):
        definitions = _python_definitions(text, lines, 0, len(lines))
    else:
        for fence, (first, stop) in zip(fences, ranges):
            if fence.lang in ("python", "py", "python3"):
                definitions.extend(_python_definitions(text, lines, first, stop))
    markdown = not _is_code_document(doc)
    headings = frozenset(
        start for k, (start, end) in enumerate(lines) if markdown and k not in inside and _ATX.match(text, start, end)
    )
    tables = _tables(text, lines, inside) if markdown else []
    return _Structure(tuple(s for s, _ in lines), headings, tuple(fences), tuple(tables), tuple(definitions))


# --------------------------------------------------------------------------
# The checks
# --------------------------------------------------------------------------


def _show(text: str) -> str:
    return text.replace("\r", "").replace("\n", "⏎")


def _around(text: str, pos: int, width: int = 25) -> str:
    return f"…{_show(text[max(0, pos - width) : pos])}|{_show(text[pos : pos + width])}…"


def _starts_mid_sentence(text: str, start: int, end: int) -> bool:
    """True when the chunk's first visible character continues a sentence of the text before it."""
    pos = start
    while pos < end and text[pos].isspace():
        if text[pos] in _LINE_BREAKS:
            return False
        pos += 1
    i = start - 1
    while i >= 0 and text[i] in _HSPACE:
        i -= 1
    if i < 0 or text[i] in _LINE_BREAKS:
        return False
    gap = i < pos - 1
    while i >= 0 and text[i] in _CLOSERS:
        i -= 1
    if i < 0:
        return False
    if text[i] in _WIDE_ENDS:
        return False
    return not (text[i] in _ASCII_ENDS and gap)


def _line_index(structure: _Structure, pos: int) -> int:
    return bisect_right(structure.line_starts, pos) - 1


def _visible_lines(text: str, structure: _Structure, start: int, end: int) -> list[int]:
    """Line starts of the lines holding visible text of ``[start, end)``."""
    first, last = _line_index(structure, start), _line_index(structure, max(start, end - 1))
    out = []
    for k in range(first, last + 1):
        line_start = structure.line_starts[k]
        line_end = structure.line_starts[k + 1] if k + 1 < len(structure.line_starts) else len(text)
        if text[max(line_start, start) : min(line_end, end)].strip():
            out.append(line_start)
    return out


def _lone_heading(text: str, structure: _Structure, chunk: Chunk) -> str | None:
    if not structure.headings:
        return None
    lines = _visible_lines(text, structure, chunk.start, chunk.end)
    if not lines or lines[-1] not in structure.headings:
        return None
    line_end = text.find("\n", lines[-1])
    heading = text[lines[-1] : len(text) if line_end < 0 else line_end].strip()
    if all(line in structure.headings for line in lines):
        return f"only heading line(s), ending {heading!r}"
    if text[max(chunk.end, len(text) if line_end < 0 else line_end) :].strip():
        return f"ends with heading {heading!r}; its section body is in the next chunk"
    return None


def _split_table(structure: _Structure, chunk: Chunk) -> str | None:
    for table in structure.tables:
        if chunk.end <= table.body or chunk.start >= table.end:
            continue
        if chunk.start <= table.header:
            continue
        if table.header_text in chunk.prefix and table.delimiter_text in chunk.prefix:
            continue
        return f"body rows of the table with header {table.header_text[:60]!r} without its header"
    return None


def _split_code(text: str, structure: _Structure, chunk: Chunk) -> str | None:
    for pos, side in ((chunk.start, "starts"), (chunk.end, "ends")):
        inner = [d for d in structure.definitions if d.start < pos < d.end]
        if inner:
            best = min(inner, key=lambda d: d.end - d.start)
            return f"{side} inside {best.label}: {_around(text, pos)}"
        for fence in structure.fences:
            if fence.start < pos < fence.end:
                lang = f" {fence.lang}" if fence.lang else ""
                return f"{side} inside a fenced{lang} code block: {_around(text, pos)}"
    return None


def _check(name: str, description: str, n_chunks: int, flagged: Iterable[ChunkExample], limit: int) -> HealthCheck:
    examples, count = [], 0
    for example in flagged:
        count += 1
        if len(examples) < limit:
            examples.append(example)
    return HealthCheck(name, description, count, n_chunks, tuple(examples))


_DESCRIPTIONS = {
    "mid_sentence": "chunks that start mid-sentence (not at a sentence end, a line start or the document start)",
    "lone_heading": "chunks that are only a heading, or end with a heading whose body is in the next chunk",
    "split_table": "chunks with table rows but neither the header/delimiter rows nor a prefix carrying them",
    "split_code": "chunks cut inside a fenced code block or a Python def/class",
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
    structures = {doc_id: _structure(by_id[doc_id]) for doc_id in {c.doc_id for c in ordered}}
    found: dict[str, list[ChunkExample]] = {name: [] for name in _DESCRIPTIONS}
    for chunk in ordered:
        text, structure = by_id[chunk.doc_id].text, structures[chunk.doc_id]

        def flag(name: str, detail: str | None, chunk: Chunk = chunk) -> None:
            if detail:
                found[name].append(ChunkExample(chunk.chunk_id, chunk.doc_id, chunk.start, chunk.end, detail))

        if _starts_mid_sentence(text, chunk.start, chunk.end):
            flag("mid_sentence", f"starts mid-sentence: {_around(text, chunk.start)}")
        flag("lone_heading", _lone_heading(text, structure, chunk))
        flag("split_table", _split_table(structure, chunk))
        flag("split_code", _split_code(text, structure, chunk))
    checks = {
        name: _check(name, _DESCRIPTIONS[name], len(ordered), found[name], max_examples) for name in _DESCRIPTIONS
    }
    return ChunkHealth(n_documents=len(by_id), n_chunks=len(ordered), **checks)
