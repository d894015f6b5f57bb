"""Writing a labelled set in the shared on-disk format.

Records in, files out: ``docs/`` (one UTF-8 file per document, written with
``newline=""`` so offsets stay exact), ``docs.jsonl`` (sha256 and n_chars of
each text) and ``questions.jsonl``. The record functions are pure; only
:func:`write_labelset` touches the disk.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from evalkit.labels.history import remember
from evalkit.records import Document, Question, Span

__all__ = ["document_record", "question_record", "safe_name", "span_record", "write_labelset"]

_UNSAFE = re.compile(r"[^\w.\-]+")


def safe_name(text: str, limit: int = 100) -> str:
    """A file-name-safe id from free text (letters of any script, digits, ``._-``)."""
    name = _UNSAFE.sub("_", text.strip()).strip("._") or "doc"
    return name[:limit]


def span_record(span: Span, with_text: bool = True) -> dict[str, Any]:
    """One span as the shared format writes it."""
    record: dict[str, Any] = {"doc_id": span.doc_id, "start": span.start, "end": span.end}
    if with_text:
        record["text"] = span.text
    return record


def question_record(question: Question) -> dict[str, Any]:
    """One ``questions.jsonl`` line (``source_passage`` without text, as the shared sets write it)."""
    return {
        "id": question.id,
        "question": question.question,
        "answer": question.answers[0] if question.answers else "",
        "answers": list(question.answers),
        "answerable": question.answerable,
        "evidence": [span_record(s) for s in question.evidence],
        "evidence_mode": question.evidence_mode,
        "source_passage": [span_record(s, with_text=False) for s in question.source_passage],
        "tags": dict(question.tags),
    }


def _document_path(doc: Document) -> str:
    """Where the document goes, relative to the set: its own path when safe, else ``docs/<safe id>.md``."""
    path = PurePosixPath(doc.path) if doc.path else None
    if path is not None and not path.is_absolute() and ".." not in path.parts and path.parts[:1] == ("docs",):
        return path.as_posix()
    return f"docs/{safe_name(doc.doc_id)}.md"


def document_record(doc: Document) -> dict[str, Any]:
    """One ``docs.jsonl`` line."""
    return {
        "doc_id": doc.doc_id,
        "path": _document_path(doc),
        "title": doc.title or doc.doc_id,
        "n_chars": len(doc.text),
        "sha256": hashlib.sha256(doc.text.encode("utf-8")).hexdigest(),
        "meta": dict(doc.meta),
    }


def _jsonl(records: Sequence[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def write_labelset(
    out: str | Path, documents: Sequence[Document], questions: Sequence[Question], overwrite: bool = False
) -> Path:
    """Write a labelled set to ``out``; refuse to replace an existing one unless ``overwrite``.

    With ``overwrite``, files are written over; nothing is deleted (a stale file
    left in ``docs/`` shows up as a ``validate`` warning). Raises ``FileExistsError`` or ``ValueError``
    (two documents that would share a file).
    """
    root = Path(out)
    existing = [name for name in ("docs", "docs.jsonl", "questions.jsonl") if (root / name).exists()]
    if existing and not overwrite:
        raise FileExistsError(f"{root} already holds a labelled set ({', '.join(existing)}); pass --overwrite")
    records = [document_record(doc) for doc in documents]
    paths = [r["path"] for r in records]
    if len(set(paths)) != len(paths):
        clash = sorted({p for p in paths if paths.count(p) > 1})
        raise ValueError(f"documents would share a file: {', '.join(clash[:5])}")
    for doc, record in zip(documents, records):
        target = root / record["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "w", encoding="utf-8", newline="") as handle:
            handle.write(doc.text)
    (root / "docs.jsonl").write_text(_jsonl(records), encoding="utf-8", newline="")
    (root / "questions.jsonl").write_text(_jsonl([question_record(q) for q in questions]), encoding="utf-8", newline="")
    remember(root, documents, {r["doc_id"]: r["sha256"] for r in records})  # the documents as labelled, for reanchor
    return root
