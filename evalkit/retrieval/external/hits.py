"""The external retriever's contract: what it is asked, what a hit may look like, and hits as spans.

A team's production retriever answers ``function(queries, k)`` (or the same over HTTP) with one list of
hits per query, best first; a Python function that declares a ``documents`` parameter also gets the
labelled set's documents (:func:`document_record`), so a stand-in retriever can index the set it is
scored on. A hit is either offsets into the labelled set's document::

    {"doc_id": "policy-12", "start": 1040, "end": 1530, "score": 0.82}

or the text it returned, anchored back to a document span here (exactly, else with white space
normalised: the anchoring ``labels sample`` uses for production logs), optionally with its document::

    {"text": "Travel must be booked ...", "score": 0.82, "doc_id": "policy-12"}

A hit whose text occurs in no document is counted (and reported), not scored as relevant: production
returned something the labelled set does not hold. A hit that cannot be right (reversed or negative
offsets, an unknown document, no score, a NaN) is a :class:`ExternalHitError` naming the query, the hit
and the field: one line for the user, never a silent zero.

Pure: no I/O; the calls live in ``calls.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalkit.labels.locate import Locator, build_locator, locate, locate_in_text
from evalkit.records import Document, Question


class ExternalHitError(ValueError):
    """A reply from the external retriever that cannot be scored (one line naming query, hit and field)."""


@dataclass(frozen=True)
class SpanHit:
    """One returned hit as a document span, with the retriever's own score."""

    doc_id: str
    start: int
    end: int
    score: float


@dataclass(frozen=True)
class AnchoredHits:
    """Every query's hits as spans, best first, and what could not be placed."""

    hits: tuple[tuple[SpanHit, ...], ...]
    unanchored: tuple[int, ...]
    """Per query: text hits found in no document (left out of its list)."""
    anchored_text: int
    """Text hits placed in a document (the rest came as offsets)."""

    @property
    def n_unanchored(self) -> int:
        return sum(self.unanchored)


def document_record(document: Document) -> dict[str, Any]:
    """What a retriever that asks for ``documents`` gets per document: its id, text, title and metadata."""
    return {"doc_id": document.doc_id, "text": document.text, "title": document.title, "meta": dict(document.meta)}


def query_record(question: Question) -> dict[str, Any]:
    """What the external retriever is asked per query: ``{"id", "question", "tags"}``."""
    return {"id": question.id, "question": question.question, "tags": dict(question.tags)}


def check_results(results: Any, n_queries: int, where: str) -> list[list[Any]]:
    """A reply's ``results``: one list per query asked, in order (anything else is one line)."""
    if not isinstance(results, list):
        raise ExternalHitError(f"{where}: expected one list of hits per query, got {type(results).__name__}")
    if len(results) != n_queries:
        raise ExternalHitError(f"{where}: {n_queries} queries asked, {len(results)} lists of hits returned")
    for i, hits in enumerate(results):
        if not isinstance(hits, list):
            raise ExternalHitError(f"{where}: the hits of query #{i} are {type(hits).__name__}, not a list")
    return results


def anchor_hits(
    questions: Sequence[Question],
    results: Sequence[Sequence[Any]],
    documents: Sequence[Document],
    where: str,
    locator_of: Callable[[], Locator] | None = None,
) -> AnchoredHits:
    """Every query's raw hits as :class:`SpanHit` spans (raises :class:`ExternalHitError` on a hit that cannot be).

    ``locator_of`` gives the corpus locator for text hits without a doc_id; pass one built once when
    anchoring batch by batch (building it is a pass over the corpus).
    """
    texts = {doc.doc_id: doc.text for doc in documents}
    locator: Locator | None = None
    out: list[tuple[SpanHit, ...]] = []
    unanchored: list[int] = []
    anchored_text = 0
    for question, raw_hits in zip(questions, results, strict=True):
        placed: list[SpanHit] = []
        lost = 0
        for rank, raw in enumerate(raw_hits):
            at = f"{where}: query {question.id!r}, hit {rank}"
            if not isinstance(raw, Mapping):
                raise ExternalHitError(f"{at}: expected an object with doc_id/start/end or text, and score")
            score = _score(raw, at)
            if "text" in raw and "start" not in raw and "end" not in raw:
                if locator is None and raw.get("doc_id") is None:
                    locator = locator_of() if locator_of else build_locator(documents)
                hit = _from_text(raw, score, texts, locator, at)
                if hit is None:
                    lost += 1
                    continue
                anchored_text += 1
            else:
                hit = _from_offsets(raw, score, texts, at)
            placed.append(hit)
        out.append(tuple(placed))
        unanchored.append(lost)
    return AnchoredHits(tuple(out), tuple(unanchored), anchored_text)


def _score(raw: Mapping[str, Any], at: str) -> float:
    if "score" not in raw:
        raise ExternalHitError(f"{at}: score: missing (thresholds slice on it; send the retriever's own score)")
    value = raw["score"]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ExternalHitError(f"{at}: score: {_short(value)} is not a finite number")
    return float(value)


def _doc_id(raw: Mapping[str, Any], texts: Mapping[str, str], at: str) -> str:
    doc_id = raw.get("doc_id")
    if not isinstance(doc_id, str):
        raise ExternalHitError(f"{at}: doc_id: {_short(doc_id)} is not a string")
    if doc_id not in texts:
        raise ExternalHitError(f"{at}: doc_id: {_short(doc_id)} is not a document of the labelled set")
    return doc_id


def _from_offsets(raw: Mapping[str, Any], score: float, texts: Mapping[str, str], at: str) -> SpanHit:
    doc_id = _doc_id(raw, texts, at)
    bounds = []
    for key in ("start", "end"):
        value = raw.get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ExternalHitError(f"{at}: {key}: {_short(value)} is not a whole number (character offsets)")
        bounds.append(value)
    start, end = bounds
    length = len(texts[doc_id])
    if start < 0:
        raise ExternalHitError(f"{at}: start: {start} is negative")
    if end <= start:
        raise ExternalHitError(f"{at}: end: {end} is not after start {start}")
    if end > length:
        raise ExternalHitError(f"{at}: end: {end} is past the end of {doc_id!r} ({length} characters)")
    return SpanHit(doc_id, start, end, score)


def _from_text(
    raw: Mapping[str, Any], score: float, texts: Mapping[str, str], locator: Locator | None, at: str
) -> SpanHit | None:
    text = raw["text"]
    if not isinstance(text, str) or not text.strip():
        raise ExternalHitError(f"{at}: text: {_short(text)} is not a non-empty string")
    if raw.get("doc_id") is not None:
        doc_id = _doc_id(raw, texts, at)
        found = locate_in_text(texts[doc_id], text)
        return None if found is None else SpanHit(doc_id, found[0], found[1], score)
    assert locator is not None
    where = locate(locator, text)
    return None if where is None else SpanHit(where.doc_id, where.start, where.end, score)


def _short(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
