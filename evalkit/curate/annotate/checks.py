"""Checks run each time the annotation page saves (pure): exact slices, trivial questions, duplicates.

- :func:`slice_problem`: the text the page selected must equal
  ``document[start:end]`` (code points): the page's offsets are never
  trusted, they are checked against the server's own copy of the document;
- :func:`trimmed`: white space at either end of a selection is not part of
  the answer, so the span is narrowed (offsets and text move together);
- :func:`is_trivial`: the method's rule: a question whose only span lies
  inside one sentence is trivial (its answer can be found by matching one
  sentence). A sentence ends at ``.!?`` followed by white space, at
  ``。！？；``, or at a line break (a Markdown table row or list item is a
  statement of its own). Flagged, not refused: the annotator decides;
- :func:`duplicates`: already-labelled questions with the same normalised
  text or a character 3-gram Jaccard of at least 0.9 (the label-health rule).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from evalkit.labels.similarity import jaccard, normalise, shingles
from evalkit.records import Span

__all__ = ["duplicates", "is_trivial", "slice_problem", "trimmed"]

_BOUNDARY = re.compile(r"[.!?]+[\"'”’)\]]*\s|[。！？；]|\n")
_TRAILING_END = re.compile(r"[\s.!?。！？；\"'”’)\]]+$")


def slice_problem(document: str, start: int, end: int, text: str) -> str:
    """Why ``(start, end, text)`` is not an exact slice of ``document``; "" when it is."""
    if isinstance(start, bool) or isinstance(end, bool) or not isinstance(start, int) or not isinstance(end, int):
        return "'start' and 'end' must be integers (code points)"
    if not 0 <= start < end <= len(document):
        return f"span [{start}, {end}) lies outside the document of {len(document)} characters"
    if document[start:end] != text:
        return (
            f"the selected text does not equal document[{start}:{end}] "
            f"({_clip(text)!r} vs {_clip(document[start:end])!r}); reload the document"
        )
    return ""


def trimmed(document: str, start: int, end: int) -> tuple[int, int]:
    """``(start, end)`` without white space at either end (unchanged when nothing but white space)."""
    left, right = start, end
    while left < right and document[left].isspace():
        left += 1
    while right > left and document[right - 1].isspace():
        right -= 1
    return (left, right) if left < right else (start, end)


def in_one_sentence(document: str, start: int, end: int) -> bool:
    """Whether ``document[start:end]`` crosses no sentence boundary (a final full stop does not count)."""
    inner = _TRAILING_END.sub("", document[start:end])
    return _BOUNDARY.search(inner) is None


def is_trivial(spans: Sequence[Span], documents: Mapping[str, str]) -> bool:
    """One span only, and it lies inside one sentence of its document."""
    if len(spans) != 1 or spans[0].doc_id not in documents:
        return False
    only = spans[0]
    return in_one_sentence(documents[only.doc_id], only.start, only.end)


def duplicates(
    question: str, labelled: Sequence[tuple[str, str]], threshold: float = 0.9, limit: int = 5
) -> list[tuple[str, str, float]]:
    """``(id, question, similarity)`` of labelled questions equal or near-equal to ``question``, closest first."""
    key = normalise(question)
    if not key:
        return []
    mine = shingles(key)
    found = []
    for qid, text in labelled:
        other = normalise(text)
        similarity = 1.0 if other == key else jaccard(mine, shingles(other))
        if similarity >= threshold:
            found.append((qid, text, similarity))
    found.sort(key=lambda f: (-f[2], f[0]))
    return found[:limit]


def _clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
