"""Read and validate a labelled set in the shared on-disk format.

Layout: ``docs/`` (one UTF-8 file per document), ``docs.jsonl`` (one line per
document: doc_id, path, title, n_chars, sha256, meta) and ``questions.jsonl``
(one labelled question per line, gold anchored to character spans). Every
problem is collected, one line each naming file, line and field, so a user
fixes a broken set in one pass instead of one error per run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.records import Document, Evidence, Question, Span

EVIDENCE_MODES = ("any", "all", "none")


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


def read_text(path: Path) -> str:
    """A document exactly as offsets count it: UTF-8, newlines untranslated."""
    with open(path, encoding="utf-8", newline="") as handle:
        return handle.read()


def read_jsonl(path: Path, problems: list[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    with open(path, encoding="utf-8", newline="") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                problems.append(f"{path}:{number}: invalid JSON ({exc.msg} at column {exc.colno})")
                continue
            if not isinstance(record, dict):
                problems.append(f"{path}:{number}: expected a JSON object, got {type(record).__name__}")
                continue
            yield number, record


def load_documents(root: Path, problems: list[str], warnings: list[str]) -> dict[str, Document]:
    index = root / "docs.jsonl"
    documents: dict[str, Document] = {}
    if not index.exists():
        # A folder of documents without an index: every file is a document named by its path.
        docs_dir = root / "docs"
        for path in sorted(p for p in docs_dir.rglob("*") if p.is_file()):
            doc_id = path.relative_to(docs_dir).with_suffix("").as_posix()
            documents[doc_id] = Document(doc_id, read_text(path), path.relative_to(root).as_posix(), doc_id)
        return documents
    for number, record in read_jsonl(index, problems):
        where = f"{index}:{number}"
        doc_id, rel_path = record.get("doc_id"), record.get("path")
        if not isinstance(doc_id, str) or not doc_id:
            problems.append(f"{where}: field 'doc_id': missing or not a non-empty string")
            continue
        if doc_id in documents:
            problems.append(f"{where}: field 'doc_id': duplicate id {doc_id!r}")
            continue
        if not isinstance(rel_path, str) or not rel_path:
            problems.append(f"{where}: field 'path': missing for doc {doc_id!r}")
            continue
        path = root / rel_path
        if not path.is_file():
            problems.append(f"{where}: field 'path': file {rel_path!r} of doc {doc_id!r} does not exist")
            continue
        try:
            text = read_text(path)
        except UnicodeDecodeError as exc:
            problems.append(f"{where}: field 'path': {rel_path!r} is not UTF-8 ({exc.reason} at byte {exc.start})")
            continue
        expected_sha = record.get("sha256")
        if expected_sha and hashlib.sha256(text.encode("utf-8")).hexdigest() != expected_sha:
            warnings.append(f"{where}: field 'sha256': doc {doc_id!r} changed since docs.jsonl was written")
        meta = record.get("meta") or {}
        if not isinstance(meta, dict):
            problems.append(f"{where}: field 'meta': expected an object")
            meta = {}
        documents[doc_id] = Document(doc_id, text, rel_path, str(record.get("title") or doc_id), meta)
    return documents


def _spans(
    value: Any, field: str, where: str, qid: str, documents: Mapping[str, Document], problems: list[str]
) -> tuple[Span, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        problems.append(f"{where}: field '{field}': expected a list")
        return ()
    spans = []
    for i, item in enumerate(value):
        label = f"{where}: field '{field}[{i}]'"
        if not isinstance(item, dict):
            problems.append(f"{label}: expected an object")
            continue
        doc_id, start, end = item.get("doc_id"), item.get("start"), item.get("end")
        if doc_id not in documents:
            problems.append(f"{label}: question {qid!r} cites unknown doc {doc_id!r}")
            continue
        if not (isinstance(start, int) and isinstance(end, int)) or isinstance(start, bool):
            problems.append(f"{label}: 'start' and 'end' must be integers")
            continue
        text = documents[doc_id].text
        if not 0 <= start < end <= len(text):
            problems.append(f"{label}: span [{start}, {end}) outside doc {doc_id!r} of {len(text)} characters")
            continue
        expected = item.get("text")
        actual = text[start:end]
        if expected is not None and expected != actual:
            problems.append(
                f"{label}: stale label: question {qid!r} expects {_clip(expected)!r} at {doc_id}[{start}:{end}], "
                f"document has {_clip(actual)!r}"
            )
            continue
        spans.append(Evidence(doc_id, start, end, actual))
    return tuple(spans)


def _clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_record(
    number: int, record: dict[str, Any], path: Path, documents: Mapping[str, Document], problems: list[str]
) -> Question | None:
    where = f"{path}:{number}"
    before = len(problems)
    qid, text = record.get("id"), record.get("question")
    if not isinstance(qid, str) or not qid:
        problems.append(f"{where}: field 'id': missing or not a non-empty string")
        qid = f"<line {number}>"
    if not isinstance(text, str) or not text.strip():
        problems.append(f"{where}: field 'question': missing or empty")
    mode = record.get("evidence_mode")
    if mode not in EVIDENCE_MODES:
        problems.append(f"{where}: field 'evidence_mode': {mode!r} is not one of any/all/none")
    answerable = record.get("answerable", mode != "none")
    if not isinstance(answerable, bool):
        problems.append(f"{where}: field 'answerable': expected true or false")
    answers_raw = record.get("answers")
    if answers_raw is None:
        answers_raw = [record["answer"]] if record.get("answer") else []
    if not isinstance(answers_raw, list) or not all(isinstance(a, str) for a in answers_raw):
        problems.append(f"{where}: field 'answers': expected a list of strings")
        answers_raw = []
    tags = record.get("tags") or {}
    if not isinstance(tags, dict):
        problems.append(f"{where}: field 'tags': expected an object")
        tags = {}
    evidence = _spans(record.get("evidence"), "evidence", where, str(qid), documents, problems)
    passage = _spans(record.get("source_passage"), "source_passage", where, str(qid), documents, problems)
    if mode == "none" and (answerable is True or evidence):
        problems.append(f"{where}: field 'evidence_mode': 'none' needs answerable=false and no evidence")
    if mode in ("any", "all") and not record.get("evidence") and answerable:
        problems.append(f"{where}: field 'evidence': answerable question {qid!r} has no evidence span")
    if mode in ("any", "all") and answerable is False:
        problems.append(f"{where}: field 'answerable': false, but evidence_mode is {mode!r}")
    if len(problems) > before:
        return None
    return Question(
        id=str(qid),
        question=str(text),
        answers=tuple(a for a in answers_raw if a),
        answerable=bool(answerable),
        evidence=evidence,
        evidence_mode=mode,
        tags=tags,
        source_passage=passage,
        line=number,
    )


def load_labelset(path: str | Path) -> LabelSet:
    """Load and validate a labelled set; raise :class:`LabelsetError` listing every problem."""
    root = Path(path)
    problems: list[str] = []
    warnings: list[str] = []
    if not root.is_dir():
        raise LabelsetError([f"{root}: labelled set folder does not exist"])
    questions_path = root / "questions.jsonl"
    if not questions_path.is_file():
        raise LabelsetError([f"{questions_path}: missing (a labelled set needs questions.jsonl)"])
    if not (root / "docs.jsonl").is_file() and not (root / "docs").is_dir():
        raise LabelsetError([f"{root}: missing docs.jsonl and docs/ (no documents)"])
    documents = load_documents(root, problems, warnings)
    questions: list[Question] = []
    seen: dict[str, int] = {}
    for number, record in read_jsonl(questions_path, problems):
        question = parse_record(number, record, questions_path, documents, problems)
        qid = record.get("id")
        if isinstance(qid, str) and qid in seen:
            problems.append(f"{questions_path}:{number}: field 'id': duplicate id {qid!r} (first on line {seen[qid]})")
            continue
        if isinstance(qid, str):
            seen[qid] = number
        if question is not None:
            questions.append(question)
    if not documents and not problems:
        problems.append(f"{root}: no documents")
    if not questions and not problems:
        problems.append(f"{questions_path}: no questions (an empty labelled set cannot be scored)")
    if problems:
        raise LabelsetError(problems)
    return LabelSet(
        name=root.resolve().name,
        root=root,
        documents=tuple(documents.values()),
        questions=tuple(questions),
        fingerprint=_fingerprint(documents.values(), questions_path),
        warnings=tuple(warnings),
    )


def _fingerprint(documents: Any, questions_path: Path) -> str:
    digest = hashlib.sha256()
    for doc in sorted(documents, key=lambda d: d.doc_id):
        digest.update(doc.doc_id.encode("utf-8") + b"\0" + hashlib.sha256(doc.text.encode("utf-8")).digest())
    digest.update(questions_path.read_bytes())
    return digest.hexdigest()


def document_fingerprints(labelset: LabelSet) -> dict[str, str]:
    """sha256 per document text (for freshness checks against an earlier run)."""
    return {doc.doc_id: hashlib.sha256(doc.text.encode("utf-8")).hexdigest() for doc in labelset.documents}
