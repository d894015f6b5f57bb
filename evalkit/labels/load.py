"""Reading labelled sets leniently: the documents of a folder, and a set with stale labels.

:func:`load_labelset` refuses a set with any problem, which is right before a
sweep. Health checks and imports need more: :func:`tolerant_load` keeps every
question it can, drops only the spans that no longer match their document
(a stale label) and hands back the loader's own problem lines, and
:func:`read_documents` reads the corpus of a labelled set or of a plain
folder of text files. Both reuse the loader's parsing (``evalkit.labels.read``),
so a span is stale here exactly when the loader says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.labels.read import LabelsetError, load_documents, parse_record, read_jsonl, read_text
from evalkit.records import Document, Question

__all__ = ["TolerantSet", "parse_question", "read_documents", "tolerant_load"]


@dataclass(frozen=True)
class TolerantSet:
    """A labelled set read leniently: what could be used, and what could not."""

    name: str
    root: Path
    documents: tuple[Document, ...]
    questions: tuple[Question, ...]
    """Every question that parses once its stale spans are dropped."""
    stale: tuple[str, ...]
    """The loader's stale-label lines (file:line: field: ...): spans whose text no longer matches."""
    problems: tuple[str, ...]
    """Other problems; the question or document they name was skipped."""
    warnings: tuple[str, ...]
    """Warnings that do not invalidate the set (a document changed since docs.jsonl)."""


def read_documents(path: str | Path) -> tuple[Document, ...]:
    """The documents of a labelled set folder (``docs.jsonl`` or ``docs/``) or of a plain folder of files.

    A folder with ``docs.jsonl`` keeps its ids, titles, paths and meta. A plain
    folder makes every file a document named by its path without suffix, with
    ``path`` ``docs/<relative path>``. Raises :class:`LabelsetError`.
    """
    root = Path(path)
    if not root.is_dir():
        raise LabelsetError([f"{root}: documents folder does not exist"])
    if (root / "docs.jsonl").is_file() or (root / "docs").is_dir():
        problems: list[str] = []
        documents = load_documents(root, problems, [])
        if problems:
            raise LabelsetError(problems)
        return tuple(documents.values())
    documents_list = []
    for file in sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith(".")):
        relative = file.relative_to(root)
        try:
            text = read_text(file)
        except UnicodeDecodeError as exc:
            raise LabelsetError([f"{file}: not UTF-8 ({exc.reason} at byte {exc.start})"]) from None
        doc_id = relative.with_suffix("").as_posix()
        documents_list.append(Document(doc_id, text, f"docs/{relative.as_posix()}", doc_id))
    if not documents_list:
        raise LabelsetError([f"{root}: no documents"])
    return tuple(documents_list)


def parse_question(
    record: dict[str, Any], number: int, source: str | Path, documents: Mapping[str, Document]
) -> tuple[Question | None, list[str]]:
    """Check one ``questions.jsonl``-shaped record exactly as the loader does.

    Returns the question (``None`` if it has problems) and the problem lines,
    each ``source:number: field ...``.
    """
    problems: list[str] = []
    question = parse_record(number, record, Path(source), documents, problems)
    return question, problems


def _stale_free(record: dict[str, Any], documents: Mapping[str, Document]) -> dict[str, Any]:
    """``record`` without the spans whose ``text`` does not match their document (a new dict)."""

    def fresh(item: Any) -> bool:
        if not isinstance(item, dict) or item.get("text") is None or item.get("doc_id") not in documents:
            return True
        start, end = item.get("start"), item.get("end")
        if not isinstance(start, int) or not isinstance(end, int):
            return True
        text = documents[item["doc_id"]].text
        return not (0 <= start < end <= len(text)) or text[start:end] == item["text"]

    cleaned = dict(record)
    for field in ("evidence", "source_passage"):
        if isinstance(record.get(field), list):
            cleaned[field] = [item for item in record[field] if fresh(item)]
    return cleaned


def tolerant_load(path: str | Path) -> TolerantSet:
    """Read a labelled set keeping what is usable; raise :class:`LabelsetError` only if nothing can be read."""
    root = Path(path)
    questions_path = root / "questions.jsonl"
    if not root.is_dir():
        raise LabelsetError([f"{root}: labelled set folder does not exist"])
    if not questions_path.is_file():
        raise LabelsetError([f"{questions_path}: missing (a labelled set needs questions.jsonl)"])
    problems: list[str] = []
    warnings: list[str] = []
    documents = (
        load_documents(root, problems, warnings) if (root / "docs.jsonl").is_file() or (root / "docs").is_dir() else {}
    )
    stale: list[str] = []
    questions: list[Question] = []
    seen: dict[str, int] = {}
    for number, record in read_jsonl(questions_path, problems):
        first: list[str] = []
        question = parse_record(number, record, questions_path, documents, first)
        stale_lines = [line for line in first if "stale label" in line]
        stale.extend(stale_lines)
        if question is None:
            again: list[str] = []
            if stale_lines:
                question = parse_record(number, _stale_free(record, documents), questions_path, documents, again)
                again = [f"{line} (after dropping stale spans)" for line in again]
            else:
                again = first
            problems.extend(line for line in again if "stale label" not in line)
        qid = record.get("id")
        if isinstance(qid, str) and qid in seen:
            problems.append(f"{questions_path}:{number}: field 'id': duplicate id {qid!r} (first on line {seen[qid]})")
            continue
        if isinstance(qid, str):
            seen[qid] = number
        if question is not None:
            questions.append(question)
    return TolerantSet(
        name=root.resolve().name,
        root=root,
        documents=tuple(documents.values()),
        questions=tuple(questions),
        stale=tuple(stale),
        problems=tuple(problems),
        warnings=tuple(warnings),
    )
