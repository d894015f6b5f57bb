"""The labelled set, read for display: questions, gold answers and document text.

The report shows the gold span in its document and the text of every
retrieved chunk, so it reads the labelled set folder the manifest names,
through the one labelled-set reader in its tolerant mode
(:func:`evalkit.labels.read.read_set`): the fields mean here what they meant
to the sweep. A set that has moved or changed since the run still renders:
a question or document that can no longer be read is shown as missing, and
an evidence span whose text no longer matches its document (a stale label)
is shown as stale instead of marking the wrong text as gold.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.labels.read import LabelsetError, Reading, read_set
from evalkit.records import Question, Span


@dataclass(frozen=True)
class GoldSpan:
    """One evidence span of a question."""

    doc_id: str
    start: int
    end: int
    text: str = ""
    """The labelled text; only kept for a stale span (the document no longer holds it there)."""


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
    stale_evidence: tuple[GoldSpan, ...] = ()
    """Evidence spans whose text no longer matches their document: not gold any more."""


@dataclass(frozen=True)
class LabelledSet:
    """Questions by id and the text of every document that could be read."""

    root: Path
    questions: Mapping[str, LabelledQuestion]
    texts: Mapping[str, str]
    """doc_id -> text; :func:`read_documents` picks the ones a page needs."""


def _span(span: Span, stale: bool = False) -> GoldSpan:
    return GoldSpan(span.doc_id, span.start, span.end, span.text if stale else "")


def _question(question: Question, stale: Iterable[Span]) -> LabelledQuestion:
    return LabelledQuestion(
        id=question.id,
        question=question.question,
        answers=question.answers,
        answerable=question.answerable,
        evidence_mode=question.evidence_mode,
        evidence=tuple(_span(s) for s in question.evidence),
        tags=question.tags,
        stale_evidence=tuple(_span(s, stale=True) for s in stale),
    )


def read_labelset(root: Path) -> LabelledSet:
    """Questions and document texts of a labelled set folder, read tolerantly (never raises on its content)."""
    try:
        reading: Reading = read_set(root, "tolerant")
    except LabelsetError:  # the folder went away since find_labelset looked
        return LabelledSet(root=root, questions={}, texts={})
    questions = {q.id: _question(q, reading.stale_evidence.get(q.line, ())) for q in reading.questions}
    texts = {doc.doc_id: doc.text for doc in reading.documents}
    return LabelledSet(root=root, questions=questions, texts=texts)


def read_documents(labelset: LabelledSet, doc_ids: Iterable[str]) -> dict[str, str]:
    """Text of the named documents that could be read (offsets count code points, newlines untranslated)."""
    return {doc_id: labelset.texts[doc_id] for doc_id in sorted(set(doc_ids)) if doc_id in labelset.texts}
