"""The annotation queue of a labelled set: ``queue.jsonl``, the questions still to be labelled.

``sample`` (from a query log), ``add-failures`` (from a run) and ``generate``
write it; the annotation page reads it and writes its decisions into
``questions.jsonl`` (:mod:`evalkit.curate.annotate.store`). The queue is not
part of the labelled-set format: ``validate`` and the sweep never read it,
so an unlabelled question can never be scored as if it were labelled. One
line per question::

    {"id": "log-3f2a…", "question": "...", "tags": {"source": "log", "frequency": 12, "failure": true, ...},
     "variants": ["...", "..."], "returned": [{"doc_id": "...", "start": 0, "end": 0}],
     "proposed": [{"doc_id": "...", "start": 10, "end": 17, "text": "..."}]}

``returned``: what production returned (``start == end == 0``: a whole
document); ``proposed``: spans an earlier label or a generator suggests, shown
for the annotator to accept or replace, never saved without them.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.curate.sampling import Sample, group_id
from evalkit.labels.fields import visible
from evalkit.labels.parse import read_jsonl
from evalkit.records import Document, Span

__all__ = [
    "QUEUE",
    "QueueItem",
    "atomic_write_text",
    "items_from_sample",
    "merge_queue",
    "queue_record",
    "read_queue",
    "write_queue",
]

QUEUE = "queue.jsonl"


@dataclass(frozen=True)
class QueueItem:
    """One question waiting for its label."""

    id: str
    question: str
    tags: Mapping[str, Any] = field(default_factory=dict)
    variants: tuple[str, ...] = ()
    """Other spellings folded into this question (from the log)."""
    returned: tuple[Span, ...] = ()
    proposed: tuple[Span, ...] = ()


def _span_out(span: Span, with_text: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"doc_id": span.doc_id, "start": span.start, "end": span.end}
    if with_text:
        out["text"] = span.text
    return out


def queue_record(item: QueueItem) -> dict[str, Any]:
    """One ``queue.jsonl`` line."""
    record: dict[str, Any] = {"id": item.id, "question": item.question, "tags": dict(item.tags)}
    if item.variants:
        record["variants"] = list(item.variants)
    if item.returned:
        record["returned"] = [_span_out(s, False) for s in item.returned]
    if item.proposed:
        record["proposed"] = [_span_out(s, True) for s in item.proposed]
    return record


def _spans_in(value: Any, documents: Mapping[str, Document], exact: bool) -> tuple[Span, ...]:
    """Spans of known documents inside their text; ``exact``: also their text must match (else dropped)."""
    spans = []
    for item in value if isinstance(value, list) else ():
        if not isinstance(item, dict) or item.get("doc_id") not in documents:
            continue
        start, end = item.get("start", 0), item.get("end", 0)
        text = documents[item["doc_id"]].text
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start <= end <= len(text)):
            continue
        if exact and (start == end or item.get("text") != text[start:end]):
            continue
        spans.append(Span(item["doc_id"], start, end, text[start:end]))
    return tuple(spans)


def read_queue(root: Path, documents: Mapping[str, Document]) -> tuple[tuple[QueueItem, ...], list[str]]:
    """The queue's items and one problem line per line that cannot be used (no file: an empty queue).

    Returned spans of unknown documents are dropped; proposed spans that no longer match their document too.
    """
    path = root / QUEUE
    problems: list[str] = []
    if not path.is_file():
        return (), problems
    items: list[QueueItem] = []
    seen: set[str] = set()
    for number, record in read_jsonl(path, problems):
        qid, text, tags = record.get("id"), record.get("question"), record.get("tags") or {}
        where = f"{path}:{number}"
        if not isinstance(qid, str) or not qid.strip():
            problems.append(f"{where}: field 'id': missing or not a non-empty string")
        elif qid in seen:
            problems.append(f"{where}: field 'id': duplicate id {qid!r}")
        elif not isinstance(text, str) or not visible(text):
            problems.append(f"{where}: field 'question': missing or empty")
        elif not isinstance(tags, dict):
            problems.append(f"{where}: field 'tags': expected an object")
        else:
            seen.add(qid)
            variants = tuple(v for v in record.get("variants") or () if isinstance(v, str))
            returned = _spans_in(record.get("returned"), documents, exact=False)
            proposed = _spans_in(record.get("proposed"), documents, exact=True)
            items.append(QueueItem(qid, text, tags, variants, returned, proposed))
    return tuple(items), problems


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, flush it to disk, then rename it over ``path``.

    A reader (or a server killed at any instant) sees the old file or the new one, never half of one.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)  # the rename itself survives a power cut
    finally:
        os.close(directory)


def write_queue(root: Path, items: Sequence[QueueItem]) -> Path:
    """Write the whole queue atomically."""
    text = "".join(json.dumps(queue_record(i), ensure_ascii=False) + "\n" for i in items)
    atomic_write_text(root / QUEUE, text)
    return root / QUEUE


def merge_queue(existing: Sequence[QueueItem], new: Iterable[QueueItem], known: Iterable[str] = ()) -> list[QueueItem]:
    """``existing`` followed by the new items whose id is neither queued nor in ``known`` (labelled ids)."""
    taken = {item.id for item in existing} | set(known)
    merged = list(existing)
    for item in new:
        if item.id not in taken:
            taken.add(item.id)
            merged.append(item)
    return merged


def items_from_sample(picked: Sample, documents: Mapping[str, Document]) -> list[QueueItem]:
    """Queue items of a sample, tagged as the method asks (``source=log``, ``frequency``, ``failure``)."""
    items = []
    for group, stratum in picked.picked:
        returned = tuple(
            Span(s.doc_id, s.start, s.end)
            for s in group.returned
            if s.doc_id in documents and s.end <= len(documents[s.doc_id].text)
        )
        tags: dict[str, Any] = {
            "source": "log",
            "lang": group.lang,
            "frequency": group.frequency,
            "failure": group.failures > 0,
            "failures": group.failures,
            "stratum": stratum,
            "kind": "known_error" if stratum == "failure" else "frequent",
            "first_seen": group.first_seen.date().isoformat(),
            "last_seen": group.last_seen.date().isoformat(),
        }
        if group.roles:
            tags["role"] = group.roles[0]
        if group.users:
            tags["users"] = group.users
        items.append(QueueItem(group_id(group.key), group.question, tags, group.variants[1:6], returned[:5]))
    return items
