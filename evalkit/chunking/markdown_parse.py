"""Markdown structure the ``markdown`` chunker cuts by: ATX headings, fenced code blocks, pipe tables.

One pass over the lines that can matter (those starting with ``#``, a fence
mark or ``|``), so parsing costs little on prose. Pure. May import:
chunking.text_cuts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evalkit.chunking.text_cuts import trim_end

# An ATX heading's opening: 1-6 "#", then a space, a tab or the line's end.
# The title is found by hand (:func:`_atx_title`): the regex that says it in
# one line backtracks quadratically on a long line with long space runs.
_ATX_OPEN = re.compile(r" {0,3}(#{1,6})(?=[ \t]|$)")
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_FENCE_CLOSE = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*")
_TABLE_ROW = re.compile(r" {0,3}\|")
# Possessive quantifiers: giving back a space or a dash can never make this
# match, and trying to costs quadratic time on a long row of spaces.
_TABLE_DELIMITER = re.compile(r" {0,3}\|[ \t]*+:?-++:?[ \t]*+(?:\|[ \t]*+:?-++:?[ \t]*+)*+\|?[ \t]*+")
MAX_TITLE = 200
"""Longest heading title kept (in ``section_path`` and breadcrumbs); longer ones end with "…"."""


@dataclass(frozen=True)
class Heading:
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
class Block:
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


def _atx_title(text: str, pos: int, stop: int) -> str:
    """Title of the ATX heading whose ``#`` run ends at ``pos`` on a line ending at ``stop``.

    What is left after the spaces following the ``#`` run, without an
    optional closing sequence (spaces, then ``#``s, then spaces), stripped:
    the same title as the CommonMark-style pattern
    ``[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*`` matched to the line's end, found
    by walking each run once. Capped at :data:`MAX_TITLE` characters.
    """
    while pos < stop and text[pos] in " \t":
        pos += 1
    end = stop
    while end > pos and text[end - 1] in " \t":
        end -= 1
    hashes = end
    while hashes > pos and text[hashes - 1] == "#":
        hashes -= 1
    if pos < hashes < end and text[hashes - 1] in " \t":
        end = hashes - 1
        while end > pos and text[end - 1] in " \t":
            end -= 1
    title = text[pos:end].strip()
    return title if len(title) <= MAX_TITLE else title[: MAX_TITLE - 1] + "…"


def parse_markdown(text: str) -> tuple[list[Heading], list[Block]]:
    """ATX headings, fenced code blocks and pipe tables, in document order."""
    lines = _candidate_lines(text)
    headings: list[Heading] = []
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        start, content_end, following = lines[i]
        fence = _FENCE_OPEN.fullmatch(text, start, content_end)
        if fence and not (fence.group(1)[0] == "`" and "`" in fence.group(2)):
            j = _fence_close(text, lines, i, fence.group(1))
            end = trim_end(text, start, len(text) if j is None else lines[j][1])
            head = text[start:following] if text[start:following].endswith("\n") else ""
            blocks.append(Block(fence.start(1), following, end, head, fence.start(1)))
            i = len(lines) if j is None else j + 1
            continue
        heading = _ATX_OPEN.match(text, start, content_end)
        if heading:
            title = _atx_title(text, heading.end(), content_end)
            end = trim_end(text, start, content_end)
            headings.append(Heading(start, heading.start(1), end, len(heading.group(1)), title))
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
            end = trim_end(text, start, lines[j - 1][1])
            guard = trim_end(text, start, lines[i + 2][1]) if j > i + 2 else end
            head = text[start:body] if text[start:body].endswith("\n") else ""
            blocks.append(Block(text.index("|", start), body, end, head, guard))
            i = j
            continue
        i += 1
    return headings, blocks
