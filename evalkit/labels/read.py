"""The one reader of labelled sets, in two modes: strict (the sweep) and tolerant (label tools, the report).

Layout: ``docs/`` (one UTF-8 file per document), ``docs.jsonl`` (one line per
document: doc_id, path, title, n_chars, sha256, meta) and ``questions.jsonl``
(one labelled question per line, gold anchored to character spans). The
fields are parsed in :mod:`evalkit.labels.parse`; this module decides what a
problem means.

- **strict** (:func:`load_labelset`, what a sweep and ``python -m
  evalkit.labels validate`` run): every problem is collected, one line each
  naming file, line and field (``file:line: field 'name': what``), and the
  set is refused with all of them at once (:class:`LabelsetError`), so a user
  fixes a broken set in one pass instead of one error per run.
- **tolerant** (:func:`read_set` with ``mode="tolerant"``: label health and
  stats, importers, the report): keeps every question it can, drops only the
  spans that no longer match their document (a stale label) and hands back
  the same problem lines, so a span is stale here exactly when the sweep
  says so. The report renders an old run through it even when a label has
  gone stale since.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from evalkit.labels.fields import ID_CLASH, id_key
from evalkit.labels.parse import (
    STALE,
    is_stale_span,
    load_documents,
    parse_record,
    read_jsonl,
    without_stale_spans,
)
from evalkit.records import Document, Question, Span

__all__ = [
    "LabelSet",
    "LabelsetError",
    "ReadMode",
    "Reading",
    "document_fingerprints",
    "load_labelset",
    "read_set",
]

ReadMode = Literal["strict", "tolerant"]


class LabelsetError(ValueError):
    """A labelled set that cannot be used; ``problems`` holds one line per problem."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


@dataclass(frozen=True)
class LabelSet:
    """A validated labelled set: its documents and questions."""

    name: str
    """Folder name, used in run ids and reports."""
    root: Path
    documents: tuple[Document, ...]
    questions: tuple[Question, ...]
    fingerprint: str
    """Hash of every document text and the questions file: changes when either does."""
    warnings: tuple[str, ...] = ()
    """Problems that do not invalidate the set (e.g. a docs.jsonl sha256 out of date)."""

    def document(self, doc_id: str) -> Document:
        return self._by_id[doc_id]

    @property
    def _by_id(self) -> Mapping[str, Document]:
        cached = self.__dict__.get("_doc_index")
        if cached is None:
            cached = {doc.doc_id: doc for doc in self.documents}
            object.__setattr__(self, "_doc_index", cached)
        return cached


@dataclass(frozen=True)
class Reading:
    """One read of a labelled set: what could be used, and every line about what could not."""

    name: str
    root: Path
    documents: tuple[Document, ...]
    questions: tuple[Question, ...]
    """Strict: the questions without a problem. Tolerant: also those that parse once stale spans are dropped."""
    stale: tuple[str, ...]
    """Tolerant only: the stale-label lines (file:line: field: ...), spans whose text no longer matches."""
    problems: tuple[str, ...]
    """Every other problem (strict: stale labels too); the question or document it names was skipped."""
    warnings: tuple[str, ...]
    """Warnings that do not invalidate the set (a document changed since docs.jsonl)."""
    stale_evidence: Mapping[int, tuple[Span, ...]] = field(default_factory=dict)
    """Tolerant only: a kept question's line (``Question.line``) -> the evidence spans dropped as stale.

    A span's ``text`` is the label's, which the document no longer holds there.
    """


def read_set(path: str | Path, mode: ReadMode = "strict") -> Reading:
    """Read a labelled set in one pass, collecting every problem.

    Raises :class:`LabelsetError` only when there is nothing to read: no
    folder, no ``questions.jsonl``, or (strict) no documents at all.
    """
    root = Path(path)
    questions_path = root / "questions.jsonl"
    _check_layout(root, questions_path, needs_documents=mode == "strict")
    problems: list[str] = []
    warnings: list[str] = []
    has_documents = (root / "docs.jsonl").is_file() or (root / "docs").is_dir()
    documents = load_documents(root, problems, warnings) if has_documents else {}
    tolerant = _Tolerant(documents) if mode == "tolerant" else None
    questions: list[Question] = []
    seen: dict[str, int] = {}
    for number, record in read_jsonl(questions_path, problems):
        if tolerant is None:
            question = parse_record(number, record, questions_path, documents, problems)
        else:
            question = tolerant.parse(number, record, questions_path, problems)
        qid = record.get("id")
        key = id_key(qid) if isinstance(qid, str) else None
        if key is not None and key in seen:
            first = f"first on line {seen[key]}; {ID_CLASH}"
            problems.append(f"{questions_path}:{number}: field 'id': duplicate id {qid!r} ({first})")
            continue
        if key is not None:
            seen[key] = number
        if question is not None:
            questions.append(question)
    if tolerant is None and not problems:
        problems.extend(_emptiness(root, questions_path, documents, questions))
    return Reading(
        name=root.resolve().name,
        root=root,
        documents=tuple(documents.values()),
        questions=tuple(questions),
        stale=tuple(tolerant.stale) if tolerant else (),
        problems=tuple(problems),
        warnings=tuple(warnings),
        stale_evidence=dict(tolerant.stale_evidence) if tolerant else {},
    )


def load_labelset(path: str | Path) -> LabelSet:
    """Load and validate a labelled set (strict); raise :class:`LabelsetError` listing every problem."""
    reading = read_set(path, "strict")
    if reading.problems:
        raise LabelsetError(list(reading.problems))
    return LabelSet(
        name=reading.name,
        root=reading.root,
        documents=reading.documents,
        questions=reading.questions,
        fingerprint=_fingerprint(reading.documents, reading.root / "questions.jsonl"),
        warnings=reading.warnings,
    )


def _check_layout(root: Path, questions_path: Path, *, needs_documents: bool) -> None:
    """Raise :class:`LabelsetError` when the folder is not a labelled set at all."""
    if not root.is_dir():
        raise LabelsetError([f"{root}: labelled set folder does not exist"])
    if not questions_path.is_file():
        raise LabelsetError([f"{questions_path}: missing (a labelled set needs questions.jsonl)"])
    if needs_documents and not (root / "docs.jsonl").is_file() and not (root / "docs").is_dir():
        raise LabelsetError([f"{root}: missing docs.jsonl and docs/ (no documents)"])


def _emptiness(
    root: Path, questions_path: Path, documents: Mapping[str, Document], questions: list[Question]
) -> list[str]:
    """A set that parsed cleanly but has nothing to score (strict only: a sweep needs both)."""
    if not documents:
        return [f"{root}: no documents"]
    if not questions:
        return [f"{questions_path}: no questions (an empty labelled set cannot be scored)"]
    if not any(q.evidence_mode != "none" for q in questions):
        return [f"{questions_path}: no answerable question (recall and the recommendation need at least one)"]
    return []


class _Tolerant:
    """Tolerant parsing of question records: drop stale spans, keep the question if that is all that was wrong."""

    def __init__(self, documents: Mapping[str, Document]) -> None:
        self.documents = documents
        self.stale: list[str] = []
        self.stale_evidence: dict[int, tuple[Span, ...]] = {}

    def parse(self, number: int, record: dict[str, Any], path: Path, problems: list[str]) -> Question | None:
        """The question on one line, or None; its stale lines go to ``stale``, its other problems to ``problems``."""
        first: list[str] = []
        question = parse_record(number, record, path, self.documents, first)
        stale_lines = [line for line in first if STALE in line]
        self.stale.extend(stale_lines)
        if question is not None:
            return question
        if not stale_lines:
            problems.extend(first)
            return None
        # Parse again without the stale spans: what is still wrong is a problem of its own,
        # marked so a reader knows the line numbers refer to the record minus those spans.
        again: list[str] = []
        question = parse_record(number, without_stale_spans(record, self.documents), path, self.documents, again)
        problems.extend(f"{line} (after dropping stale spans)" for line in again if STALE not in line)
        spans = tuple(_stale_spans(record.get("evidence"), self.documents))
        if question is not None and spans:
            self.stale_evidence[number] = spans
        return question


def _stale_spans(items: Any, documents: Mapping[str, Document]) -> Iterable[Span]:
    """The stale span records among ``items``, as spans carrying the label's (now wrong) text."""
    for item in items if isinstance(items, list) else ():
        if is_stale_span(item, documents):
            yield Span(item["doc_id"], item["start"], item["end"], item["text"])


def _fingerprint(documents: Iterable[Document], questions_path: Path) -> str:
    digest = hashlib.sha256()
    for doc in sorted(documents, key=lambda d: d.doc_id):
        digest.update(doc.doc_id.encode("utf-8") + b"\0" + hashlib.sha256(doc.text.encode("utf-8")).digest())
    digest.update(questions_path.read_bytes())
    return digest.hexdigest()


def document_fingerprints(labelset: LabelSet) -> dict[str, str]:
    """sha256 per document text (for freshness checks against an earlier run)."""
    return {doc.doc_id: hashlib.sha256(doc.text.encode("utf-8")).hexdigest() for doc in labelset.documents}
