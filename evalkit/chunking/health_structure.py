"""Document structure for chunk health, parsed independently of the chunkers.

Markdown headings, fenced code blocks, pipe tables and Python ``def``/``class``
spans of one document, found once. Kept apart from the chunkers' own parser
(:mod:`evalkit.chunking.markdown_parse`) on purpose: a parser bug in a
chunker must not hide itself from the check that audits it. Markdown is
skipped for source files stored as documents (``meta.code_lang`` or a code
file suffix): their ``#`` lines are comments, not headings. Pure. May
import: records.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evalkit.records import Document

_ATX = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*([^`\s]*)")
_DELIMITER = re.compile(r"^ {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_PY_DEF = re.compile(r"([ \t]*)(?:async[ \t]+def|def|class)[ \t]+([A-Za-z_]\w*)")
_CODE_SUFFIXES = (".py", ".ts", ".js", ".go", ".rs", ".java", ".c", ".cc", ".cpp", ".h", ".rb", ".sh", ".tsx", ".jsx")


@dataclass(frozen=True)
class Fence:
    start: int
    """Position of the opening fence's first backtick or tilde."""
    end: int
    """End of the closing fence line's content (document end if unclosed)."""
    lang: str


@dataclass(frozen=True)
class Table:
    header: int
    """First visible character of the header row."""
    body: int
    """Start of the first body row's line."""
    end: int
    """End of the last body row's content."""
    header_text: str
    delimiter_text: str


@dataclass(frozen=True)
class Definition:
    start: int
    """Start of the first decorator or of the def/class line."""
    end: int
    """End of the body's last line."""
    label: str
    """e.g. ``def verify`` or ``class RateLimiter``."""


@dataclass(frozen=True)
class Structure:
    """What the checks need to know about one document, found once."""

    line_starts: tuple[int, ...]
    headings: frozenset[int]
    """Line starts of Markdown heading lines (outside fences)."""
    fences: tuple[Fence, ...]
    tables: tuple[Table, ...]
    definitions: tuple[Definition, ...]


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


def _fences(text: str, lines: list[tuple[int, int]]) -> tuple[list[Fence], list[tuple[int, int]]]:
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
        fences.append(Fence(opening.start(1), end, opening.group(2).lower()))
        ranges.append((i + 1, j))
        i = j + 1
    return fences, ranges


def _tables(text: str, lines: list[tuple[int, int]], skip: set[int]) -> list[Table]:
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
            tables.append(Table(visible, body, lines[j - 1][1], header.strip(), delimiter.strip()))
        i = max(j, i + 2)
    return tables


def _python_definitions(text: str, lines: list[tuple[int, int]], first: int, stop: int) -> list[Definition]:
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
        out.append(Definition(lines[top][0], lines[last][1], f"{kind} {match.group(2)}"))
    return out


def document_structure(doc: Document) -> Structure:
    """Headings, fences, tables and Python definitions of one document."""
    text = doc.text
    lines = _lines(text)
    fences, ranges = _fences(text, lines)
    inside = {k for first, stop in ranges for k in range(first - 1, min(stop + 1, len(lines)))}
    definitions: list[Definition] = []
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
    return Structure(tuple(s for s, _ in lines), headings, tuple(fences), tuple(tables), tuple(definitions))
