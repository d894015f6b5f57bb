"""Cut positions of plain text, shared by every chunker except ``fixed``.

A text's legal cut positions, grouped into levels coarsest first (paragraph,
line, sentence, clause, space), found once per text with regexes; plus the
small span helpers (skip leading, trim trailing whitespace; never split a
grapheme cluster or a "\\r\\n") the chunkers use to keep chunks span-exact.
Pure functions over strings. May import: nothing from evalkit.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right

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
# A run of ASCII marks is only tried from its first mark (the lookbehind): a
# match can never start inside one, and retrying every suffix of a long
# "....." run would cost quadratic time.
_SENTENCE_END = rf"(?<![.!?])[.!?]+[{_CLOSERS}]*(?=\s)|[。｡．！？；…‼⁇⁈⁉।॥։۔؟။።។]+[{_CLOSERS}]*"
_CLAUSE_END = rf"[,;:][{_CLOSERS}]*(?=\s)|[，、：﹐﹑､،]+"
_PUNCTUATION = re.compile(rf"({_SENTENCE_END})|{_CLAUSE_END}")
NON_SPACE = re.compile(r"\S")

# Code points a cut must not land before: they belong to the previous one.
_JOINERS = frozenset("\u200d\ufe0e\ufe0f\u20e3")
_MARKS = frozenset(("Mn", "Mc", "Me"))


def _line_breaks(run: str) -> int:
    """Line breaks in a whitespace run, counting "\r\n" once."""
    breaks = run.count("\n") + run.count("\r") - run.count("\r\n")
    return breaks + len(_RARE_BREAKS.findall(run)) if breaks < 2 else breaks


def text_levels(text: str) -> tuple[list[int], ...]:
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


def skip_space(text: str, pos: int, stop: int) -> int:
    """First non-whitespace position in ``[pos, stop)``, else ``stop``."""
    match = NON_SPACE.search(text, pos, stop)
    return match.start() if match else stop


def trim_end(text: str, start: int, end: int) -> int:
    """``end`` moved back over trailing whitespace, not past ``start``."""
    while end > start and text[end - 1].isspace():
        end -= 1
    return end


def splits_cluster(text: str, pos: int) -> bool:
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
