"""Multi-hop span coverage, and evalkit's headline recall@k that picks by evidence mode.

A multi-hop question (mode ``all``) needs every evidence span covered by the
*union* of the returned units; one unit rarely holds them all, so coverage is
not a per-rank flag. The caller (the pipeline, which owns relevance) says which
spans the returned units cover (:func:`evalkit.chunking.relevance.covered_evidence`
or, per prefix, ``cumulative_coverage``); this module turns that into numbers.

``recall@k``: hit@k for mode ``any`` (one relevant unit holds an answer), span
coverage for mode ``all``, undefined for ``none`` (score zero-hit instead). It
differs from trec_eval's recall (``recall_trec``), which divides by every
relevant unit of the chunking.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np

from evalkit.records import EvidenceMode
from evalkit.scoring.ir.checks import check_k
from evalkit.scoring.ir.hit import hit_at_k, hit_matrix
from evalkit.scoring.ir.metric import Column, JudgedRanking, Metric
from evalkit.scoring.ir.returned import Returned, SpanCoverage

__all__ = [
    "METRICS",
    "SpanCoverage",
    "answer_recall",
    "answer_recall_at_k",
    "answer_recall_matrix",
    "covered_at_k",
    "span_recall_at_k",
    "span_recall_matrix",
]


# Per question -------------------------------------------------------------------


def covered_at_k(coverage: Sequence[frozenset[int]], k: int) -> frozenset[int]:
    """Spans covered by the union of the top ``k`` hits, from per-prefix coverage.

    ``coverage[i]`` covers the top ``i + 1`` hits (as
    :func:`evalkit.chunking.relevance.cumulative_coverage` returns it); a ``k`` past
    the end of the list takes the whole list.
    """
    k = check_k(k)
    return coverage[min(k, len(coverage)) - 1] if coverage else frozenset()


def span_recall_at_k(covered: frozenset[int], n_spans: int) -> float:
    """Share of a multi-hop question's evidence spans covered by the union of the top-k hits.

    ``covered`` is the set of evidence indices covered (see :func:`covered_at_k`);
    0.0 when ``n_spans == 0``.
    """
    n_spans = operator.index(n_spans)
    if n_spans < 0:
        raise ValueError(f"n_spans must be >= 0, got {n_spans}")
    if any(not 0 <= j < n_spans for j in covered):
        raise ValueError(f"covered indices {sorted(covered)} out of range for {n_spans} spans")
    return len(covered) / n_spans if n_spans else 0.0


def answer_recall_at_k(
    mode: EvidenceMode,
    rel: Sequence[bool],
    k: int,
    coverage: Sequence[frozenset[int]] = (),
    n_spans: int = 0,
) -> float:
    """evalkit's ``recall@k``: did the top ``k`` bring the answer's evidence?

    - mode ``any``: :func:`~evalkit.scoring.ir.hit.hit_at_k`;
    - mode ``all`` (multi-hop): :func:`span_recall_at_k` over the spans covered
      by the union of the top ``k`` hits (``coverage`` is per prefix, one entry
      per hit in ``rel``; ``n_spans`` is the number of evidence spans);
    - mode ``none``: ValueError; score an unanswerable question with zero-hit.
    """
    k = check_k(k)
    if mode == "any":
        return hit_at_k(rel, k)
    if mode == "all":
        if len(coverage) != len(rel):
            raise ValueError(
                f"coverage has {len(coverage)} prefixes for {len(rel)} hits; "
                "build it with relevance.cumulative_coverage"
            )
        return span_recall_at_k(covered_at_k(coverage, k), n_spans)
    raise ValueError(f"recall is undefined for evidence mode {mode!r}; use zero_hit")


# Vectorised ---------------------------------------------------------------------


def span_recall_matrix(r: Returned) -> np.ndarray:
    """float (n_q,): :func:`span_recall_at_k` of every question (0.0 without coverage or spans)."""
    c = r.span_coverage
    if c is None:
        return np.zeros(r.returned.shape[0])
    return np.where(c.n_spans > 0, c.n_covered / np.maximum(c.n_spans, 1), 0.0)


def answer_recall(hit: np.ndarray, coverage: SpanCoverage | None) -> np.ndarray:
    """float (n_q,): recall@k from hit@k and the multi-hop questions' span coverage.

    Multi-hop rows take ``n_covered / n_spans`` (the same division the
    per-question form does, so the values are bit-identical); the others keep hit@k.
    """
    if coverage is None:
        return hit.copy()
    share = coverage.n_covered / np.maximum(coverage.n_spans, 1)
    return np.where(coverage.multi_hop, share, hit)


def answer_recall_matrix(r: Returned) -> np.ndarray:
    """float (n_q,): :func:`answer_recall_at_k` of every question (mode ``none`` rows as mode ``any``)."""
    return answer_recall(hit_matrix(r), r.span_coverage)


def _recall(j: JudgedRanking, k: int) -> float:
    return answer_recall_at_k(j.mode, j.rel, k, j.coverage, j.n_spans)


def _span_recall(j: JudgedRanking, k: int) -> float:
    return span_recall_at_k(covered_at_k(j.coverage, k), j.n_spans)


METRICS = (
    Metric(
        "recall",
        _recall,
        answer_recall_matrix,
        Column(
            "recall", "recall@k", True, "proportion",
            "Did the top k bring the evidence: hit@k for mode any; for mode all the share of evidence characters "
            "covered.",
        ),
        order=10,
    ),
    Metric("span_recall", _span_recall, span_recall_matrix, None, order=1000, comparable=False),
)  # fmt: skip
"""``recall`` is evalkit's answer recall; ``span_recall`` is multi-hop span coverage alone (no column)."""
