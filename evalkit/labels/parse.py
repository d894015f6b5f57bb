"""Parsing one labelled set line by line: documents, then question records, into records and problem lines.

The single place that knows the on-disk format's fields (``docs.jsonl``,
``questions.jsonl``, ``docs/``). Every function appends what is wrong to a
``problems`` list, one line each (``file:line: field 'name': what``), and
keeps going, so a reader can report a broken set in one pass;
:mod:`evalkit.labels.read` decides what a problem means (strict: the set is
refused; tolerant: the question is skipped). Reads files; computes nothing
else. May import: records.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from evalkit.labels.fields import (
    DATE_FIELDS,
    ID_CLASH,
    LONE_SURROGATE,
    acl_problem,
    date_problem,
    deep_surrogates,
    id_key,
    id_problem,
    superseded_problem,
    visible,
)
from evalkit.records import Document, Evidence, Question, Span

EVIDENCE_MODES = ("any", "all", "none")
STALE = "stale label"
"""Words every stale-span problem line holds (a span whose text no longer matches its document)."""


def read_text(path: Path) -> str:
    """A document exactly as offsets count it: UTF-8, newlines untranslated."""
    with open(path, encoding="utf-8", newline="") as handle:
        return handle.read()


MAX_INT_DIGITS = 18
"""Offsets and counts fit in 64 bits; a longer integer is a broken line, not a number to parse."""


class _LineRefused(ValueError):
    """A JSON line that parses but cannot be read as the format means it (the message says why)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are unique: with a key twice, which value is meant is unknowable."""
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise _LineRefused(f"field {key!r}: given twice in one object (which value is meant?)")
        seen[key] = value
    return seen


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise _LineRefused(f"a number of {len(digits.lstrip('-'))} digits (at most {MAX_INT_DIGITS})")
    return int(digits)


def jsonl_lines(path: Path) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """``(line number, object)`` of every non-blank line, or ``(line number, why it is not one)``.

    A byte-order mark on the first line is accepted (spreadsheet exports write one).
    """
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                yield number, f"not UTF-8 ({exc.reason} at byte {exc.start} of the line)"
                continue
            if not line.strip():
                continue
            try:
                record = json.loads(line, object_pairs_hook=_unique_keys, parse_int=_bounded_int)
            except json.JSONDecodeError as exc:
                yield number, f"invalid JSON ({exc.msg} at column {exc.colno})"
                continue
            except _LineRefused as exc:
                yield number, str(exc)
                continue
            except RecursionError:
                yield number, "JSON nested too deeply (a labelled set needs a few levels)"
                continue
            yield number, record if isinstance(record, dict) else f"expected a JSON object, got {type(record).__name__}"


def read_jsonl(path: Path, problems: list[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` of every non-blank line; a line that is not a JSON object is a problem."""
    for number, record in jsonl_lines(path):
        if isinstance(record, str):
            problems.append(f"{path}:{number}: {record}")
        else:
            yield number, record


def confined(root: Path, rel_path: str) -> tuple[Path, str]:
    """The document's path inside the set's folder, or why it is refused (a set must never read other files).

    Refused: absolute paths, ``..`` escapes, links that resolve outside the folder, anything but a regular file.
    """
    if "\x00" in rel_path:
        return root, "holds a NUL character; a path cannot"
    if Path(rel_path).is_absolute() or "\\" in rel_path:
        return root, "is absolute; document paths are relative to the labelled set's folder"
    path = root / rel_path
    if ".." in Path(rel_path).parts and not Path(os.path.normpath(path)).is_relative_to(os.path.normpath(root)):
        return path, "lies outside the labelled set's folder (a .. or a link out is refused)"
    try:
        inside = path.resolve(strict=True).is_relative_to(root.resolve(strict=True))
    except (OSError, RuntimeError):
        return path, "does not exist"
    if not inside:
        return path, "lies outside the labelled set's folder (a .. or a link out is refused)"
    if not path.is_file():
        return path, "is not a regular file"
    return path, ""


def load_documents(root: Path, problems: list[str], warnings: list[str]) -> dict[str, Document]:
    """The documents of a set by id: from ``docs.jsonl``, else every file under ``docs/``.

    A document that cannot be read is a problem and is left out; a text that
    changed since ``docs.jsonl`` recorded its sha256 is a warning.
    """
    index = root / "docs.jsonl"
    if not index.exists():
        return _folder_documents(root, problems)
    documents: dict[str, Document] = {}
    keys: set[str] = set()
    for number, record in read_jsonl(index, problems):
        where = f"{index}:{number}"
        doc_id, rel_path = record.get("doc_id"), record.get("path")
        if not isinstance(doc_id, str) or not doc_id:
            problems.append(f"{where}: field 'doc_id': missing or not a non-empty string")
            continue
        if id_problem(doc_id):
            problems.append(f"{where}: field 'doc_id': {id_problem(doc_id)}")
            continue
        if doc_id in documents or id_key(doc_id) in keys:
            problems.append(f"{where}: field 'doc_id': duplicate id {doc_id!r} ({ID_CLASH})")
            continue
        keys.add(id_key(doc_id))
        if not isinstance(rel_path, str) or not rel_path:
            problems.append(f"{where}: field 'path': missing for doc {doc_id!r}")
            continue
        path, refused = confined(root, rel_path)
        if refused:
            problems.append(f"{where}: field 'path': {rel_path!r} of doc {doc_id!r} {refused}")
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
        title = record.get("title")
        if title is not None and not isinstance(title, str):
            problems.append(f"{where}: field 'title': expected a string, got {type(title).__name__}")
            continue
        if not _document_fields_ok(where, doc_id, record, meta, text, problems):
            continue
        documents[doc_id] = Document(doc_id, text, rel_path, str(record.get("title") or doc_id), meta)
    return documents


def _document_fields_ok(
    where: str, doc_id: str, record: dict[str, Any], meta: dict[str, Any], text: str, problems: list[str]
) -> bool:
    """The fields the sweep reads from a document (dates, acl, text) are usable; each problem appended."""
    before = len(problems)
    for name in DATE_FIELDS:
        if date_problem(meta.get(name)):
            problems.append(f"{where}: field 'meta.{name}': {date_problem(meta.get(name))}")
    if superseded_problem(meta.get("superseded_by")):
        problems.append(f"{where}: field 'meta.superseded_by': {superseded_problem(meta.get('superseded_by'))}")
    if acl_problem(meta.get("acl")):
        problems.append(f"{where}: field 'meta.acl': {acl_problem(meta.get('acl'))}")
    if not visible(text):
        problems.append(f"{where}: field 'path': doc {doc_id!r} has no visible text")
    found = deep_surrogates(record)
    if found:
        problems.append(f"{where}: field '{found}': {LONE_SURROGATE}")
    return len(problems) == before


def _folder_documents(root: Path, problems: list[str]) -> dict[str, Document]:
    """A folder of documents without an index: every file under ``docs/`` is a document named by its path."""
    docs_dir = root / "docs"
    documents: dict[str, Document] = {}
    for path in sorted(p for p in docs_dir.rglob("*") if p.is_file()):
        if path.name.startswith(".") or confined(root, path.relative_to(root).as_posix())[1]:
            continue  # hidden files (.DS_Store) are no documents; links out of the set are never read
        doc_id = path.relative_to(docs_dir).with_suffix("").as_posix()
        try:
            text = read_text(path)
        except UnicodeDecodeError as exc:
            # One problem line rather than a traceback, like a docs.jsonl entry that is not UTF-8.
            problems.append(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})")
            continue
        documents[doc_id] = Document(doc_id, text, path.relative_to(root).as_posix(), doc_id)
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
        if not isinstance(doc_id, str) or doc_id not in documents:
            problems.append(f"{label}: question {qid!r} cites unknown doc {doc_id!r}")
            continue
        if not (isinstance(start, int) and isinstance(end, int)) or isinstance(start, bool) or isinstance(end, bool):
            problems.append(f"{label}: 'start' and 'end' must be integers")
            continue
        text = documents[doc_id].text
        if not 0 <= start < end <= len(text):
            problems.append(f"{label}: span [{start}, {end}) outside doc {doc_id!r} of {len(text)} characters")
            continue
        expected = item.get("text")
        actual = text[start:end]
        if expected is not None and not isinstance(expected, str):
            problems.append(f"{label}: 'text' must be a string (the span's text), got {type(expected).__name__}")
            continue
        if expected is not None and expected != actual:
            problems.append(
                f"{label}: {STALE}: question {qid!r} expects {_clip(expected)!r} at {doc_id}[{start}:{end}], "
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
    """The question on line ``number`` of ``path``, or None when it has a problem (each appended)."""
    where = f"{path}:{number}"
    before = len(problems)
    qid, text = record.get("id"), record.get("question")
    if not isinstance(qid, str) or not qid:
        problems.append(f"{where}: field 'id': missing or not a non-empty string")
        qid = f"<line {number}>"
    elif id_problem(qid):
        problems.append(f"{where}: field 'id': {id_problem(qid)}")
    if not isinstance(text, str) or not visible(text):
        problems.append(f"{where}: field 'question': missing or empty (nothing visible)")
    found = deep_surrogates(record)
    if found:
        problems.append(f"{where}: field '{found}': {LONE_SURROGATE}")
    for name in ("as_of",):
        value = (record.get("tags") or {}).get(name) if isinstance(record.get("tags"), dict) else None
        if date_problem(value):
            problems.append(f"{where}: field 'tags.{name}': {date_problem(value)}")
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


def is_stale_span(item: Any, documents: Mapping[str, Document]) -> bool:
    """Whether a span record is well formed but its ``text`` no longer matches its document."""
    if not isinstance(item, dict) or item.get("text") is None or item.get("doc_id") not in documents:
        return False
    start, end = item.get("start"), item.get("end")
    if not isinstance(start, int) or not isinstance(end, int):
        return False
    text = documents[item["doc_id"]].text
    return 0 <= start < end <= len(text) and text[start:end] != item["text"]


def without_stale_spans(record: dict[str, Any], documents: Mapping[str, Document]) -> dict[str, Any]:
    """``record`` without the spans whose ``text`` does not match their document (a new dict)."""
    cleaned = dict(record)
    for field in ("evidence", "source_passage"):
        if isinstance(record.get(field), list):
            cleaned[field] = [item for item in record[field] if not is_stale_span(item, documents)]
    return cleaned
