"""A text's matching key, and approximate search in it: what ``reanchor`` compares when exact text fails.

The key of a text is its NFKC form with every white-space and format
character (zero-width space, soft hyphen, byte-order mark) dropped. NFKC
folds decomposed accents (NFD ``e`` + U+0301 -> ``é``), full-width and
half-width forms (``ＡＰＩ`` -> ``API``, ``，`` -> ``,``) and ligatures.
White space is dropped rather than collapsed: a reflowed Chinese paragraph
gets line breaks between characters that had none (``六百\\n元``), which a
collapse to one space would not match. Dropping only ever makes more texts
equal, so a key that matches twice is reported ambiguous, never taken.

Offsets map back to the ORIGINAL text: the text is normalised one cluster
at a time (a base character and the combining marks after it, Hangul
vowel/final jamo joining their syllable), and every key character records
the cluster it came from, so a key range ``[i, j)`` is the original
``[start_of(i), end_of(j - 1))``, whole clusters, never half an accent.

:func:`edit_scores` is Myers' bit-parallel approximate search (J. ACM 46(3),
1999, in Hyyrö's formulation): for a pattern of ``m`` characters and a text,
the Levenshtein distance of the pattern to the best substring of the text
ending at each position, in ``O(len(text))`` big-integer steps (``m`` bits
each). All pure.
"""

from __future__ import annotations

import unicodedata
from array import array
from dataclasses import dataclass, field

__all__ = ["Keyed", "align", "edit_scores", "find_all", "key_of"]

_HANGUL_JOINING = ("\u1160", "\u11ff")
"""Hangul medial vowels and final consonants: NFKC composes them with the syllable before them."""


def _joins(char: str) -> bool:
    """Whether ``char`` belongs to the cluster before it (NFKC may combine it with that cluster)."""
    return (
        unicodedata.combining(char) != 0
        or unicodedata.category(char) in ("Mn", "Mc", "Me")
        or (_HANGUL_JOINING[0] <= char <= _HANGUL_JOINING[1])
    )


def _dropped(char: str) -> bool:
    return char.isspace() or unicodedata.category(char) == "Cf"


def key_of(text: str) -> str:
    """The matching key of ``text`` (NFKC, white space and format characters dropped), cluster by cluster."""
    return Keyed.of(text).key


@dataclass(frozen=True)
class Keyed:
    """A text's key and, per key character, the original ``[start, end)`` of the cluster it came from."""

    key: str
    starts: array = field(repr=False)
    ends: array = field(repr=False)

    @classmethod
    def of(cls, text: str) -> Keyed:
        chars: list[str] = []
        starts, ends = array("q"), array("q")
        i, n = 0, len(text)
        while i < n:
            j = i + 1
            while j < n and _joins(text[j]):
                j += 1
            cluster = text[i:j]
            # ASCII needs no normalisation: the common case stays one comparison per character
            normal = cluster if cluster.isascii() else unicodedata.normalize("NFKC", cluster)
            for char in normal:
                if not _dropped(char):
                    chars.append(char)
                    starts.append(i)
                    ends.append(j)
            i = j
        return cls("".join(chars), starts, ends)

    def original(self, start: int, end: int) -> tuple[int, int]:
        """The original ``[start, end)`` of key range ``[start, end)`` (``start < end``)."""
        return self.starts[start], self.ends[end - 1]

    def key_position(self, offset: int) -> int:
        """The first key character at or after original ``offset`` (``len(key)`` past the end)."""
        lo, hi = 0, len(self.key)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.starts[mid] < offset:
                lo = mid + 1
            else:
                hi = mid
        return lo


def find_all(haystack: str, needle: str, limit: int) -> list[int]:
    """Start of every occurrence of ``needle`` (overlapping ones too), at most ``limit`` of them."""
    found: list[int] = []
    at = haystack.find(needle) if needle else -1
    while at >= 0 and len(found) < limit:
        found.append(at)
        at = haystack.find(needle, at + 1)
    return found


def _peq(pattern: str) -> dict[str, int]:
    masks: dict[str, int] = {}
    for i, char in enumerate(pattern):
        masks[char] = masks.get(char, 0) | (1 << i)
    return masks


def edit_scores(pattern: str, text: str, anchored: bool = False) -> list[int]:
    """``scores[j]``: the least Levenshtein distance of ``pattern`` to a substring of ``text`` ending at ``j + 1``.

    The substring may start anywhere (the search form), or, ``anchored``,
    only at 0 (then ``scores[j]`` is the distance to ``text[: j + 1]``).
    """
    m = len(pattern)
    if m == 0:
        return [0] * len(text)
    mask, high = (1 << m) - 1, 1 << (m - 1)
    peq = _peq(pattern)
    pv, mv, score = mask, 0, m
    scores: list[int] = []
    for char in text:
        eq = peq.get(char, 0)
        xv = eq | mv
        xh = (((eq & pv) + pv) ^ pv) | eq
        ph = mv | (~(xh | pv) & mask)
        mh = pv & xh
        if ph & high:
            score += 1
        elif mh & high:
            score -= 1
        ph = ((ph << 1) | anchored) & mask  # anchored: row 0 costs one per text character
        mh = (mh << 1) & mask
        pv = mh | (~(xv | ph) & mask)
        mv = ph & xv
        scores.append(score)
    return scores


def align(pattern: str, text: str, end: int) -> tuple[int, int]:
    """``(start, distance)`` of the best substring ``text[start:end]`` for ``pattern`` (the shortest among ties).

    Runs :func:`edit_scores` backwards, anchored at ``end``: the reversed
    pattern over ``text[:end]`` reversed.
    """
    reverse = edit_scores(pattern[::-1], text[:end][::-1], anchored=True)
    best = min(reverse) if reverse else len(pattern)
    length = reverse.index(best) + 1 if reverse else 0
    return end - length, best
