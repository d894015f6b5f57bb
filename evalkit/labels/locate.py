"""Find a passage of text in a corpus: exactly, or with whitespace normalised, offsets in the original.

Imports of other formats (ragas, Hugging Face) carry context strings, not
offsets. :func:`locate` turns a string into a span of one document: an exact
match first; else a match after collapsing every whitespace run to one space
on both sides, mapped back to the original text's code points. What cannot
be found is ``None``: the caller reports it, nothing is guessed.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from evalkit.records import Document

__all__ = ["Location", "Locator", "build_locator", "locate", "locate_in_text"]

_SEPARATOR = "\x00"
_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Location:
    """Where a passage was found."""

    doc_id: str
    start: int
    end: int
    how: Literal["exact", "whitespace"]
    ambiguous: bool = False
    """The passage occurs more than once in the corpus; the first occurrence was taken."""


@dataclass(frozen=True)
class _Collapsed:
    """A text with whitespace runs collapsed to one space, and where each character came from."""

    text: str
    origin: array = field(repr=False)
    """``origin[i]``: position in the original text of collapsed character ``i``."""

    @classmethod
    def of(cls, text: str) -> _Collapsed:
        parts: list[str] = []
        origin = array("q")
        pos = 0
        for match in _WHITESPACE.finditer(text):
            parts.append(text[pos : match.start()])
            origin.extend(range(pos, match.start()))
            parts.append(" ")
            origin.append(match.start())
            pos = match.end()
        parts.append(text[pos:])
        origin.extend(range(pos, len(text)))
        return cls("".join(parts), origin)

    def find(self, needle: str, start: int = 0) -> tuple[int, int] | None:
        """Original ``(start, end)`` of the first match of an already collapsed, stripped needle."""
        i = self.text.find(needle, start)
        if i < 0:
            return None
        return self.origin[i], self.origin[i + len(needle) - 1] + 1


@dataclass(frozen=True)
class Locator:
    """A corpus prepared for :func:`locate`: documents joined by NUL, plus a collapsed copy."""

    doc_ids: tuple[str, ...]
    offsets: tuple[int, ...]
    """Where each document starts in :attr:`corpus`."""
    corpus: str
    collapsed: _Collapsed


def build_locator(documents: Sequence[Document]) -> Locator:
    """Prepare ``documents`` for :func:`locate` (one pass over the corpus)."""
    offsets, pos = [], 0
    for doc in documents:
        offsets.append(pos)
        pos += len(doc.text) + 1
    corpus = _SEPARATOR.join(doc.text for doc in documents)
    return Locator(tuple(d.doc_id for d in documents), tuple(offsets), corpus, _Collapsed.of(corpus))


def _place(locator: Locator, start: int, end: int, how: Literal["exact", "whitespace"], again: bool) -> Location:
    k = bisect_right(locator.offsets, start) - 1
    base = locator.offsets[k]
    return Location(locator.doc_ids[k], start - base, end - base, how, again)


def locate(locator: Locator, passage: str) -> Location | None:
    """The first place ``passage`` occurs (exact, else whitespace-normalised), or ``None``."""
    if not passage.strip() or _SEPARATOR in passage:
        return None
    i = locator.corpus.find(passage)
    if i >= 0:
        return _place(locator, i, i + len(passage), "exact", locator.corpus.find(passage, i + 1) >= 0)
    needle = " ".join(passage.split())
    found = locator.collapsed.find(needle)
    if found is None:
        return None
    j = locator.collapsed.text.find(needle)
    again = locator.collapsed.text.find(needle, j + 1) >= 0
    return _place(locator, found[0], found[1], "whitespace", again)


def locate_in_text(text: str, passage: str, start: int = 0, end: int | None = None) -> tuple[int, int] | None:
    """First ``(start, end)`` of ``passage`` inside ``text[start:end]`` (exact, else whitespace-normalised)."""
    stop = len(text) if end is None else end
    if not passage.strip():
        return None
    i = text.find(passage, start, stop)
    if i >= 0:
        return i, i + len(passage)
    found = _Collapsed.of(text[start:stop]).find(" ".join(passage.split()))
    return None if found is None else (found[0] + start, found[1] + start)
