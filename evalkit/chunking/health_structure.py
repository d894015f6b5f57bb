"""Document structure for chunk health, parsed independently of the chunkers.

Markdown headings, fenced code blocks, pipe tables and Python ``def``/``class``
spans of one document, found once. Kept apart from the chunkers' own parser
(:mod:`evalkit.chunking.markdown_parse`) on purpose: a parser bug in a
chunker must not hide itself from the check that audits it. Markdown is
skipped for source files stored as documents (``meta.code_lang`` or a code
file suffix): their ``#`` lines are comments, not headings. Pure. May
import: records, chunking.health_lookup.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from evalkit.chunking.health_lookup import INFINITY, FirstAtMost
from evalkit.records import Document

_ATX = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*([^`\s]*)")
# Possessive quantifiers: giving back a space or a dash never makes this match,
# and trying to costs quadratic time on a long run of spaces.
_DELIMITER = re.compile(r"^ {0,3}\|?[ \t]*+:?-++:?[ \t]*+(?:\|[ \t]*+:?-++:?[ \t]*+)*+\|?[ \t]*+$")
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
    heading_newlines: Mapping[int, int] = field(default_factory=dict)
    """``text.find("\\n", start)`` for each heading line start (found once, not per chunk)."""
    visible_end: int = 0
    """End of the document's last visible character: text lies after ``pos`` iff ``pos < visible_end``."""


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
    matches = [(i, m) for i in range(first, stop) if (m := _PY_DEF.match(text, *lines[i]))]
    if not matches:
        return []
    facts = _LineFacts.of(text, lines[first:stop])
    out = []
    for i, match in matches:
        indent = len(match.group(1).expandtabs(4))
        # The signature may run over several lines: it ends where brackets balance on a ':'.
        before = facts.balance[i - first - 1] if i > first else 0
        last = first + min(facts.signature_end.find(i - first, before), stop - first - 1)
        # The body: every line after the signature indented deeper, up to the first that is not.
        body_end = facts.outdented.find(last + 1 - first, indent)
        last = max(last, first + facts.last_visible[body_end])
        top = i
        while top > first and text[lines[top - 1][0] : lines[top - 1][1]].lstrip().startswith("@"):
            top -= 1
        kind = "class" if "class" in text[match.end(1) : match.start(2)] else "def"
        out.append(Definition(lines[top][0], lines[last][1], f"{kind} {match.group(2)}"))
    return out


@dataclass(frozen=True)
class _LineFacts:
    """Per-line facts of a range of lines, found once, so no definition rescans the lines after it."""

    balance: list[int]
    """Open minus closed brackets from the range's first line through this one (code before any ``#``)."""
    signature_end: FirstAtMost
    """Over ``balance`` where the code ends with ``:`` (else infinity): where a signature can end."""
    outdented: FirstAtMost
    """Over the indentation of visible lines (blank: infinity): where a body ends."""
    last_visible: list[int]
    """For ``k`` in ``0..len``: the last visible line before ``k`` (-1 if none)."""

    @classmethod
    def of(cls, text: str, lines: list[tuple[int, int]]) -> _LineFacts:
        balance, ends, indents, last_visible = [], [], [], [-1]
        depth = 0
        for k, (start, stop) in enumerate(lines):
            line = text[start:stop]
            code = line.split("#", 1)[0]
            depth += sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}")
            balance.append(depth)
            ends.append(depth if code.rstrip().endswith(":") else INFINITY)
            visible = bool(line.strip())
            expanded = line.expandtabs(4) if visible else ""
            indents.append(len(expanded) - len(expanded.lstrip()) if visible else INFINITY)
            last_visible.append(k if visible else last_visible[-1])
        return cls(balance, FirstAtMost(ends), FirstAtMost(indents), last_visible)


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
    return Structure(
        tuple(s for s, _ in lines),
        headings,
        tuple(fences),
        tuple(tables),
        tuple(definitions),
        _newlines_after(text, sorted(headings)),
        len(text.rstrip()),
    )


def _newlines_after(text: str, starts: list[int]) -> dict[int, int]:
    """``text.find("\\n", s)`` for each sorted start ``s``, each stretch of text searched once."""
    found: dict[int, int] = {}
    following = -1
    bound = len(text)
    for start in reversed(starts):
        newline = text.find("\n", start, bound)
        following = newline if newline >= 0 else following
        found[start] = following
        bound = start
    return found
