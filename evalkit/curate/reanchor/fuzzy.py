"""The bounded fuzzy step of ``reanchor``: the one place of a span's text within a few edits (pure).

Why the floor is 0.9 (:data:`FUZZY_FLOOR`, ``1 - distance / key length``): a
typo fixed inside a sentence-long span changes one or two characters in forty
(0.95 and up); below 0.9 more than one character in ten differs, a rewritten
sentence whose meaning may have changed, which a person decides. A span of
under ten key characters is never matched fuzzily (one changed character is
already more than 10%). A place whose numbers (digits, CJK numerals) differ
is refused: a changed number is a changed fact, not a typo.

A place that lost an answer the old text held is not taken either, but when
the edit lies inside the answer (the text before and after the answer is the
same in the new place) it is **proposed**: the new span and the answer as the
edit leaves it go to the annotation queue side by side, for a person to
accept or reject. On an extractive set (SQuAD: the span *is* the answer) every
typo fix lands here, since any edit of such a span edits its answer.

The search is bounded: it never scans the document quadratically. The key
text is cut into ``d + 1`` pieces (``d``: the most edits the floor allows),
so a place within ``d`` edits keeps at least one piece intact (pigeonhole);
each intact occurrence of a piece (pieces occurring more than
:data:`PIECE_CAP` times are too common to anchor anything) and the span's old
offset anchor a window of ``length + 2d`` key characters, at most
:data:`MAX_WINDOWS` of them, each searched in one linear pass
(:func:`evalkit.curate.reanchor.textkey.edit_scores`).
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from evalkit.curate.reanchor.textkey import Keyed, align, edit_scores, find_all, key_of

__all__ = ["FUZZY_FLOOR", "MAX_FUZZY_CHARS", "MAX_WINDOWS", "Fuzzy", "fuzzy_places"]

FUZZY_FLOOR = 0.9
"""Least similarity (1 - edits / key length) a fuzzy place needs (why 0.9: the module docstring)."""
PIECE_CAP = 32
MAX_WINDOWS = 64
MAX_FUZZY_CHARS = 5000
"""Longer spans (key characters) are found exactly or normalised only: a fuzzy pass costs length x window."""


@dataclass(frozen=True)
class Fuzzy:
    """What the fuzzy step found, in key offsets mapped back to the document (``places``: best first)."""

    accepted: tuple[tuple[int, int, float], ...] = ()
    """(start, end, similarity) of each place within the floor whose numbers and answers are intact."""
    proposed: tuple[int, int, float, str, int, int] | None = None
    """The nearest place that lost an answer to an edit inside it: (start, end, similarity, the old answer,
    start and end of the edited answer in the document)."""
    nearest: float = 0.0
    """Similarity of the nearest place seen (refused or not)."""
    reason: str = ""
    """Why nothing was accepted."""


def _numbers(key: str) -> str:
    return "".join(c for c in key if unicodedata.numeric(c, None) is not None)


def _answer_edit(needle: str, found: str, answers: Sequence[str]) -> tuple[str, tuple[int, int] | None] | None:
    """The first answer ``needle`` holds that ``found`` lost, and where in ``found`` it is now, edited.

    The key range of the edited answer in ``found`` when the edit lies inside the answer (the key text
    before and after it unchanged), else ``None`` (nothing to propose); ``None`` overall when no answer
    was lost.
    """
    for answer in answers:
        wanted = key_of(answer)
        if not wanted or wanted not in needle or wanted in found:
            continue
        at = needle.find(wanted)
        head, tail = needle[:at], needle[at + len(wanted) :]
        inside = found.startswith(head) and found.endswith(tail) and len(found) > len(head) + len(tail)
        return answer, (len(head), len(found) - len(tail)) if inside else None
    return None


def _windows(keyed: Keyed, needle: str, old_start: int, edits: int) -> list[tuple[int, int]]:
    """Key ranges worth searching: around the old offset and every intact piece's occurrence, merged."""
    m, n = len(needle), len(keyed.key)
    old = keyed.key_position(old_start)
    anchors = [old]
    size = m // (edits + 1)
    for p in range(edits + 1):
        occurrences = find_all(keyed.key, needle[p * size : (p + 1) * size], PIECE_CAP + 1)
        if len(occurrences) <= PIECE_CAP:  # a piece this common anchors nothing in particular
            anchors.extend(o - p * size for o in occurrences)
    anchors = sorted(set(anchors), key=lambda a: (abs(a - old), a))[:MAX_WINDOWS]
    ranges = sorted((max(0, a - edits), min(n, a + m + edits)) for a in anchors)
    merged: list[tuple[int, int]] = []
    for lo, hi in ranges:
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        elif hi > lo:
            merged.append((lo, hi))
    return merged


def _places(
    key: str, needle: str, windows: Sequence[tuple[int, int]], edits: int
) -> tuple[list[tuple[int, int, int]], int]:
    """Non-overlapping key places within ``edits`` (best first) and the least distance seen anywhere."""
    m = len(needle)
    candidates: list[tuple[int, int, int]] = []
    nearest = m
    for lo, hi in windows:
        scores = edit_scores(needle, key[lo:hi])
        nearest = min([nearest, *scores])
        for j, score in enumerate(scores):
            after = scores[j + 1] if j + 1 < len(scores) else m + 1
            if score <= edits and score < after and (j == 0 or score <= scores[j - 1]):
                begin = max(lo, lo + j + 1 - m - edits)
                start, distance = align(needle, key[begin : lo + j + 1], j + 1 - (begin - lo))
                candidates.append((distance, begin + start, lo + j + 1))
    kept: list[tuple[int, int, int]] = []
    for distance, start, end in sorted(candidates):
        if all(end <= s or start >= e for _, s, e in kept):
            kept.append((distance, start, end))
    return kept, nearest


def fuzzy_places(keyed: Keyed, needle: str, old_start: int, answers: Sequence[str]) -> Fuzzy:
    """The places of ``needle`` (a key) in ``keyed`` at least :data:`FUZZY_FLOOR` similar, sorted into kinds."""
    m = len(needle)
    edits = math.floor((1 - FUZZY_FLOOR) * m + 1e-9)
    if edits == 0:
        return Fuzzy(reason=f"not found; too short for a fuzzy match ({m} characters)")
    if m > MAX_FUZZY_CHARS:
        return Fuzzy(reason=f"not found; too long for a fuzzy match ({m} > {MAX_FUZZY_CHARS})")
    places, nearest = _places(keyed.key, needle, _windows(keyed, needle, old_start, edits), edits)
    accepted: list[tuple[int, int, float]] = []
    refused: list[tuple[str, int, int, float]] = []
    proposed = None
    for distance, start, end in places:
        found, similarity = keyed.key[start:end], 1 - distance / m
        original = keyed.original(start, end)
        if _numbers(needle) != _numbers(found):
            refused.append((f"its numbers differ ({_numbers(needle)!r} -> {_numbers(found)!r})", *original, similarity))
            continue
        lost = _answer_edit(needle, found, answers)
        if lost is None:
            accepted.append((*original, similarity))
        elif lost[1] is not None and proposed is None:
            answer = keyed.original(start + lost[1][0], start + lost[1][1])
            proposed = (*original, similarity, lost[0], *answer)
        else:
            refused.append((f"the answer {lost[0]!r} is not in it", *original, similarity))
    if accepted:
        return Fuzzy(tuple(accepted), proposed, accepted[0][2])
    if proposed is not None:
        return Fuzzy((), proposed, proposed[2], "a typo fixed inside the answer")
    if refused:
        why, start, end, similarity = refused[0]
        return Fuzzy(
            nearest=similarity, reason=f"the nearest place [{start}:{end}] is {similarity:.2f} similar, but {why}"
        )
    similarity = max(0.0, 1 - nearest / m)
    return Fuzzy(nearest=similarity, reason=f"no place {FUZZY_FLOOR:.0%} similar (nearest {similarity:.2f})")
