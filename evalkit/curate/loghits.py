"""What production logged as returned, placed in the labelled set's documents (pure).

A logged hit is a chunk (``doc#start-end``: its offsets), a document id (the whole document), or content.
Content is anchored where it occurs: in its document when the id is known, else anywhere in the corpus,
exactly, else with white space normalised (:mod:`evalkit.labels.locate`, the anchoring of the external
retriever's text hits). Two uses:

- :func:`entry_spans`: the spans ``labels sample`` shows in the annotation page;
- :func:`external_records`: the hits as the external retriever's reply (``{"doc_id", "start", "end",
  "score"}`` or ``{"text", "score"}``), so production's logged top-k is scored by the very code that
  scores ``retriever=external`` (:func:`evalkit.retrieval.external.hits.anchor_hits`). A hit without a
  logged score gets one from its rank (best first), as thresholds slice only on a score; a document the
  set does not hold is counted, not scored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from evalkit.curate.querylog import LogEntry, LoggedHit
from evalkit.labels.locate import Locator, locate, locate_in_text
from evalkit.records import Document, Span

__all__ = ["entry_spans", "external_records", "with_anchored_content"]


def _place(hit: LoggedHit, texts: Mapping[str, str], locator: Locator | None) -> Span | None:
    """The span of one hit in the set, or None when it is not there."""
    if hit.doc_id and hit.doc_id not in texts:
        return None
    if hit.doc_id and (hit.end > hit.start or not hit.text):
        end = hit.end if hit.end > hit.start else len(texts[hit.doc_id])
        return Span(hit.doc_id, hit.start, end) if end <= len(texts[hit.doc_id]) else None
    if hit.doc_id:
        found = locate_in_text(texts[hit.doc_id], hit.text)
        return None if found is None else Span(hit.doc_id, found[0], found[1])
    where = locate(locator, hit.text) if locator is not None else None
    return None if where is None else Span(where.doc_id, where.start, where.end)


def entry_spans(hits: Sequence[LoggedHit], texts: Mapping[str, str], locator: Locator | None) -> tuple[Span, ...]:
    """The logged hits found in the set, in rank order (a whole document as ``Span(doc_id, 0, 0)``)."""
    spans = []
    for hit in hits:
        if hit.doc_id and not hit.text and hit.end <= hit.start:
            spans.append(Span(hit.doc_id, 0, 0))  # the queue's form of "the whole document"
            continue
        span = _place(hit, texts, locator)
        if span is not None:
            spans.append(span)
    return tuple(spans)


def with_anchored_content(
    entries: Sequence[LogEntry], documents: Sequence[Document], locator: Locator | None
) -> tuple[LogEntry, ...]:
    """Entries whose logged content is anchored: ``returned`` gains the spans content hits were found at."""
    texts = {d.doc_id: d.text for d in documents}
    out = []
    for entry in entries:
        if any(h.text for h in entry.hits):
            placed = entry_spans(entry.hits, texts, locator)
            unknown = tuple(s for s in entry.returned if s.doc_id not in texts)  # still reported as unknown
            entry = replace(entry, returned=placed + unknown)
        out.append(entry)
    return tuple(out)


def external_records(hits: Sequence[LoggedHit], texts: Mapping[str, str]) -> tuple[list[dict[str, Any]], int]:
    """The hits as the external retriever's reply for one query, and how many the set does not hold (an unknown
    document, or a chunk past the end of its document's current text)."""
    records: list[dict[str, Any]] = []
    unknown = 0
    for rank, hit in enumerate(hits):
        score = float(-rank) if hit.score is None else hit.score
        if hit.doc_id and hit.doc_id not in texts:
            if not hit.text:
                unknown += 1
                continue
            records.append({"text": hit.text, "score": score})  # the id is foreign: its content may be here
        elif hit.text and hit.end <= hit.start:
            records.append({"text": hit.text, "score": score} | ({"doc_id": hit.doc_id} if hit.doc_id else {}))
        else:
            end = hit.end if hit.end > hit.start else len(texts[hit.doc_id])
            if end > len(texts[hit.doc_id]):  # a chunk of an older version of the document: not in the set
                unknown += 1
                continue
            records.append({"doc_id": hit.doc_id, "start": hit.start, "end": end, "score": score})
    return records, unknown
