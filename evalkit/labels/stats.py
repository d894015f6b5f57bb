"""Composition of a labelled set: who asks what, in which language, answered where.

:func:`label_stats` is pure (documents and questions in, a frozen
:class:`LabelStats` out); :func:`format_stats` renders it as a plain-text
table and ``LabelStats.to_dict()`` as JSON.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from evalkit.records import Document, Question

__all__ = [
    "Counts",
    "Distribution",
    "LabelStats",
    "TagComposition",
    "composition",
    "format_stats",
    "label_stats",
    "share",
]

UNSET = "(unset)"
MAX_COMPOSITION_VALUES = 8
"""A tag gets a composition line when it takes at most this many distinct values."""

Counts = tuple[tuple[str, int], ...]
"""(value, count) pairs, most frequent first, ties by value."""


@dataclass(frozen=True)
class Distribution:
    """Summary of a list of numbers (all 0 when it is empty)."""

    n: int
    min: float
    median: float
    mean: float
    max: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Distribution:
        """Summarise ``values``."""
        if not values:
            return cls(0, 0.0, 0.0, 0.0, 0.0)
        return cls(len(values), min(values), statistics.median(values), statistics.fmean(values), max(values))

    def to_dict(self) -> dict[str, float]:
        """Plain dict for JSON."""
        return {"n": self.n, "min": self.min, "median": self.median, "mean": self.mean, "max": self.max}

    def line(self) -> str:
        """``min 1 / median 12 / mean 20.1 / max 300``."""
        return f"min {self.min:g} / median {self.median:g} / mean {self.mean:.1f} / max {self.max:g}"


@dataclass(frozen=True)
class TagComposition:
    """How the questions split over the values of one tag."""

    tag: str
    counts: Counts
    """Per value (``(unset)`` for questions without the tag)."""
    total: int

    def line(self) -> str:
        """``kind: frequent 50% / known_error 50%``."""
        return f"{self.tag}: " + " / ".join(f"{value} {share(n, self.total)}" for value, n in self.counts)


@dataclass(frozen=True)
class LabelStats:
    """Statistics of one labelled set."""

    name: str
    n_questions: int
    n_documents: int
    doc_chars: int
    answerable: Counts
    """``answerable`` / ``unanswerable``."""
    by_language: Counts
    by_kind: Counts
    evidence_mode: Counts
    multi_hop: Counts
    unanswerable_kind: Counts
    """Over unanswerable questions only."""
    role: Counts
    composition: tuple[TagComposition, ...]
    """Every tag with at most :data:`MAX_COMPOSITION_VALUES` distinct scalar values."""
    evidence_chars: Distribution
    """Length in characters of every evidence span."""
    docs_with_evidence: tuple[str, ...]
    docs_passage_only: tuple[str, ...]
    """Documents cited only as a source passage (e.g. of unanswerable questions)."""
    docs_never_used: tuple[str, ...]
    """Documents no question cites: distractors."""
    questions_per_doc: Counts
    """Questions whose evidence lies in each document, every document, most first."""

    @property
    def questions_per_doc_distribution(self) -> Distribution:
        """Spread of :attr:`questions_per_doc` over all documents."""
        return Distribution.of([n for _, n in self.questions_per_doc])

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {
            "name": self.name,
            "questions": self.n_questions,
            "documents": self.n_documents,
            "doc_chars": self.doc_chars,
            "answerable": dict(self.answerable),
            "by_language": dict(self.by_language),
            "by_kind": dict(self.by_kind),
            "evidence_mode": dict(self.evidence_mode),
            "multi_hop": dict(self.multi_hop),
            "unanswerable_kind": dict(self.unanswerable_kind),
            "role": dict(self.role),
            "composition": {c.tag: {"counts": dict(c.counts), "line": c.line()} for c in self.composition},
            "evidence_chars": self.evidence_chars.to_dict(),
            "docs_with_evidence": len(self.docs_with_evidence),
            "docs_passage_only": list(self.docs_passage_only),
            "docs_never_used": list(self.docs_never_used),
            "questions_per_doc": dict(self.questions_per_doc),
            "questions_per_doc_distribution": self.questions_per_doc_distribution.to_dict(),
        }


def share(n: int, total: int) -> str:
    """A percentage for humans: ``50%``, ``<1%`` for a small non-zero share."""
    if not total:
        return "0%"
    percent = 100 * n / total
    return "<1%" if 0 < percent < 0.5 else f"{percent:.0f}%"


def _label(value: Any) -> str:
    """A tag value as shown: JSON for non-strings (``true``, ``3``), the string itself otherwise."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _counts(values: Iterable[str]) -> Counts:
    return tuple(sorted(Counter(values).items(), key=lambda kv: (-kv[1], kv[0])))


def _tag_counts(questions: Sequence[Question], tag: str) -> Counts:
    return _counts(_label(q.tags[tag]) if tag in q.tags else UNSET for q in questions)


def composition(questions: Sequence[Question], max_values: int = MAX_COMPOSITION_VALUES) -> tuple[TagComposition, ...]:
    """A composition per tag with scalar values and at most ``max_values`` distinct ones, by tag name."""
    values: dict[str, set[str]] = {}
    skipped: set[str] = set()
    for question in questions:
        for tag, value in question.tags.items():
            if not isinstance(value, str | bool | int | float) and value is not None:
                skipped.add(tag)
                continue
            values.setdefault(tag, set()).add(_label(value))
    return tuple(
        TagComposition(tag, _tag_counts(questions, tag), len(questions))
        for tag in sorted(values)
        if tag not in skipped and len(values[tag]) <= max_values
    )


def label_stats(name: str, documents: Sequence[Document], questions: Sequence[Question]) -> LabelStats:
    """Statistics of a labelled set's questions over its documents."""
    evidence_docs: Counter[str] = Counter()
    passage_docs: set[str] = set()
    for question in questions:
        evidence_docs.update({span.doc_id for span in question.evidence})
        passage_docs.update(span.doc_id for span in question.source_passage)
    doc_ids = [doc.doc_id for doc in documents]
    unanswerable = [q for q in questions if not q.answerable]
    return LabelStats(
        name=name,
        n_questions=len(questions),
        n_documents=len(documents),
        doc_chars=sum(len(doc.text) for doc in documents),
        answerable=_counts("answerable" if q.answerable else "unanswerable" for q in questions),
        by_language=_counts(q.lang or UNSET for q in questions),
        by_kind=_tag_counts(questions, "kind"),
        evidence_mode=_counts(q.evidence_mode for q in questions),
        multi_hop=_tag_counts(questions, "multi_hop"),
        unanswerable_kind=_tag_counts(unanswerable, "unanswerable_kind"),
        role=_tag_counts(questions, "role"),
        composition=composition(questions),
        evidence_chars=Distribution.of([len(span) for q in questions for span in q.evidence]),
        docs_with_evidence=tuple(d for d in doc_ids if d in evidence_docs),
        docs_passage_only=tuple(d for d in doc_ids if d in passage_docs and d not in evidence_docs),
        docs_never_used=tuple(d for d in doc_ids if d not in passage_docs and d not in evidence_docs),
        questions_per_doc=tuple(sorted(((d, evidence_docs[d]) for d in doc_ids), key=lambda kv: (-kv[1], kv[0]))),
    )


def _count_line(counts: Counts, total: int) -> str:
    return " / ".join(f"{value} {n} ({share(n, total)})" for value, n in counts) or "-"


def _ids(ids: Sequence[str], limit: int = 8) -> str:
    """``3: a, b, c`` (at most ``limit`` ids shown)."""
    if not ids:
        return "0"
    shown = ", ".join(ids[:limit])
    return f"{len(ids)}: {shown}" + (f", … (+{len(ids) - limit})" if len(ids) > limit else "")


def format_stats(stats: LabelStats) -> str:
    """A plain-text table of :class:`LabelStats`."""
    total = stats.n_questions
    n_unanswerable = sum(n for _, n in stats.unanswerable_kind)
    rows = [
        ("labelled set", stats.name),
        ("questions", str(total)),
        ("documents", f"{stats.n_documents} ({stats.doc_chars:,} characters)"),
        ("answerable", _count_line(stats.answerable, total)),
        ("language", _count_line(stats.by_language, total)),
        ("kind", _count_line(stats.by_kind, total)),
        ("evidence_mode", _count_line(stats.evidence_mode, total)),
        ("multi_hop", _count_line(stats.multi_hop, total)),
        ("unanswerable_kind", _count_line(stats.unanswerable_kind, n_unanswerable)),
        ("role", _count_line(stats.role, total)),
        ("evidence chars", f"{stats.evidence_chars.n} spans: {stats.evidence_chars.line()}"),
        ("docs with evidence", f"{len(stats.docs_with_evidence)} of {stats.n_documents}"),
        ("docs passage only", _ids(stats.docs_passage_only)),
        ("docs never used", _ids(stats.docs_never_used)),
        ("questions per doc", stats.questions_per_doc_distribution.line()),
        ("most asked docs", ", ".join(f"{d} ({n})" for d, n in stats.questions_per_doc[:5] if n) or "-"),
    ]
    width = max(len(label) for label, _ in rows)
    lines = [f"{label:<{width}}  {value}" for label, value in rows]
    lines.append("")
    lines.append(f"composition (share of all questions; tags with at most {MAX_COMPOSITION_VALUES} values)")
    lines.extend(f"  {c.line()}" for c in stats.composition)
    return "\n".join(lines)
