"""What ``labels reanchor`` would do to a set: every span to look at, where it is now, and the lines to write.

:func:`plan_reanchor` reads the set with the reader ``labels validate`` uses
(:func:`evalkit.labels.load.readable_set`: a set it cannot read whole is
refused, every problem named, never reported as "nothing stale"), finds the
document as each span was labelled (``--before``, else the set's own copy in
``.history/``, :mod:`evalkit.labels.history`) and asks
:func:`evalkit.curate.reanchor.find.find_again` about each stale span and each
span of a document whose sha256 is not the one ``docs.jsonl`` recorded.
:mod:`evalkit.curate.reanchor.write` writes the outcome.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evalkit.curate.queue import QueueItem
from evalkit.curate.reanchor.find import Found, Searchable, find_again, rewritten, spans_to_check
from evalkit.labels.fields import visible
from evalkit.labels.history import recall, recorded_sha256, sha256_of
from evalkit.labels.load import read_documents, readable_set
from evalkit.labels.parse import jsonl_lines
from evalkit.records import Document, Span

__all__ = ["QUESTIONS", "Reanchoring", "plan_reanchor", "raw_lines"]

QUESTIONS = "questions.jsonl"


@dataclass(frozen=True)
class Reanchoring:
    """What reanchoring a set found and what it would write."""

    root: Path
    found: tuple[Found, ...]
    lines: Mapping[int, str | None] = field(default_factory=dict)
    """Line number -> its new text (``None``: the question leaves for the queue); other lines stay."""
    queued: tuple[QueueItem, ...] = ()
    originals: Mapping[str, str] = field(default_factory=dict)
    """Queued question id -> its original ``questions.jsonl`` line."""
    kept: tuple[str, ...] = ()
    """Lines with an unresolved span that could not be queued (no id or no question text): left as they are."""
    documents: tuple[str, ...] = ()
    """Documents looked at (their docs.jsonl sha256 and n_chars are refreshed, their text kept in history)."""
    unchecked: Mapping[str, int] = field(default_factory=dict)
    """Changed document -> its spans that still read right but could not be checked (no old text known)."""
    digest: str = ""
    """sha256 of ``questions.jsonl`` as read: writing refuses a file changed since."""

    def counts(self) -> dict[str, int]:
        status = Counter(f.status for f in self.found)
        method = Counter(f.method for f in self.found if f.status == "moved")
        return {
            "looked_at": len(self.found),
            "stale": sum(f.span.stale for f in self.found),
            "unchanged": status["unchanged"],
            "moved": status["moved"],
            "exact": method["exact"],
            "normalised": method["normalised"],
            "fuzzy": method["fuzzy"],
            "context": method["context"],
            "ambiguous": status["ambiguous"],
            "lost": status["lost"],
            "proposed": status["proposed"],
            "unchecked": sum(self.unchecked.values()),
            "questions_rewritten": sum(1 for v in self.lines.values() if v is not None),
            "questions_queued": len(self.queued),
        }


def raw_lines(path: Path) -> list[bytes]:
    """Every line of ``path`` with its ending, numbered as :func:`jsonl_lines` numbers them (from 1)."""
    with open(path, "rb") as handle:
        return list(handle)


def _valid_evidence(record: Mapping[str, Any], documents: Mapping[str, Document]) -> tuple[Span, ...]:
    """The evidence spans of ``record`` whose text lies at their offsets (what the page may propose)."""
    spans = []
    for item in record.get("evidence") or ():
        if isinstance(item, dict) and item.get("doc_id") in documents:
            start, end, text = item.get("start"), item.get("end"), documents[item["doc_id"]].text
            inside = isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text)
            if inside and item.get("text") in (None, text[start:end]):
                spans.append(Span(item["doc_id"], start, end, text[start:end]))
    return tuple(spans)


def _note(found: Found) -> str:
    span = found.span
    places = ", ".join(f"[{s}:{e}]" for s, e in found.places)
    where = f"{span.where} {span.doc_id}[{span.start}:{span.end}] {_clip(span.text)!r}"
    return f"{where}: {found.status}: {found.reason}" + (f" ({places})" if places else "")


def _clip(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _queue_item(
    record: Mapping[str, Any], after: Mapping[str, Any], unresolved: Sequence[Found], docs: Mapping[str, Document]
) -> QueueItem:
    """The queued question: its spans still valid and the one place of each unresolved span, proposed."""
    tags = dict(record.get("tags") or {}) if isinstance(record.get("tags"), dict) else {}
    statuses = {f.status for f in unresolved}
    tags["reanchor"] = next(s for s in ("lost", "ambiguous", "proposed") if s in statuses)
    tags["reanchor_note"] = "; ".join(_note(f) for f in unresolved)
    answers = [f for f in unresolved if f.answer]
    if answers:  # side by side on the page: accepting the proposed span makes its text the answer
        tags["reanchor_answer"] = "; ".join(f"{f.answer[0]!r} -> {f.answer[1]!r}" for f in answers)
    proposed = list(_valid_evidence(after, docs))
    for f in unresolved:
        place = f.proposal
        text = docs[f.span.doc_id].text
        if place is not None and all((s.doc_id, s.start, s.end) != (f.span.doc_id, *place) for s in proposed):
            proposed.append(Span(f.span.doc_id, place[0], place[1], text[place[0] : place[1]]))
    return QueueItem(str(record["id"]), str(record["question"]), tags, proposed=tuple(proposed))


def _passage_dropped(found: Found) -> Found:
    return replace(found, reason=f"{found.reason}; the source passage is dropped (it is no gold)")


def _old_texts(root: Path, before: str | Path | None, recorded: Mapping[str, str]) -> dict[str, str]:
    """doc_id -> the document as labelled: ``--before``'s, else the set's kept copy of the recorded version."""
    if before is not None:
        return {d.doc_id: d.text for d in read_documents(before)}
    old = {}
    for doc_id, sha in recorded.items():
        text = recall(root, sha)
        if text is not None:
            old[doc_id] = text
    return old


def _changed(documents: Mapping[str, Document], recorded: Mapping[str, str], old: Mapping[str, str]) -> frozenset[str]:
    """Documents whose text is not the one labelled: another sha256 than recorded, or other than ``--before``'s."""
    changed = {d for d, doc in documents.items() if d in recorded and sha256_of(doc.text) != recorded[d]}
    changed |= {d for d, text in old.items() if d in documents and documents[d].text != text}
    return frozenset(changed)


def plan_reanchor(root: str | Path, before: str | Path | None = None) -> Reanchoring:
    """Every span to look at in the set at ``root``, where it is now, and the lines to write.

    Raises :class:`evalkit.labels.read.LabelsetError` (a set not read whole) or ``ValueError``.
    ``before``: the documents as they were labelled (a labelled set or a folder of files, read as
    ``import --docs`` reads one); without it, the copies in the set's ``.history/``.
    """
    root = Path(root)
    reading = readable_set(root)
    documents = {d.doc_id: d for d in reading.documents}
    recorded = recorded_sha256(root)
    old = _old_texts(root, before, recorded)
    changed = _changed(documents, recorded, old)
    raw = raw_lines(root / QUESTIONS)
    searchable: dict[str, Searchable] = {}
    labelled: dict[str, Searchable] = {}
    """The documents as labelled."""
    found: list[Found] = []
    lines: dict[int, str | None] = {}
    queued: list[QueueItem] = []
    originals: dict[str, str] = {}
    kept: list[str] = []
    unchecked: Counter[str] = Counter()
    held: set[str] = set()
    for number, record in jsonl_lines(root / QUESTIONS):
        if not isinstance(record, dict):
            continue
        spans = []
        for span in spans_to_check(record, number, documents, changed):
            if span.stale or span.doc_id in old:
                spans.append(span)
            else:
                unchecked[span.doc_id] += 1
        if not spans:
            continue
        results = []
        for span in spans:
            document = searchable.setdefault(span.doc_id, Searchable(documents[span.doc_id].text))
            previous = None
            if span.doc_id in old:
                previous = labelled.setdefault(span.doc_id, Searchable(old[span.doc_id]))
            results.append(find_again(document, span, previous))
        # A source passage is no gold (the sweep never reads it): one not found again is dropped, not queued.
        results = [_passage_dropped(f) if f.queued and f.span.field != "evidence" else f for f in results]
        found.extend(results)
        passages = [f for f in results if f.queued and f.span.field != "evidence"]
        after = rewritten(record, [f for f in results if f.status == "moved"], passages)
        unresolved = [f for f in results if f.queued and f.span.field == "evidence"]
        if not unresolved:
            if after != record:
                lines[number] = json.dumps(after, ensure_ascii=False) + "\n"
        elif (
            isinstance(record.get("id"), str)
            and isinstance(record.get("question"), str)
            and visible(record["question"])
        ):
            lines[number] = None
            queued.append(_queue_item(record, after, unresolved, documents))
            originals[record["id"]] = raw[number - 1].decode("utf-8-sig" if number == 1 else "utf-8").rstrip("\n")
        else:
            kept.append(f"{root / QUESTIONS}:{number}: no id or question text to queue; line left as it is")
            held.update(f.span.doc_id for f in unresolved)
    # A document keeps its old sha256 while a span in it is unchecked or unresolved in place: the next run
    # must still see it as changed. The others are brought up to date (every label in them was settled).
    held.update(unchecked)
    looked_at = [*(f.span.doc_id for f in found), *sorted(changed)]
    touched = tuple(d for d in dict.fromkeys(looked_at) if d not in held)
    digest = hashlib.sha256(b"".join(raw)).hexdigest()
    return Reanchoring(
        root, tuple(found), lines, tuple(queued), originals, tuple(kept), touched, dict(unchecked), digest
    )
