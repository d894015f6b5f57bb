"""Character-level recall, precision, IoU and precision-Omega, as Chroma's chunking evaluation defines them (pure).

Per question, over the characters (code points) of each document:
``E`` is the union of the question's evidence spans, ``R`` the union of the
returned units' spans (the top k after the threshold), and ``Omega`` the union
of *every* unit of the chunking that shares a character with some evidence span
(:func:`overlapping_units`; it does not depend on k or the threshold).

- ``char_recall = |E & R| / |E|``: the share of evidence characters the
  returned units cover. This is the strict multi-hop span recall: a unit lying
  inside a long evidence span covers its own characters, not the whole span.
- ``char_precision = |E & R| / |R|``; 0 when nothing is returned.
- ``char_iou = |E & R| / |E | R|``.
- ``char_precision_omega = |E & Omega| / |E | Omega|``: Chroma's ``precision_omega``
  (its ``_full_precision_score``). When the chunking covers every evidence
  character (``E <= Omega``) it is ``|E| / |Omega|``, precision with ``R``
  replaced by ``Omega``: the best precision this chunking can reach while
  returning all the evidence.

Questions without evidence characters (unanswerable) get NaN in all four.

Where this follows Chroma (``brandonstarxel/chunking_evaluation``,
``evaluation_framework/base_evaluation.py``) and where it differs, on purpose:

- Same numerator: the union of chunk-evidence intersections.
- Chroma's recall divides by the *sum* of reference lengths and its precision by
  the *sum* of retrieved chunk lengths, so overlapping chunks (or references)
  count twice in a denominator; here every denominator is a union, so a
  character counts once. Without overlap the two agree.
- Chroma's IoU denominator is that sum plus the uncovered evidence; here it is
  ``|E | R|`` (the same when returned chunks do not overlap).
- Chroma always retrieves a fixed number of chunks, so its precision never sees
  ``R`` empty (it would divide by zero); here precision (and IoU) is 0 then.
- Chroma takes a chunk into Omega when its closed interval touches a reference
  (a zero-length intersection counts); here a unit must share a character.
- Chroma has one corpus per question; here spans are kept per document, and a
  returned unit from a document without evidence adds only to ``|R|``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evalkit.scoring.ir.char_spans import (
    CharSpan,
    check_span,
    covered_length,
    doc_codes,
    intersection_length,
    merge_spans,
    union_lengths,
)
from evalkit.scoring.ir.metric import Column

__all__ = [
    "COLUMNS",
    "CharMeasures",
    "CharScores",
    "char_measures",
    "char_measures_one",
    "evidence_char_coverage",
    "overlapping_units",
]

COLUMNS = (
    Column(
        "char_recall", "char recall@k", True, "proportion",
        "Share of the evidence characters covered by the union of the top k returned units.",
    ),
    Column(
        "char_precision", "char precision@k", True, "proportion",
        "Share of the characters of the top k returned units (their union) that are evidence; 0 if none returned.",
    ),
    Column(
        "char_iou", "char IoU@k", True, "proportion",
        "Evidence characters and returned characters: size of the intersection over size of the union.",
    ),
    Column(
        "char_precision_omega", "char precision-Omega", True, "proportion",
        "Chroma's precision-Omega: the best char precision this chunking can reach (all units touching the evidence).",
    ),
)  # fmt: skip
"""The character-level result columns, in the order the sweep writes them (NaN on unanswerable questions).
They come from span arithmetic over the returned units (:func:`char_measures`), not from a ranked list of
relevance flags, so they are columns without :class:`~evalkit.scoring.ir.metric.Metric` forms."""

SpanLists = Sequence[Sequence[CharSpan]]
"""One sequence of ``(doc_id, start, end)`` spans per question."""


@dataclass(frozen=True)
class CharScores:
    """One question's character-level measures (NaN: no evidence characters, or no Omega given)."""

    recall: float
    precision: float
    iou: float
    precision_omega: float


@dataclass(frozen=True)
class CharMeasures:
    """Every question's character-level measures at one grid point: float arrays (n_q,)."""

    recall: np.ndarray
    """Share of evidence characters covered by the returned units (column ``char_recall``)."""
    precision: np.ndarray
    """Share of returned characters that are evidence; 0 when nothing is returned (``char_precision``)."""
    iou: np.ndarray
    """Evidence and returned characters: intersection over union (``char_iou``)."""
    precision_omega: np.ndarray
    """Chroma's precision-Omega over all units touching the evidence (``char_precision_omega``)."""

    def columns(self) -> dict[str, np.ndarray]:
        """Result column name -> values, in the order of :data:`COLUMNS`."""
        values = (self.recall, self.precision, self.iou, self.precision_omega)
        return {c.name: v for c, v in zip(COLUMNS, values, strict=True)}


# Per question -------------------------------------------------------------------


def _ratio(numerator: int, denominator: int) -> float:
    return numerator / denominator if denominator else 0.0


def char_measures_one(
    returned_spans: Sequence[CharSpan],
    evidence_spans: Sequence[CharSpan],
    omega_spans: Sequence[CharSpan] | None = None,
) -> CharScores:
    """The four measures of one question (the definition; the vectorised form must agree)."""
    evidence = merge_spans(evidence_spans)
    n_evidence = covered_length(evidence)
    if n_evidence == 0:
        return CharScores(math.nan, math.nan, math.nan, math.nan)
    returned = merge_spans(returned_spans)
    n_returned = covered_length(returned)
    both = intersection_length(evidence, returned)
    omega_score = math.nan
    if omega_spans is not None:
        omega = merge_spans(omega_spans)
        in_omega = intersection_length(evidence, omega)
        omega_score = in_omega / (n_evidence + covered_length(omega) - in_omega)
    return CharScores(
        recall=both / n_evidence,
        precision=_ratio(both, n_returned),
        iou=both / (n_evidence + n_returned - both),
        precision_omega=omega_score,
    )


# Vectorised ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Flat:
    """Spans of many questions as parallel arrays (document ids still as objects)."""

    owner: np.ndarray
    doc_ids: np.ndarray
    starts: np.ndarray
    ends: np.ndarray


def _flatten(spans: SpanLists) -> _Flat:
    owner = [q for q, question in enumerate(spans) for _ in question]
    doc_ids = np.array([d for question in spans for d, _, _ in question], dtype=object)
    starts = np.array([s for question in spans for _, s, _ in question], dtype=np.int64)
    ends = np.array([e for question in spans for _, _, e in question], dtype=np.int64)
    return _Flat(np.array(owner, dtype=np.int64), doc_ids, starts, ends)


def _pool_flat(pool_doc_ids: np.ndarray, pool_starts: np.ndarray, pool_ends: np.ndarray, returned: np.ndarray) -> _Flat:
    returned = np.asarray(returned, dtype=bool)
    if not returned.shape == np.shape(pool_doc_ids) == np.shape(pool_starts) == np.shape(pool_ends):
        raise ValueError("pool_doc_ids, pool_starts, pool_ends and returned must share one (n_q, N) shape")
    if returned.ndim != 2:
        raise ValueError(f"pool arrays must be 2-d (n_q, N), got {returned.ndim}-d")
    rows, cols = np.nonzero(returned)
    doc_ids = np.asarray(pool_doc_ids, dtype=object)[rows, cols]
    starts = np.asarray(pool_starts)[rows, cols].astype(np.int64)
    ends = np.asarray(pool_ends)[rows, cols].astype(np.int64)
    return _Flat(rows.astype(np.int64), doc_ids, starts, ends)


def _lengths(n_q: int, codes: dict[object, int], *parts: _Flat) -> np.ndarray:
    """int64 (n_q,): characters in the union of the given span sets, per question."""
    owner = np.concatenate([p.owner for p in parts])
    doc = np.fromiter((codes[d] for p in parts for d in p.doc_ids), dtype=np.int64, count=owner.size)
    starts = np.concatenate([p.starts for p in parts])
    ends = np.concatenate([p.ends for p in parts])
    return union_lengths(owner, doc, starts, ends, n_q)


def _counts(pool: _Flat, evidence: _Flat, n_q: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(|E|, |R|, |E & R|) per question, the intersection by inclusion-exclusion over exact integers."""
    codes = doc_codes(pool.doc_ids, evidence.doc_ids)
    n_evidence = _lengths(n_q, codes, evidence)
    n_returned = _lengths(n_q, codes, pool)
    both = n_evidence + n_returned - _lengths(n_q, codes, evidence, pool)
    return n_evidence, n_returned, both


def _check_questions(n_q: int, spans: SpanLists, name: str) -> None:
    if len(spans) != n_q:
        raise ValueError(f"{name} has {len(spans)} questions, the pool has {n_q}")


def evidence_char_coverage(
    pool_doc_ids: np.ndarray,
    pool_starts: np.ndarray,
    pool_ends: np.ndarray,
    returned: np.ndarray,
    evidence: SpanLists,
) -> np.ndarray:
    """float (n_q,): ``char_recall``, the share of evidence characters covered by the returned units' union.

    The strict multi-hop span recall; NaN for questions without evidence characters.
    """
    pool = _pool_flat(pool_doc_ids, pool_starts, pool_ends, returned)
    n_q = np.shape(returned)[0]
    _check_questions(n_q, evidence, "evidence")
    n_evidence, _, both = _counts(pool, _flatten(evidence), n_q)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n_evidence > 0, both / n_evidence, np.nan)


def char_measures(
    pool_doc_ids: np.ndarray,
    pool_starts: np.ndarray,
    pool_ends: np.ndarray,
    returned: np.ndarray,
    evidence: SpanLists,
    omega_spans: SpanLists | None = None,
) -> CharMeasures:
    """Every question's character-level measures at one grid point of one chunking.

    ``pool_*`` are (n_q, N) arrays of the candidate pool's units (document id,
    start, end); ``returned`` (bool, n_q x N) marks what this grid point
    returns (entries past a pool's end must be False; their other fields are
    ignored). ``evidence[q]`` lists question q's spans; ``omega_spans[q]`` the
    units of :func:`overlapping_units` (None: ``precision_omega`` is NaN).
    """
    pool = _pool_flat(pool_doc_ids, pool_starts, pool_ends, returned)
    n_q = np.shape(returned)[0]
    _check_questions(n_q, evidence, "evidence")
    flat_evidence = _flatten(evidence)
    n_evidence, n_returned, both = _counts(pool, flat_evidence, n_q)
    answerable = n_evidence > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        recall = np.where(answerable, both / n_evidence, np.nan)
        precision = np.where(answerable, np.where(n_returned > 0, both / n_returned, 0.0), np.nan)
        iou = np.where(answerable, both / (n_evidence + n_returned - both), np.nan)
        omega = np.full(n_q, np.nan)
        if omega_spans is not None:
            _check_questions(n_q, omega_spans, "omega_spans")
            _, n_omega, in_omega = _counts(_flatten(omega_spans), flat_evidence, n_q)
            omega = np.where(answerable, in_omega / (n_evidence + n_omega - in_omega), np.nan)
    return CharMeasures(recall, precision, iou, omega)


# Omega: every unit that touches the evidence --------------------------------------


def overlapping_units(
    unit_doc_ids: Sequence[str] | np.ndarray,
    unit_starts: Sequence[int] | np.ndarray,
    unit_ends: Sequence[int] | np.ndarray,
    evidence: SpanLists,
) -> tuple[tuple[CharSpan, ...], ...]:
    """Per question: the spans of all units of a chunking sharing at least one character with its evidence.

    Units are found per document by binary search on their sorted starts (a
    unit can reach a span only if it starts within the document's longest
    unit before the span's end); each unit is listed once, in (document,
    start, end) order. Pass the result as ``omega_spans`` to :func:`char_measures`.
    """
    doc_ids = np.asarray(unit_doc_ids, dtype=object)
    starts = np.asarray(unit_starts, dtype=np.int64)
    ends = np.asarray(unit_ends, dtype=np.int64)
    if not doc_ids.shape == starts.shape == ends.shape or doc_ids.ndim != 1:
        raise ValueError("unit_doc_ids, unit_starts and unit_ends must be 1-d and of one length")
    by_doc: dict[object, list[int]] = {}
    for i, doc_id in enumerate(doc_ids.tolist()):
        by_doc.setdefault(doc_id, []).append(i)
    index = {}
    for doc_id, members in by_doc.items():
        rows = np.array(members, dtype=np.int64)
        rows = rows[np.lexsort((ends[rows], starts[rows]))]
        index[doc_id] = (starts[rows], ends[rows], int((ends[rows] - starts[rows]).max()))
    out = []
    for question in evidence:
        found: set[CharSpan] = set()
        for doc_id, start, end in question:
            check_span(start, end)
            if doc_id not in index or end == start:
                continue
            doc_starts, doc_ends, longest = index[doc_id]
            # Candidates start in (start - longest, end); keep those ending past start (non-empty overlap).
            lo = int(np.searchsorted(doc_starts, start - longest, side="right"))
            hi = int(np.searchsorted(doc_starts, end, side="left"))
            hit = doc_ends[lo:hi] > start
            found.update((doc_id, int(s), int(e)) for s, e in zip(doc_starts[lo:hi][hit], doc_ends[lo:hi][hit]))
        out.append(tuple(sorted(s for s in found if s[2] > s[1])))
    return tuple(out)
