"""Where a labelled span is in its changed document: found again, checked in place, or queued (pure).

A span is looked at when it is stale (its ``text`` no longer lies at its
offsets, the reader's rule :func:`evalkit.labels.parse.is_stale_span`, or a
shortened document now ends before it) **or** when its document changed at
all (its sha256 is not the one ``docs.jsonl`` recorded): a span whose own
text moved while another occurrence of the same text shifted onto its old
offsets still reads right, and is still wrong.

Nothing is guessed. With the document as it was labelled at hand (``OLD``:
``--before``, or the copy the set keeps in ``.history/``), in this order:

1. **context**: the span's text with up to 80 characters of its old
   surroundings (both sides, before only, after only; widest first) found at
   exactly one place of the new document *and* exactly once in the old one
   (exactly, else normalised): that place is the span's. Every context that
   names a place must name the same one. A context always holds the span's own
   text, so a changed number (``1943 -> 1944``) is never matched through it.
2. **exact**, **normalised** (the matching keys of
   :mod:`evalkit.curate.reanchor.textkey`: NFKC, white space dropped: a
   reflowed paragraph, NFD accents, full-width forms) and **fuzzy**
   (:mod:`evalkit.curate.reanchor.fuzzy`) find the span's text in the new
   document; one place is taken only when the text occurred exactly once in
   OLD too. Had it occurred twice, the one place left may be the *other*
   occurrence (its own was edited away), so it is **ambiguous**.

A span that ends where it began is **unchanged** (checked); one at a new place
**moved**; several places or an unknowable one **ambiguous**; none **lost**; a
typo fixed inside the answer **proposed** (the new span and the answer as the
edit left it, for a person). Without OLD a span that still reads right cannot
be checked (the caller counts it), and a stale one found at one place is
ambiguous: the place is proposed, not taken.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, Literal

from evalkit.curate.reanchor.fuzzy import MAX_FUZZY_CHARS, fuzzy_places
from evalkit.curate.reanchor.textkey import Keyed, find_all, key_of
from evalkit.labels.parse import is_stale_span
from evalkit.records import Document

__all__ = ["Found", "Searchable", "StaleSpan", "find_again", "rewritten", "spans_to_check"]

MAX_PLACES = 10
"""Places listed for an ambiguous span."""
CONTEXT = (80, 40, 20, 10)
"""Characters of the old document either side of a span tried, widest first."""
SPAN_FIELDS = ("evidence", "source_passage")

Status = Literal["unchanged", "moved", "ambiguous", "lost", "proposed"]
Method = Literal["exact", "normalised", "fuzzy", "context", ""]
QUEUED: tuple[Status, ...] = ("ambiguous", "lost", "proposed")
"""Statuses a person decides (the question goes to the annotation queue)."""


@dataclass(frozen=True)
class StaleSpan:
    """One span of ``questions.jsonl`` to look at: where its record is, and what it says."""

    question_id: str
    line: int
    field: str
    """``evidence`` or ``source_passage``."""
    index: int
    doc_id: str
    start: int
    end: int
    text: str
    """The label's text."""
    answers: tuple[str, ...] = ()
    stale: bool = True
    """False: its text still lies at its offsets, but its document changed (it is checked all the same)."""

    @property
    def where(self) -> str:
        return f"{self.field}[{self.index}]"


@dataclass(frozen=True)
class Found:
    """Where a span is now."""

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
    answer: tuple[str, ...] = ()
    """Proposed: (the old answer, the answer as the edit left it); empty otherwise."""

    @property
    def queued(self) -> bool:
        return self.status in QUEUED

    @property
    def proposal(self) -> tuple[int, int] | None:
        """The one place offered to a person: the proposed or the single ambiguous place."""
        if self.status == "proposed" or (self.status == "ambiguous" and len(self.places) == 1):
            return (self.start, self.end) if self.status == "proposed" else self.places[0]
        return None

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
            "stale": span.stale,
            "status": self.status,
            "method": self.method,
            "similarity": round(self.similarity, 4),
        }
        if self.status in ("moved", "proposed"):
            out["new"] = [self.start, self.end]
            out["new_text"] = self.text
        if self.answer:
            out["answer"] = {"old": self.answer[0], "proposed": self.answer[1]}
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

    def count(self, text: str) -> int:
        """Occurrences of ``text`` (exact, or of its key when that is more), counted up to 2."""
        exact = len(find_all(self.text, text, 2))
        needle = key_of(text)
        return max(exact, len(find_all(self.keyed.key, needle, 2)) if needle else 0)


def spans_to_check(
    record: Mapping[str, Any], line: int, documents: Mapping[str, Document], changed: frozenset[str] = frozenset()
) -> list[StaleSpan]:
    """The spans of one record to look at: stale ones, those past a document's end, and all in a ``changed`` doc."""
    answers = record.get("answers")
    if not isinstance(answers, list):
        answers = [record["answer"]] if isinstance(record.get("answer"), str) else []
    kept = tuple(a for a in answers if isinstance(a, str) and a.strip())
    qid = record.get("id")
    found = []
    for field in SPAN_FIELDS:
        items = record.get(field)
        for index, item in enumerate(items if isinstance(items, list) else ()):
            stale = is_stale_span(item, documents) or _past_the_end(item, documents)
            if stale or _checkable(item, documents, changed):
                span = StaleSpan(str(qid), line, field, index, item["doc_id"], item["start"], item["end"], item["text"])
                found.append(replace(span, answers=kept if field == "evidence" else (), stale=stale))
    return found


def _checkable(item: Any, documents: Mapping[str, Document], changed: frozenset[str]) -> bool:
    """A well-formed span with its text, in a document that changed since it was labelled."""
    if not isinstance(item, dict) or item.get("doc_id") not in changed or not isinstance(item.get("text"), str):
        return False
    start, end = item.get("start"), item.get("end")
    integers = all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end))
    return integers and 0 <= start < end <= len(documents[item["doc_id"]].text)


def _past_the_end(item: Any, documents: Mapping[str, Document]) -> bool:
    """A labelled span the document got too short for (the reader calls it outside the document): stale too."""
    if not isinstance(item, dict) or not isinstance(item.get("text"), str) or item.get("doc_id") not in documents:
        return False
    start, end = item.get("start"), item.get("end")
    integers = all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end))
    return integers and 0 <= start < end and end > len(documents[item["doc_id"]].text)


def _placed(span: StaleSpan, text: str, start: int, end: int, method: Method, similarity: float = 1.0) -> Found:
    """Moved, or unchanged when the place is the span's own (same offsets, same text)."""
    same = (start, end) == (span.start, span.end) and text[start:end] == span.text
    return Found(span, "unchanged" if same else "moved", method, start, end, text[start:end], similarity)


def _ambiguous(span: StaleSpan, places: Sequence[tuple[int, int]], method: Method, how: str) -> Found:
    count = f"more than {MAX_PLACES}" if len(places) > MAX_PLACES else str(len(places))
    return Found(span, "ambiguous", method, places=tuple(places[:MAX_PLACES]), reason=f"{how} at {count} places")


def find_again(document: Searchable, span: StaleSpan, old: Searchable | None = None) -> Found:
    """Where ``span`` is in ``document`` now (the module docstring's rules).

    ``old``: the document as labelled, when known; ignored when it does not hold the span's text at
    the span's offsets (not the version the label was made on).
    """
    if old is not None and old.text[span.start : span.end] != span.text:
        old = None
    if old is not None:
        place = _with_context(document, span, old)
        if place is not None:
            return _placed(span, document.text, *place, "context")
    found = _find(document, span)
    if found.status not in ("moved", "unchanged", "proposed"):
        return found
    if old is None:
        if not span.stale:  # cannot happen through plan_reanchor (it never asks without OLD); kept honest
            return found
        where = found.start, found.end
        reason = (
            "found at one place, but the document as labelled is unknown (no --before, no copy in .history/): "
            "its text may have occurred elsewhere too"
        )
        if found.status == "proposed":
            return replace(found, reason=f"{found.reason}; {reason}")
        return Found(span, "ambiguous", found.method, places=(where,), similarity=found.similarity, reason=reason)
    if old.count(span.text) > 1:
        reason = (
            "its text occurred more than once in the document as labelled and no surroundings of its own "
            "are left: which occurrence it was is unknowable"
        )
        places = ((found.start, found.end),)
        return Found(span, "ambiguous", found.method, places=places, similarity=found.similarity, reason=reason)
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
        return _placed(span, text, exact[0], exact[0] + len(span.text), "exact")
    if len(places) == 1:
        return _placed(span, text, *places[0], "normalised")
    if places:  # exact once, but as often again with other white space: which one is meant is unknowable
        how = "found exactly once, but" if exact else "found"
        return _ambiguous(span, places, "normalised", f"{how} with white space and Unicode normalised")
    if len(needle) > MAX_FUZZY_CHARS:
        return Found(span, "lost", reason=f"not found; too long for a fuzzy match ({len(needle)} > {MAX_FUZZY_CHARS})")
    fuzzy = fuzzy_places(keyed, needle, span.start, span.answers)
    if len(fuzzy.accepted) == 1:
        start, end, similarity = fuzzy.accepted[0]
        return _placed(span, text, start, end, "fuzzy", similarity)
    if fuzzy.accepted:
        return _ambiguous(span, sorted(p[:2] for p in fuzzy.accepted), "fuzzy", "at least 90% similar")
    if fuzzy.proposed is not None:
        start, end, similarity, answer, a_start, a_end = fuzzy.proposed
        reason = f"{fuzzy.reason}: answer {answer!r} -> {text[a_start:a_end]!r}"
        new = (answer, text[a_start:a_end])
        return Found(span, "proposed", "fuzzy", start, end, text[start:end], similarity, reason=reason, answer=new)
    return Found(span, "lost", similarity=fuzzy.nearest, reason=fuzzy.reason)


def _with_context(document: Searchable, span: StaleSpan, old: Searchable) -> tuple[int, int] | None:
    """The one place of the span's text with its old surroundings around it, or ``None``.

    Each context (up to :data:`CONTEXT` old characters on both sides, before only, after only) found
    exactly once in the old document and at exactly one place of the new one (exactly, else normalised)
    names a place; every context that names one must name the same: a unique match of a longer text,
    never a choice among places.
    """
    named: set[tuple[int, int]] = set()
    for lo, hi in _contexts(span, len(old.text)):
        if old.count(old.text[lo:hi]) != 1:
            continue  # the surroundings repeat in the old document: they do not say which occurrence it was
        place = _one_place(document, old.text, span, lo, hi)
        if place is not None:
            named.add(place)
    return named.pop() if len(named) == 1 else None


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
