"""Project gold evidence spans onto any chunking (pure).

Gold labels are evidence spans ``(doc_id, start, end)``, never chunk ids, so
one labelled set serves every chunking. A retrievable *unit* is anything
span-shaped: a :class:`~evalkit.records.Span`, a
:class:`~evalkit.records.Chunk`, or, for parent-child chunking, the parent
span (see :func:`unit_span`).

A unit is relevant to an evidence span when both lie in the same document and

    overlap(unit, evidence) / min(len(unit), len(evidence)) >= tau

With the default ``tau = 1.0`` the unit holds the whole answer span, or lies
wholly inside a long evidence span. Zero-length spans are never relevant, and
neither is a pair that shares no character (whatever ``tau``).

Ratios are compared as ``overlap / shorter >= tau`` (one correctly rounded
division), never as ``overlap >= tau * shorter``: ``0.7 * 10`` is
``7.000000000000001`` in binary floating point, which would reject a unit
sitting exactly on the boundary. The scalar and vectorised paths use the same
division, so they agree bit for bit.

How the evidence spans combine depends on the question's ``evidence_mode``:
``any`` (one span suffices), ``all`` (every span is needed; a span counts as
covered by the *union* of the kept units) and ``none`` (unanswerable: no unit
is ever relevant).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from evalkit.records import Chunk, Question, Span

__all__ = [
    "SpanLike",
    "UnitIndex",
    "build_unit_index",
    "covered_evidence",
    "cumulative_coverage",
    "evidence_matrix",
    "index_evidence_matrix",
    "index_relevance_matrix",
    "index_relevant_rows",
    "is_relevant",
    "n_relevant_units",
    "overlap",
    "relevance_matrix",
    "relevant_evidence",
    "span_relevance",
    "unit_index_from_spans",
    "unit_span",
]


class SpanLike(Protocol):
    """Anything with a document id and half-open code-point offsets."""

    @property
    def doc_id(self) -> str: ...

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...


def _check_tau(tau: float) -> float:
    """Return ``tau`` as a float, or raise if it is outside ``(0, 1]``."""
    tau = float(tau)
    if not 0.0 < tau <= 1.0:  # also rejects NaN
        raise ValueError(f"tau must be in (0, 1], got {tau!r}")
    return tau


def _gold(question: Question) -> tuple[Span, ...]:
    """Evidence spans that count for ``question`` (none for mode ``none``)."""
    return () if question.evidence_mode == "none" else tuple(question.evidence)


def unit_span(chunk: Chunk) -> Span:
    """The span judged for ``chunk``: its parent for parent-child chunking, else itself."""
    if chunk.parent is not None:
        return chunk.parent
    return Span(chunk.doc_id, chunk.start, chunk.end)


def overlap(a: SpanLike, b: SpanLike) -> int:
    """Number of code points ``a`` and ``b`` share (0 across documents)."""
    if a.doc_id != b.doc_id:
        return 0
    return max(0, min(a.end, b.end) - max(a.start, b.start))


def span_relevance(unit: SpanLike, evidence: SpanLike, tau: float = 1.0) -> bool:
    """Whether ``unit`` is relevant to one evidence span.

    True when both are in the same document, neither is empty, they share at
    least one code point, and ``overlap / min(len(unit), len(evidence)) >= tau``.

    >>> span_relevance(Span("d", 0, 200), Span("d", 10, 17))   # answer inside
    True
    >>> span_relevance(Span("d", 0, 200), Span("d", 195, 205))  # straddles
    False
    >>> span_relevance(Span("d", 0, 200), Span("d", 195, 205), tau=0.5)
    True
    """
    tau = _check_tau(tau)
    shorter = min(unit.end - unit.start, evidence.end - evidence.start)
    if shorter <= 0:
        return False
    shared = overlap(unit, evidence)
    return shared > 0 and shared / shorter >= tau


def relevant_evidence(unit: SpanLike, question: Question, tau: float = 1.0) -> frozenset[int]:
    """Indices into ``question.evidence`` of the spans ``unit`` is relevant to.

    Empty for mode ``none``.
    """
    return frozenset(j for j, evidence in enumerate(_gold(question)) if span_relevance(unit, evidence, tau))


def is_relevant(unit: SpanLike, question: Question, tau: float = 1.0) -> bool:
    """Whether ``unit`` is a relevant unit for ``question`` (the qrels judgement).

    Modes ``any`` and ``all``: relevant to at least one evidence span (for
    ``all`` a unit holding one hop is relevant; whether *every* hop is covered
    is :func:`covered_evidence`'s job). Mode ``none``: always False.
    """
    _check_tau(tau)
    return any(span_relevance(unit, evidence, tau) for evidence in _gold(question))


def n_relevant_units(units: Sequence[SpanLike], question: Question, tau: float = 1.0) -> int:
    """How many of ``units`` are relevant: the qrels size (recall and ideal-DCG denominator)."""
    _check_tau(tau)
    return sum(is_relevant(unit, question, tau) for unit in units)


def _union_length(intervals: list[tuple[int, int]]) -> int:
    """Total length of the union of half-open intervals."""
    total, reach = 0, None
    for lo, hi in sorted(intervals):
        if reach is None or lo > reach:
            total += hi - lo
            reach = hi
        elif hi > reach:
            total += hi - reach
            reach = hi
    return total


def _covers(units: Sequence[SpanLike], evidence: Span, tau: float) -> bool:
    """Whether one unit, or the union of all of them, covers ``evidence``."""
    length = evidence.end - evidence.start
    if length <= 0:
        return False
    if any(span_relevance(unit, evidence, tau) for unit in units):
        return True
    clipped = [
        (max(unit.start, evidence.start), min(unit.end, evidence.end)) for unit in units if overlap(unit, evidence) > 0
    ]
    return _union_length(clipped) / length >= tau


def covered_evidence(units: Sequence[SpanLike], question: Question, tau: float = 1.0) -> frozenset[int]:
    """Indices of the evidence spans covered by ``units`` taken together.

    A span is covered when some single unit is relevant to it
    (:func:`span_relevance`), or when the union of the units' intervals in the
    span's document covers at least ``tau`` of the span's length: a span
    straddling two adjacent chunks is covered by the two together. This is
    what mode ``all`` (multi-hop) needs; it is defined for mode ``any`` too and
    is empty for mode ``none``.
    """
    tau = _check_tau(tau)
    return frozenset(j for j, evidence in enumerate(_gold(question)) if _covers(units, evidence, tau))


def cumulative_coverage(units: Sequence[SpanLike], question: Question, tau: float = 1.0) -> tuple[frozenset[int], ...]:
    """Coverage of every prefix of a ranked list of units.

    Element ``i`` is ``covered_evidence(units[: i + 1], question, tau)``, so
    span recall at any cut-off ``k`` is a look-up (see
    :func:`evalkit.scoring.ir.coverage.span_recall_at_k`). Only units that share a code
    point with some evidence span can change the coverage, so the others
    reuse the previous prefix's answer.
    """
    tau = _check_tau(tau)
    gold = _gold(question)
    prefixes: list[frozenset[int]] = []
    touching: list[SpanLike] = []
    covered: frozenset[int] = frozenset()
    for unit in units:
        if any(overlap(unit, evidence) > 0 for evidence in gold):
            touching.append(unit)
            covered = frozenset(j for j, evidence in enumerate(gold) if _covers(touching, evidence, tau))
        prefixes.append(covered)
    return tuple(prefixes)


# Vectorised judging ---------------------------------------------------------


def _judge_rows(starts: np.ndarray, ends: np.ndarray, evidence: Span, tau: float) -> np.ndarray:
    """Relevance to ``evidence`` of units in the evidence's document (same rule as :func:`span_relevance`)."""
    length = evidence.end - evidence.start
    shared = np.minimum(ends, evidence.end) - np.maximum(starts, evidence.start)
    shorter = np.minimum(ends - starts, length)
    safe = np.where(shorter > 0, shorter, 1)
    return (shorter > 0) & (shared > 0) & (shared / safe >= tau)


def evidence_matrix(
    question: Question,
    starts: np.ndarray | Sequence[int],
    ends: np.ndarray | Sequence[int],
    doc_ids: np.ndarray | Sequence[str],
    tau: float = 1.0,
) -> np.ndarray:
    """Unit-by-span relevance for a whole chunking at once.

    Returns a boolean array of shape ``(n_units, n_spans)`` whose entry
    ``[i, j]`` is ``span_relevance(unit_i, question.evidence[j], tau)``; all
    False for mode ``none``. Pass ``doc_ids`` as a NumPy array built once per
    chunking (a list is converted on every call); for many questions over the
    same chunking :class:`UnitIndex` is faster still.
    """
    tau = _check_tau(tau)
    starts_a = np.asarray(starts, dtype=np.int64)
    ends_a = np.asarray(ends, dtype=np.int64)
    docs_a = np.asarray(doc_ids)
    if not starts_a.shape == ends_a.shape == docs_a.shape or starts_a.ndim != 1:
        raise ValueError("starts, ends and doc_ids must be 1-D and of equal length")
    gold = _gold(question)
    out = np.zeros((starts_a.shape[0], len(gold)), dtype=bool)
    for j, evidence in enumerate(gold):
        if evidence.end > evidence.start:
            rows = np.flatnonzero(docs_a == evidence.doc_id)
            out[rows, j] = _judge_rows(starts_a[rows], ends_a[rows], evidence, tau)
    return out


def relevance_matrix(
    question: Question,
    starts: np.ndarray | Sequence[int],
    ends: np.ndarray | Sequence[int],
    doc_ids: np.ndarray | Sequence[str],
    tau: float = 1.0,
) -> np.ndarray:
    """Per-unit relevance (:func:`is_relevant`) for a whole chunking: boolean, shape ``(n_units,)``."""
    return evidence_matrix(question, starts, ends, doc_ids, tau).any(axis=1)


@dataclass(frozen=True, eq=False)
class UnitIndex:
    """The units of one chunking grouped by document, built once, judged per question.

    Judging a question then touches only the rows of its evidence documents,
    so the cost per question does not grow with the corpus. Build it with
    :func:`build_unit_index`; its arrays are read-only.
    """

    starts: np.ndarray
    """First code point of each unit (int64, read-only)."""
    ends: np.ndarray
    """One past the last code point of each unit (int64, read-only)."""
    rows_by_doc: Mapping[str, np.ndarray]
    """Row numbers of each document's units, ascending."""

    def __len__(self) -> int:
        return int(self.starts.shape[0])


def build_unit_index(
    starts: np.ndarray | Sequence[int],
    ends: np.ndarray | Sequence[int],
    doc_ids: np.ndarray | Sequence[str],
) -> UnitIndex:
    """Group units by document; row ``i`` of every matrix is unit ``i`` of the input."""
    starts_a = np.array(starts, dtype=np.int64)
    ends_a = np.array(ends, dtype=np.int64)
    docs = [str(d) for d in doc_ids]
    if not starts_a.ndim == ends_a.ndim == 1 or not starts_a.shape[0] == ends_a.shape[0] == len(docs):
        raise ValueError("starts, ends and doc_ids must be 1-D and of equal length")
    grouped: dict[str, list[int]] = {}
    for row, doc_id in enumerate(docs):
        grouped.setdefault(doc_id, []).append(row)
    rows_by_doc = {doc_id: np.array(rows, dtype=np.intp) for doc_id, rows in grouped.items()}
    for array in (starts_a, ends_a, *rows_by_doc.values()):
        array.setflags(write=False)
    return UnitIndex(starts=starts_a, ends=ends_a, rows_by_doc=rows_by_doc)


def unit_index_from_spans(units: Sequence[SpanLike]) -> UnitIndex:
    """:func:`build_unit_index` from span-shaped units (spans, chunks, parent spans)."""
    return build_unit_index(
        [unit.start for unit in units], [unit.end for unit in units], [unit.doc_id for unit in units]
    )


def index_evidence_matrix(question: Question, index: UnitIndex, tau: float = 1.0) -> np.ndarray:
    """:func:`evidence_matrix` over a prebuilt :class:`UnitIndex`."""
    tau = _check_tau(tau)
    gold = _gold(question)
    out = np.zeros((len(index), len(gold)), dtype=bool)
    for j, evidence in enumerate(gold):
        rows = index.rows_by_doc.get(evidence.doc_id)
        if rows is not None and evidence.end > evidence.start:
            out[rows, j] = _judge_rows(index.starts[rows], index.ends[rows], evidence, tau)
    return out


def index_relevance_matrix(question: Question, index: UnitIndex, tau: float = 1.0) -> np.ndarray:
    """:func:`relevance_matrix` over a prebuilt :class:`UnitIndex`."""
    return index_evidence_matrix(question, index, tau).any(axis=1)


def index_relevant_rows(question: Question, index: UnitIndex, tau: float = 1.0) -> np.ndarray:
    """Rows of the relevant units, ascending: ``flatnonzero(index_relevance_matrix(...))`` without the
    (n_units,) array, so a question costs the units of its evidence documents, whatever the corpus size."""
    tau = _check_tau(tau)
    found = [
        rows[_judge_rows(index.starts[rows], index.ends[rows], evidence, tau)]
        for evidence in _gold(question)
        if evidence.end > evidence.start and (rows := index.rows_by_doc.get(evidence.doc_id)) is not None
    ]
    return np.unique(np.concatenate(found)) if found else np.empty(0, dtype=np.intp)
