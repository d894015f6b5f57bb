"""Reading labelled sets leniently, for the label tools: a set with stale labels, and a folder of documents.

:func:`evalkit.labels.read.load_labelset` refuses a set with any problem,
which is right before a sweep. Health checks and imports need more:
:func:`tolerant_load` is the one reader's tolerant mode (it keeps every
question it can and drops only stale spans), :func:`read_documents` reads
the corpus of a labelled set or of a plain folder of text files, and
:func:`parse_question` checks one record by the loader's own rules. Nothing
here parses the format itself (that is :mod:`evalkit.labels.parse`), so a
span is stale here exactly when the sweep says so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalkit.labels.parse import load_documents, parse_record, read_text
from evalkit.labels.read import LabelsetError, Reading, read_set
from evalkit.records import Document, Question

__all__ = ["TolerantSet", "blocking_problems", "parse_question", "read_documents", "readable_set", "tolerant_load"]

TolerantSet = Reading
"""A labelled set read leniently (the tolerant mode's :class:`~evalkit.labels.read.Reading`)."""


def tolerant_load(path: str | Path) -> Reading:
    """Read a labelled set keeping what is usable; raise :class:`LabelsetError` only if nothing can be read."""
    return read_set(path, "tolerant")


AFTER_STALE = "(after dropping stale spans)"
_PAST_THE_END = re.compile(r": span \[(\d+), (\d+)\) outside doc ")


def blocking_problems(reading: Reading) -> tuple[str, ...]:
    """The problems of a tolerant reading that no label tool may work around: everything but stale labels.

    A stale span (its text no longer at its offsets), a span past the end of a
    shortened document (``0 <= start < end``, the document too short) and what
    a question lacks once those are dropped are what the tools repair or
    report. Anything else (a document file missing, binary or renamed, a line
    that is not JSON, negative or reversed offsets) means the set was not read
    whole: a tool that went on would speak about documents it never read.
    """

    def past_the_end(line: str) -> bool:
        match = _PAST_THE_END.search(line)
        return match is not None and int(match[1]) < int(match[2])

    return tuple(p for p in reading.problems if not p.endswith(AFTER_STALE) and not past_the_end(p))


def readable_set(path: str | Path) -> Reading:
    """The tolerant reading of a labelled set every ``labels`` tool starts from; raises :class:`LabelsetError`.

    The same reader as ``labels validate`` (:func:`evalkit.labels.read.read_set`); it refuses with one line
    (the first :func:`blocking_problems` line and how many more), so a tool never reports on a set it could
    not read whole.
    """
    reading = read_set(path, "tolerant")
    blocking = blocking_problems(reading)
    if blocking:
        more = (
            f" (and {len(blocking) - 1} more problem(s): `labels validate {path}` lists them)" if blocking[1:] else ""
        )
        raise LabelsetError([f"{blocking[0]}{more}; not read whole, nothing done"])
    return reading


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
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        relative = file.relative_to(root)
        if any(part.startswith(".") for part in relative.parts):  # hidden: .git, a set's .history/ copies
            continue
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
