"""Finding a stale span's text again in its changed document: exact, then normalised, then bounded fuzzy (pure).

A span is stale when its ``text`` no longer lies at its offsets (the reader's
rule, :func:`evalkit.labels.parse.is_stale_span`), or when a shortened
document now ends before it (the reader's "outside doc"). Its text is looked for in
its own document only, in three steps; the first that finds anything decides:

1. **exact**: the text as it is (unique only if the normalised step finds
   no other place either).
2. **normalised**: the matching keys of :mod:`evalkit.labels.textkey`
   (NFKC, white space dropped), offsets mapped back to the document's own
   text: a reflowed paragraph, NFD accents, full-width forms.
3. **fuzzy**: the least Levenshtein distance over the key, at least
   :data:`FUZZY_FLOOR` similar (``1 - distance / length``). Why 0.9: a typo
   fixed inside a sentence-long span changes one or two characters in forty
   (0.95 and up); below 0.9 more than one character in ten differs, a
   rewritten sentence whose meaning may have changed, which a person decides.
   A span of under ten key characters is never matched fuzzily (one changed
   character is already more than 10%). A place whose numbers (digits, CJK
   numerals) differ, or that lost an answer the old text held, is refused:
   a changed number is a changed fact, not a typo.

Exactly one place: the span **moved**. Several places: **ambiguous**, every
place listed and none taken. None: **lost**. Nothing is guessed. When the
document as it was labelled is at hand (``labels reanchor --before OLD``),
an ambiguous span is looked for once more with up to 80 characters of its
old surroundings (**context**; both sides, before only, after only): each
longer text found at exactly one place (exact or normalised) names that
place, and every one that names a place must name the same: a unique match,
not a choice among the places.

The fuzzy step is bounded: it never scans the document quadratically. The
key text is cut into ``d + 1`` pieces (``d``: the most edits the floor
allows), so a place within ``d`` edits keeps at least one piece intact
(pigeonhole); each intact occurrence of a piece (pieces occurring more than
:data:`PIECE_CAP` times are too common to anchor anything) and the span's
old offset anchor a window of ``length + 2d`` key characters, at most
:data:`MAX_WINDOWS` of them, each searched in one linear pass
(:func:`evalkit.labels.textkey.edit_scores`).
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, Literal

from evalkit.labels.parse import STALE, is_stale_span
from evalkit.labels.textkey import Keyed, align, edit_scores, find_all, key_of
from evalkit.records import Document

__all__ = [
    "FUZZY_FLOOR",
    "Found",
    "Searchable",
    "StaleSpan",
    "find_again",
    "reanchor_hint",
    "rewritten",
    "stale_spans",
]

FUZZY_FLOOR = 0.9
"""Least similarity (1 - edits / key length) a fuzzy place needs (why 0.9: the module docstring)."""
MAX_PLACES = 10
"""Places listed for an ambiguous span."""
PIECE_CAP = 32
MAX_WINDOWS = 64
CONTEXT = (80, 40, 20, 10)
"""Characters of the old document either side of an ambiguous span tried (with ``before``), widest first."""
MAX_FUZZY_CHARS = 5000
"""Longer spans (key characters) are found exactly or normalised only: a fuzzy pass costs length x window."""
SPAN_FIELDS = ("evidence", "source_passage")

Status = Literal["moved", "ambiguous", "lost"]
Method = Literal["exact", "normalised", "fuzzy", "context", ""]


@dataclass(frozen=True)
class StaleSpan:
    """One stale span of ``questions.jsonl``: where its record is, and what it says."""

    question_id: str
    line: int
    field: str
    """``evidence`` or ``source_passage``."""
    index: int
    doc_id: str
    start: int
    end: int
    text: str
    """The label's text, which the document no longer holds at ``[start, end)``."""
    answers: tuple[str, ...] = ()

    @property
    def where(self) -> str:
        return f"{self.field}[{self.index}]"


@dataclass(frozen=True)
class Found:
    """Where a stale span's text is now."""

    span: StaleSpan
    status: Status
    method: Method = ""
    """The step that decided (empty when lost)."""
    start: int = -1
    end: int = -1
    text: str = ""
    """The document's text at the new offsets (differs from the label's when normalised or fuzzy)."""
    similarity: float = 0.0
    """1.0 exact or normalised; fuzzy: 1 - edits / key length; lost: the nearest place's (0 when none)."""
    places: tuple[tuple[int, int], ...] = ()
    """Ambiguous: every place (at most :data:`MAX_PLACES`)."""
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for the report file."""
        span = self.span
        out: dict[str, Any] = {
            "question_id": span.question_id,
            "line": span.line,
            "field": span.where,
            "doc_id": span.doc_id,
            "old": [span.start, span.end],
            "text": span.text,
            "status": self.status,
            "method": self.method,
            "similarity": round(self.similarity, 4),
        }
        if self.status == "moved":
            out["new"] = [self.start, self.end]
            out["new_text"] = self.text
        if self.places:
            out["places"] = [list(p) for p in self.places]
        if self.reason:
            out["reason"] = self.reason
        return out


class Searchable:
    """A document's text and, built on first need, its matching key."""

    def __init__(self, text: str) -> None:
        self.text = text

    @cached_property
    def keyed(self) -> Keyed:
        return Keyed.of(self.text)


def stale_spans(record: Mapping[str, Any], line: int, documents: Mapping[str, Document]) -> list[StaleSpan]:
    """The stale spans of one ``questions.jsonl`` record (and those past a shortened document's end), in order."""
    answers = record.get("answers")
    if not isinstance(answers, list):
        answers = [record["answer"]] if isinstance(record.get("answer"), str) else []
    kept = tuple(a for a in answers if isinstance(a, str) and a.strip())
    qid = record.get("id")
    found = []
    for field in SPAN_FIELDS:
        items = record.get(field)
        for index, item in enumerate(items if isinstance(items, list) else ()):
            if is_stale_span(item, documents) or _past_the_end(item, documents):
                span = StaleSpan(str(qid), line, field, index, item["doc_id"], item["start"], item["end"], item["text"])
                found.append(replace(span, answers=kept) if field == "evidence" else span)
    return found


def _past_the_end(item: Any, documents: Mapping[str, Document]) -> bool:
    """A labelled span the document got too short for (the reader calls it outside the document): stale too."""
    if not isinstance(item, dict) or not isinstance(item.get("text"), str) or item.get("doc_id") not in documents:
        return False
    start, end = item.get("start"), item.get("end")
    integers = all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end))
    return integers and 0 <= start < end and end > len(documents[item["doc_id"]].text)


def _moved(span: StaleSpan, text: str, start: int, end: int, method: Method, similarity: float = 1.0) -> Found:
    return Found(span, "moved", method, start, end, text[start:end], similarity)


def _ambiguous(span: StaleSpan, places: Sequence[tuple[int, int]], method: Method, how: str) -> Found:
    count = f"more than {MAX_PLACES}" if len(places) > MAX_PLACES else str(len(places))
    return Found(span, "ambiguous", method, places=tuple(places[:MAX_PLACES]), reason=f"{how} at {count} places")


def find_again(document: Searchable, span: StaleSpan, before: str | None = None) -> Found:
    """Where ``span``'s text is in ``document`` now: moved (one place), ambiguous (several) or lost.

    ``before``: the document as it was labelled, when known: an ambiguous span
    is looked for again with its old surroundings (:func:`_with_context`).
    """
    found = _find(document, span)
    if found.status == "ambiguous" and before is not None:
        return _with_context(document, span, before) or found
    return found


def _find(document: Searchable, span: StaleSpan) -> Found:
    text = document.text
    exact = find_all(text, span.text, MAX_PLACES + 1)
    if len(exact) > 1:
        return _ambiguous(span, [(s, s + len(span.text)) for s in exact], "exact", "found exactly")
    needle = key_of(span.text)
    if not needle:
        return Found(span, "lost", reason="the label's text is only white space")
    keyed = document.keyed
    starts = find_all(keyed.key, needle, MAX_PLACES + 1)
    places = [keyed.original(s, s + len(needle)) for s in starts]
    if len(exact) == 1 and len(places) <= 1:
        return _moved(span, text, exact[0], exact[0] + len(span.text), "exact")
    if len(places) == 1:
        return _moved(span, text, *places[0], "normalised")
    if places:  # exact once, but as often again with other white space: which one is meant is unknowable
        how = "found exactly once, but" if exact else "found"
        return _ambiguous(span, places, "normalised", f"{how} with white space and Unicode normalised")
    return _fuzzy(document, span, needle)


def _with_context(document: Searchable, span: StaleSpan, before: str) -> Found | None:
    """The one place of the span's text with old surroundings around it, or ``None``.

    Each context (up to :data:`CONTEXT` old characters on both sides, before
    only, after only) that is found at exactly one place (exactly, else
    normalised) names a place; a context found more often names none. Every
    context that names one must name the same place: a unique match of a
    longer text, never a choice among places.
    """
    if before[span.start : span.end] != span.text:
        return None  # not the version the label was made on
    named: set[tuple[int, int]] = set()
    for lo, hi in _contexts(span, len(before)):
        place = _one_place(document, before, span, lo, hi)
        if place is not None:
            named.add(place)
    if len(named) != 1:
        return None
    (start, end) = named.pop()
    return _moved(span, document.text, start, end, "context")


def _contexts(span: StaleSpan, size: int) -> list[tuple[int, int]]:
    ranges = []
    for width in CONTEXT:
        lo, hi = max(0, span.start - width), min(size, span.end + width)
        ranges.extend([(lo, hi), (lo, span.end), (span.start, hi)])
    return [r for r in dict.fromkeys(ranges) if r != (span.start, span.end)]


def _one_place(document: Searchable, before: str, span: StaleSpan, lo: int, hi: int) -> tuple[int, int] | None:
    """Where the span lies inside ``before[lo:hi]`` found at exactly one place of the document, or ``None``."""
    exact = find_all(document.text, before[lo:hi], 2)
    if len(exact) == 1:
        start = exact[0] + span.start - lo
        return start, start + len(span.text)
    if exact:
        return None
    prefix, middle = key_of(before[lo : span.start]), key_of(span.text)
    whole = key_of(before[lo:hi])
    if not middle or whole != prefix + middle + key_of(before[span.end : hi]):
        return None  # a cluster across the span's edge: its key cannot be cut there
    places = find_all(document.keyed.key, whole, 2)
    if len(places) != 1:
        return None
    start = places[0] + len(prefix)
    return document.keyed.original(start, start + len(middle))


def _numbers(key: str) -> str:
    return "".join(c for c in key if unicodedata.numeric(c, None) is not None)


def _refusal(span: StaleSpan, needle: str, found: str) -> str:
    """Why a fuzzy place is refused however similar ("" when it is not): a number or an answer changed."""
    if _numbers(needle) != _numbers(found):
        return f"its numbers differ ({_numbers(needle)!r} -> {_numbers(found)!r})"
    for answer in span.answers:
        wanted = key_of(answer)
        if wanted and wanted in needle and wanted not in found:
            return f"the answer {answer!r} is not in it"
    return ""


def _windows(keyed: Keyed, needle: str, span: StaleSpan, edits: int) -> list[tuple[int, int]]:
    """Key ranges worth searching: around the old offset and every intact piece's occurrence, merged."""
    m, n = len(needle), len(keyed.key)
    old = keyed.key_position(span.start)
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


def _fuzzy(document: Searchable, span: StaleSpan, needle: str) -> Found:
    m = len(needle)
    edits = math.floor((1 - FUZZY_FLOOR) * m + 1e-9)
    if edits == 0:
        return Found(span, "lost", reason=f"not found; too short for a fuzzy match ({m} characters)")
    if m > MAX_FUZZY_CHARS:
        return Found(span, "lost", reason=f"not found; too long for a fuzzy match ({m} > {MAX_FUZZY_CHARS})")
    keyed = document.keyed
    places, nearest = _places(keyed.key, needle, _windows(keyed, needle, span, edits), edits)
    accepted, refused = [], []
    for distance, start, end in places:
        why = _refusal(span, needle, keyed.key[start:end])
        (refused if why else accepted).append((distance, start, end, why))
    if len(accepted) == 1:
        distance, start, end, _ = accepted[0]
        return _moved(span, document.text, *keyed.original(start, end), "fuzzy", 1 - distance / m)
    if accepted:
        originals = sorted(keyed.original(s, e) for _, s, e, _ in accepted)
        return _ambiguous(span, originals, "fuzzy", f"at least {FUZZY_FLOOR:.0%} similar")
    similarity = max(0.0, 1 - nearest / m)
    if refused:
        distance, start, end, why = refused[0]
        where = "[{}:{}]".format(*keyed.original(start, end))
        reason = f"the nearest place {where} is {1 - distance / m:.2f} similar, but {why}"
        return Found(span, "lost", similarity=1 - distance / m, reason=reason)
    return Found(
        span, "lost", similarity=similarity, reason=f"no place {FUZZY_FLOOR:.0%} similar (nearest {similarity:.2f})"
    )


def rewritten(record: Mapping[str, Any], moved: Sequence[Found], dropped: Sequence[Found] = ()) -> dict[str, Any]:
    """``record`` with each moved span's offsets and text replaced and each ``dropped`` span left out.

    A new dict; keys keep their order.
    """
    out = dict(record)
    for field in SPAN_FIELDS:
        if isinstance(record.get(field), list):
            out[field] = [dict(item) if isinstance(item, dict) else item for item in record[field]]
    for found in moved:
        item = out[found.span.field][found.span.index]
        item.update(start=found.start, end=found.end, text=found.text)
    for field in SPAN_FIELDS:
        gone = {f.span.index for f in dropped if f.span.field == field}
        if gone:
            out[field] = [item for i, item in enumerate(out[field]) if i not in gone]
    return out


def reanchor_hint(problems: Sequence[str], path: object) -> list[str]:
    """One line pointing at ``labels reanchor`` when ``problems`` hold stale labels (else none)."""
    stale = sum(STALE in line for line in problems)
    if not stale:
        return []
    return [
        f"{stale} stale label(s): if the documents changed but still hold the labelled text, "
        f"`python -m evalkit.labels reanchor {path}` finds it again"
    ]
