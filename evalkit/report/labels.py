"""The labelled set, read for display: questions, gold answers and document text.

The report shows the gold span in its document and the text of every
retrieved chunk, so it reads the labelled set folder the manifest names. It
validates nothing (the sweep did that) and tolerates a set that has moved or
changed since: what it cannot find, it reports as missing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class GoldSpan:
    """One evidence span of a question."""

    doc_id: str
    start: int
    end: int


@dataclass(frozen=True)
class LabelledQuestion:
    """A question as the labelled set states it (all text untrusted)."""

    id: str
    question: str
    answers: tuple[str, ...]
    answerable: bool
    evidence_mode: str
    evidence: tuple[GoldSpan, ...]
    tags: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LabelledSet:
    """Questions by id and where each document's text lives."""

    root: Path
    questions: Mapping[str, LabelledQuestion]
    doc_paths: Mapping[str, Path]
    """doc_id -> file; documents are read on demand by :func:`read_documents`."""


def find_labelset(manifest: Mapping[str, Any], run_dir: Path, override: str | Path | None = None) -> Path | None:
    """The labelled set folder of a run: ``override``, else the manifest's path as given, from the
    working directory, or from the project folder above ``reports/``; None when none exists."""
    if override is not None:
        return Path(override) if (Path(override) / "questions.jsonl").is_file() else None
    raw = (manifest.get("labelset") or {}).get("path") or ((manifest.get("config") or {}).get("labelset") or {}).get(
        "path"
    )
    if not raw:
        return None
    path = Path(str(raw)).expanduser()
    candidates = [path] if path.is_absolute() else [path, run_dir.resolve().parent.parent / path]
    for candidate in candidates:
        if (candidate / "questions.jsonl").is_file():
            return candidate
    return None


def _jsonl(path: Path) -> Iterable[dict[str, Any]]:
    with open(path, encoding="utf-8", newline="") as handle:
        for line in handle:
            if line.strip():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(record, dict):
                    yield record


def _spans(items: Any) -> tuple[GoldSpan, ...]:
    spans = []
    for item in items if isinstance(items, list) else ():
        try:
            spans.append(GoldSpan(str(item["doc_id"]), int(item["start"]), int(item["end"])))
        except (KeyError, TypeError, ValueError):
            continue
    return tuple(spans)


def _question(record: Mapping[str, Any]) -> LabelledQuestion:
    answers = record.get("answers")
    if not isinstance(answers, list):
        answers = [record["answer"]] if record.get("answer") else []
    mode = str(record.get("evidence_mode", ""))
    tags = record.get("tags") if isinstance(record.get("tags"), dict) else {}
    return LabelledQuestion(
        id=str(record.get("id", "")),
        question=str(record.get("question", "")),
        answers=tuple(str(a) for a in answers if a),
        answerable=bool(record.get("answerable", mode != "none")),
        evidence_mode=mode,
        evidence=_spans(record.get("evidence")),
        tags=tags or {},
    )


def read_labelset(root: Path) -> LabelledSet:
    """Questions and document locations of a labelled set folder (no document text yet)."""
    questions = {q.id: q for q in map(_question, _jsonl(root / "questions.jsonl"))}
    doc_paths: dict[str, Path] = {}
    index = root / "docs.jsonl"
    if index.is_file():
        for record in _jsonl(index):
            if isinstance(record.get("doc_id"), str) and isinstance(record.get("path"), str):
                doc_paths[record["doc_id"]] = root / record["path"]
    elif (root / "docs").is_dir():
        docs = root / "docs"
        for path in sorted(p for p in docs.rglob("*") if p.is_file()):
            doc_paths[path.relative_to(docs).with_suffix("").as_posix()] = path
    return LabelledSet(root=root, questions=questions, doc_paths=doc_paths)


def read_documents(labelset: LabelledSet, doc_ids: Iterable[str]) -> dict[str, str]:
    """Text of the named documents (offsets count code points of the file read with newline="")."""
    texts: dict[str, str] = {}
    for doc_id in sorted(set(doc_ids)):
        path = labelset.doc_paths.get(doc_id)
        if path is None or not path.is_file():
            continue
        with open(path, encoding="utf-8", newline="", errors="replace") as handle:
            texts[doc_id] = handle.read()
    return texts
