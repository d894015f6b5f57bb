"""Candidate pools: exact dense cosine, BM25, and their fusion.

One pool of N candidates is retrieved per (chunking, question); every top_k
and threshold of the sweep is a slice of it, never a new search. Pools are
numpy arrays (row = question, column = rank) because a sweep slices millions
of them; :func:`to_rankings` turns a row into frozen ``Ranking`` records for
reports.

Scores: ``scores`` is the absolute score a threshold is compared against.
Dense: cosine, computed exactly (:mod:`evalkit.retrieval.cosine`) so that no score depends on
how questions are blocked, the executor, the thread count or the CPU's BLAS kernel. BM25: the BM25
score. Hybrid: the dense cosine of the chunk,
because an RRF value or a per-query normalised score carries no absolute
meaning (its best is the same for every question) and so cannot say "nothing
relevant here". The order of a hybrid pool is the fused order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from evalkit.records import Hit, HitSource, Ranking
from evalkit.retrieval.cosine import exact_cosines, to_fixed_point
from evalkit.retrieval.mask import Mask

FusionMethod = Literal["rrf", "max"]
MAX_BLOCK_QUESTIONS = 256
DEFAULT_BLOCK_CELLS = 1 << 22
"""Scores held at once (questions x units): 4,194,304 cells, about 32 MB per float64 score matrix.

No questions x units matrix is ever built whole: questions are scored in blocks of
``cells // n_units`` rows (at most 256, at least 1), so the scores in memory are bounded by
``max(cells, n_units)`` whatever the corpus and the question count. Hybrid holds three such
matrices (BM25, cosine, fused). ``executor.block_cells`` sets it.
"""


class IndexMismatchError(ValueError):
    """A query was embedded by a different model than the index it searches."""


@dataclass(frozen=True)
class DenseIndex:
    """Unit-norm passage vectors and the model that made them."""

    model: str
    """Embedder identity (model id @ version)."""
    dim: int
    vectors: np.ndarray
    """Shape (n_units, dim), float32, unit norm."""

    def __post_init__(self) -> None:
        if self.vectors.ndim != 2 or self.vectors.shape[1] != self.dim:
            raise IndexMismatchError(f"index vectors {self.vectors.shape} do not have dimension {self.dim}")


@dataclass(frozen=True)
class QueryVectors:
    """Unit-norm query vectors and the model that made them."""

    model: str
    vectors: np.ndarray


@dataclass(frozen=True)
class CandidatePool:
    """Ranked candidates of one chunking for every question, best first.

    ``indices[q, r]`` is the unit at rank r for question q (-1 past the end);
    ``scores[q, r]`` its threshold score (NaN past the end).
    """

    indices: np.ndarray
    scores: np.ndarray
    source: HitSource

    @property
    def depth(self) -> int:
        return int(self.indices.shape[1])


def check_same_model(index: DenseIndex, queries: QueryVectors) -> None:
    """Refuse to compare vectors from two models: the scores would be noise."""
    if index.model != queries.model or queries.vectors.shape[1:] != (index.dim,):
        raise IndexMismatchError(
            f"queries embedded with {queries.model} (dim {queries.vectors.shape[-1]}) cannot search "
            f"an index built with {index.model} (dim {index.dim}); re-embed with the index's model"
        )


def top_n(scores: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the n best columns (best first; equal scores by lower column) and their scores.

    A partial partition finds the n best in linear time; only those n are sorted.
    """
    n_rows, n_cols = scores.shape
    depth = min(n, n_cols)
    indices = np.full((n_rows, n), -1, dtype=np.int64)
    values = np.full((n_rows, n), np.nan, dtype=np.float64)
    if depth == 0 or n_rows == 0:
        return indices, values
    if depth < n_cols:
        candidates = np.argpartition(-scores, depth - 1, axis=1)[:, :depth]
        # Equal scores at the cut: keep the lowest columns, so the pool never depends on the partition's order.
        kth = np.take_along_axis(scores, candidates, axis=1).min(axis=1, keepdims=True)
        above = scores > kth
        needed = depth - above.sum(axis=1, keepdims=True)
        ties = (scores == kth) & (np.cumsum(scores == kth, axis=1) <= needed)
        chosen = above | ties
        candidates = np.nonzero(chosen)[1].reshape(n_rows, depth)
    else:
        candidates = np.broadcast_to(np.arange(n_cols), (n_rows, n_cols))
    chosen_scores = np.take_along_axis(scores, candidates, axis=1)
    order = np.lexsort((candidates, -chosen_scores), axis=1)
    indices[:, :depth] = np.take_along_axis(candidates, order, axis=1)
    values[:, :depth] = np.take_along_axis(chosen_scores, order, axis=1)
    return indices, values


def question_blocks(n_rows: int, n_units: int, cells: int = DEFAULT_BLOCK_CELLS) -> list[slice]:
    """Row blocks of at most ``cells`` scores each (at least one question, at most 256)."""
    size = max(1, min(MAX_BLOCK_QUESTIONS, cells // max(n_units, 1)))
    return [slice(i, min(i + size, n_rows)) for i in range(0, n_rows, size)]


def _filtered(scores: np.ndarray, allowed: Mask | None, rows: slice) -> np.ndarray:
    """Scores with the units a question may not retrieve (metadata filters) set to -inf."""
    return scores if allowed is None else np.where(allowed[rows], scores, -np.inf)


def _drop_excluded(indices: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    excluded = np.isneginf(values)
    return np.where(excluded, -1, indices), np.where(excluded, np.nan, values)


def dense_pool(
    index: DenseIndex,
    queries: QueryVectors,
    n: int,
    allowed: Mask | None = None,
    cells: int = DEFAULT_BLOCK_CELLS,
) -> CandidatePool:
    """Exact cosine top-n for every query (``allowed``: per-question unit mask from metadata filters)."""
    check_same_model(index, queries)
    units, asked = to_fixed_point(index.vectors), to_fixed_point(queries.vectors)
    parts = [
        _drop_excluded(*top_n(_filtered(exact_cosines(asked.take(rows), units), allowed, rows), n))
        for rows in question_blocks(len(queries.vectors), len(index.vectors), cells)
    ]
    return _concat(parts, "dense")


def bm25_pool(
    score_rows: Callable[[slice], np.ndarray],
    n_queries: int,
    n: int,
    allowed: Mask | None = None,
    n_units: int = 0,
    cells: int = DEFAULT_BLOCK_CELLS,
) -> CandidatePool:
    """BM25 top-n; a unit that shares no term with the query (score 0) is not a candidate."""
    parts = []
    for rows in question_blocks(n_queries, n_units, cells):
        indices, values = top_n(_filtered(score_rows(rows), allowed, rows), n)
        empty = ~(values > 0)
        indices[empty] = -1
        values[empty] = np.nan
        parts.append((indices, values))
    return _concat(parts, "bm25")


def hybrid_pool(
    index: DenseIndex,
    queries: QueryVectors,
    bm25_score_rows: Callable[[slice], np.ndarray],
    n: int,
    method: FusionMethod = "rrf",
    rrf_k: int = 60,
    allowed: Mask | None = None,
    cells: int = DEFAULT_BLOCK_CELLS,
) -> CandidatePool:
    """Fuse dense and BM25 top-n lists; each unit appears once; never sums raw scores.

    ``rrf``: sum of 1/(rrf_k + rank) over the lists a unit appears in (ranks
    from 1). ``max``: each list's scores divided by that list's best, then the
    larger of the two per unit. Either way the threshold score is the cosine.
    """
    check_same_model(index, queries)
    units, asked = to_fixed_point(index.vectors), to_fixed_point(queries.vectors)
    parts = []
    for rows in question_blocks(len(queries.vectors), len(index.vectors), cells):
        cosine = exact_cosines(asked.take(rows), units)
        bm25 = _filtered(bm25_score_rows(rows), allowed, rows)
        dense_idx, dense_val = _drop_excluded(*top_n(_filtered(cosine, allowed, rows), n))
        sparse_idx, sparse_val = top_n(bm25, n)
        sparse_idx[~(sparse_val > 0)] = -1
        fused = np.zeros_like(cosine, dtype=np.float64)
        if method == "rrf":
            ranks = 1.0 / (rrf_k + np.arange(1, n + 1, dtype=np.float64))
            _scatter_max_add(fused, dense_idx, np.broadcast_to(ranks, dense_idx.shape), add=True)
            _scatter_max_add(fused, sparse_idx, np.broadcast_to(ranks, sparse_idx.shape), add=True)
        elif method == "max":
            _scatter_max_add(fused, dense_idx, _scale_by_best(dense_val), add=False)
            _scatter_max_add(fused, sparse_idx, _scale_by_best(sparse_val), add=False)
        else:
            raise ValueError(f"unknown fusion method {method!r}; expected 'rrf' or 'max'")
        indices, _ = top_n(np.where(fused > 0, fused, -np.inf), n)
        indices[np.take_along_axis(fused, np.maximum(indices, 0), axis=1) <= 0] = -1
        values = np.where(indices >= 0, np.take_along_axis(cosine, np.maximum(indices, 0), axis=1), np.nan)
        parts.append((indices, values))
    return _concat(parts, "hybrid")


def _scale_by_best(values: np.ndarray) -> np.ndarray:
    best = np.nanmax(np.where(np.isnan(values), -np.inf, values), axis=1, keepdims=True)
    safe = np.where(best > 0, best, 1.0)
    return np.where(np.isnan(values), 0.0, values / safe)


def _scatter_max_add(target: np.ndarray, indices: np.ndarray, values: np.ndarray, add: bool) -> None:
    """Accumulate per-row values into ``target`` at ``indices`` (ignoring -1): sum or max."""
    rows = np.broadcast_to(np.arange(indices.shape[0])[:, None], indices.shape)
    valid = indices >= 0
    if add:
        np.add.at(target, (rows[valid], indices[valid]), values[valid])
    else:
        np.maximum.at(target, (rows[valid], indices[valid]), values[valid])


def _concat(parts: Sequence[tuple[np.ndarray, np.ndarray]], source: HitSource) -> CandidatePool:
    if not parts:
        return CandidatePool(np.zeros((0, 0), dtype=np.int64), np.zeros((0, 0)), source)
    return CandidatePool(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), source)


def collapse_to_parents(pool: CandidatePool, parent_of: np.ndarray) -> CandidatePool:
    """Map child hits to their parents, keeping each parent once at its best child's rank."""
    indices = np.full_like(pool.indices, -1)
    scores = np.full_like(pool.scores, np.nan)
    for row in range(pool.indices.shape[0]):
        seen: dict[int, None] = {}
        kept_scores: list[float] = []
        for child, score in zip(pool.indices[row], pool.scores[row]):
            if child < 0:
                break
            parent = int(parent_of[child])
            if parent not in seen:
                seen[parent] = None
                kept_scores.append(float(score))
        indices[row, : len(seen)] = list(seen)
        scores[row, : len(kept_scores)] = kept_scores
    return CandidatePool(indices, scores, pool.source)


def keep_allowed(pool: CandidatePool, allowed: Mask) -> CandidatePool:
    """Drop the hits ``allowed[question, unit]`` forbids, keeping the others' order (a pool searched elsewhere)."""
    indices = np.full_like(pool.indices, -1)
    scores = np.full_like(pool.scores, np.nan)
    for row in range(pool.indices.shape[0]):
        members = pool.indices[row]
        keep = members >= 0
        if keep.any():  # no hits (an external retriever's empty list, no units at all): nothing to look up
            keep[keep] = allowed[row, members[keep]]
        n = int(keep.sum())
        indices[row, :n] = members[keep]
        scores[row, :n] = pool.scores[row][keep]
    return CandidatePool(indices, scores, pool.source)


def to_rankings(pool: CandidatePool, question_ids: Sequence[str], unit_ids: Sequence[str]) -> list[Ranking]:
    """Frozen ``Ranking`` records of a pool (for reports and exports)."""
    rankings = []
    for row, question_id in enumerate(question_ids):
        hits = tuple(
            Hit(unit_ids[int(i)], float(s), pool.source) for i, s in zip(pool.indices[row], pool.scores[row]) if i >= 0
        )
        rankings.append(Ranking(question_id, hits))
    return rankings
