"""Character-span arithmetic for the character-level measures (pure): unions of half-open intervals per document.

A span is ``(doc_id, start, end)`` with half-open code-point offsets into the
document's text (``text[start:end]``, so a Chinese character counts one). Spans
of different documents never meet; within one document a set of spans counts
each character once (its union), however many spans hold it.

Two forms, which ``tests/test_chars.py`` keeps equal:

- per question (:func:`merge_spans`, :func:`covered_length`,
  :func:`intersection_length`): plain Python, sort and merge per document;
- vectorised (:func:`union_lengths`): the union length of every owner's spans
  at once. Each (owner, document) pair gets its own stretch of one number line
  (``group * base + offset`` with ``base`` past the largest offset), so one
  sort and one running maximum merge every owner's intervals together.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

__all__ = [
    "CharSpan",
    "Merged",
    "check_span",
    "covered_length",
    "doc_codes",
    "intersection_length",
    "merge_spans",
    "union_lengths",
]

CharSpan = tuple[str, int, int]
"""``(doc_id, start, end)``: half-open code-point offsets into one document."""
Merged = Mapping[str, Sequence[tuple[int, int]]]
"""Document id -> disjoint, sorted, non-empty ``(start, end)`` intervals: a union of spans."""

_MAX_COORDINATE = 2**62  # the vectorised number line must stay inside int64


def check_span(start: int, end: int) -> None:
    """ValueError unless ``0 <= start <= end`` (an empty span is allowed and covers nothing)."""
    if not 0 <= start <= end:
        raise ValueError(f"a span needs 0 <= start <= end, got ({start}, {end})")


# Per question -------------------------------------------------------------------


def merge_spans(spans: Iterable[CharSpan]) -> dict[str, list[tuple[int, int]]]:
    """The union of ``spans``, per document: disjoint sorted intervals (empty spans dropped)."""
    by_doc: dict[str, list[tuple[int, int]]] = {}
    for doc_id, start, end in spans:
        check_span(start, end)
        if end > start:
            by_doc.setdefault(doc_id, []).append((int(start), int(end)))
    merged: dict[str, list[tuple[int, int]]] = {}
    for doc_id, intervals in by_doc.items():
        intervals.sort()
        out = [intervals[0]]
        for start, end in intervals[1:]:
            last_start, last_end = out[-1]
            if start <= last_end:  # overlapping or touching: one stretch of characters
                out[-1] = (last_start, max(last_end, end))
            else:
                out.append((start, end))
        merged[doc_id] = out
    return merged


def covered_length(merged: Merged) -> int:
    """Characters in a union of spans."""
    return sum(end - start for intervals in merged.values() for start, end in intervals)


def intersection_length(a: Merged, b: Merged) -> int:
    """Characters in both unions (two-pointer sweep per shared document)."""
    total = 0
    for doc_id, left in a.items():
        right = b.get(doc_id, ())
        i = j = 0
        while i < len(left) and j < len(right):
            lo = max(left[i][0], right[j][0])
            hi = min(left[i][1], right[j][1])
            total += max(0, hi - lo)
            if left[i][1] < right[j][1]:  # advance whichever interval ends first
                i += 1
            else:
                j += 1
    return total


# Vectorised ---------------------------------------------------------------------


def doc_codes(*doc_id_arrays: Iterable[object]) -> dict[object, int]:
    """One integer per distinct document id across the arrays (hash-based, in order of appearance)."""
    codes: dict[object, int] = {}
    for ids in doc_id_arrays:
        for doc_id in ids:
            codes.setdefault(doc_id, len(codes))
    return codes


def union_lengths(
    owner: np.ndarray, doc: np.ndarray, starts: np.ndarray, ends: np.ndarray, n_owners: int
) -> np.ndarray:
    """int64 (n_owners,): characters in the union of each owner's spans.

    ``owner`` (int, in ``[0, n_owners)``), ``doc`` (int document codes),
    ``starts`` and ``ends`` are parallel 1-d arrays, one entry per span;
    ValueError unless ``0 <= start <= end``. Linear after one sort.
    """
    owner = np.asarray(owner, dtype=np.int64)
    doc = np.asarray(doc, dtype=np.int64)
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    if not owner.shape == doc.shape == starts.shape == ends.shape or owner.ndim != 1:
        raise ValueError("owner, doc, starts and ends must be 1-d arrays of one length")
    if owner.size == 0:
        return np.zeros(n_owners, dtype=np.int64)
    if (starts < 0).any() or (ends < starts).any():
        bad = int(np.flatnonzero((starts < 0) | (ends < starts))[0])
        check_span(int(starts[bad]), int(ends[bad]))
    if owner.min() < 0 or owner.max() >= n_owners:
        raise ValueError(f"owner indices must lie in [0, {n_owners})")
    # Dense ids of the (owner, document) pairs, owner-major; each gets a stretch [g * base, g * base + base).
    pair = owner * (int(doc.max()) + 1) + doc
    _, group = np.unique(pair, return_inverse=True)
    base = int(ends.max()) + 1
    if (int(group.max()) + 1) * base >= _MAX_COORDINATE:
        raise ValueError("too many (question, document) pairs times document length for int64 offsets")
    lo = group * base + starts
    hi = group * base + ends
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], hi[order]
    # Characters an interval adds beyond everything sorted before it: the part past the running maximum end.
    reached = np.concatenate(([np.int64(-1)], np.maximum.accumulate(hi)[:-1]))
    added = np.maximum(hi - np.maximum(lo, reached), 0)
    out = np.zeros(n_owners, dtype=np.int64)
    np.add.at(out, owner[order], added)
    return out
