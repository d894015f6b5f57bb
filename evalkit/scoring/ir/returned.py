"""What the vectorised metric forms see: every question's returned list as one matrix (pure).

The sweep keeps one ranked candidate pool per question (questions x pool
rank); a (top_k, threshold) grid point returns the pool entries whose score
is at least the threshold, in pool order, cut at k. Nothing falls back to
the top-1 hit when every score is below the threshold: that is a zero-hit.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = ["Returned", "SpanCoverage", "returned_mask"]


def returned_mask(scores: np.ndarray, k: int, threshold: float) -> np.ndarray:
    """Pool entries at or above the threshold, first k of them per question."""
    keep = np.nan_to_num(scores, nan=-np.inf) >= threshold
    return keep & (np.cumsum(keep, axis=1) <= k)


@dataclass(frozen=True)
class SpanCoverage:
    """Evidence spans covered by each question's returned list at one grid point (vectorised input)."""

    multi_hop: np.ndarray
    """bool (n_q,): the question's evidence mode is ``all``."""
    n_covered: np.ndarray
    """int (n_q,): evidence spans covered by the union of the returned units (0 for other modes)."""
    n_spans: np.ndarray
    """int (n_q,): evidence spans of the question."""


@dataclass(frozen=True)
class Returned:
    """One grid point's returned lists for all questions of a chunking (rows) over pool ranks (columns)."""

    returned: np.ndarray
    """bool (n_q, N): the pool entry at this rank was returned."""
    pool_relevant: np.ndarray
    """bool (n_q, N): the pool entry at this rank is relevant (returned or not)."""
    n_relevant: np.ndarray
    """int (n_q,): relevant units in the whole chunking (trec qrels size)."""
    k: int
    """The cut-off: at most k entries were returned per question."""
    span_coverage: SpanCoverage | None = None
    """Multi-hop questions' span coverage of the returned lists (None: no multi-hop question, or not computed)."""

    @classmethod
    def slice(
        cls, pool_relevant: np.ndarray, scores: np.ndarray, n_relevant: np.ndarray, k: int, threshold: float
    ) -> Returned:
        """The returned lists of a pool at (``k``, ``threshold``); ValueError unless ``k >= 1``."""
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        return cls(returned_mask(scores, k, threshold), pool_relevant, n_relevant, k)

    @classmethod
    def from_lists(
        cls, lists: list[list[bool]], n_relevant: list[int], k: int, span_coverage: SpanCoverage | None = None
    ) -> Returned:
        """Already-returned lists (best first), padded to one matrix: for tests and hand-worked examples."""
        depth = max([len(rel) for rel in lists] + [1])
        returned = np.zeros((len(lists), depth), dtype=bool)
        relevant = np.zeros((len(lists), depth), dtype=bool)
        for row, rel in enumerate(lists):
            kept = rel[:k]
            returned[row, : len(kept)] = True
            relevant[row, : len(kept)] = kept
        return cls(returned, relevant, np.asarray(n_relevant, dtype=np.int64), k, span_coverage)

    # Derived once per grid point and shared by every metric (cached: the dataclass stays immutable to callers).

    @cached_property
    def position(self) -> np.ndarray:
        """int (n_q, N): 1-based rank within the returned list (entries not returned are masked by the metrics)."""
        return np.cumsum(self.returned, axis=1)

    @cached_property
    def relevant(self) -> np.ndarray:
        """bool (n_q, N): returned and relevant."""
        return self.pool_relevant & self.returned

    @cached_property
    def n_hits(self) -> np.ndarray:
        """int (n_q,): relevant entries returned."""
        return self.relevant.sum(axis=1)

    @cached_property
    def n_returned(self) -> np.ndarray:
        """int (n_q,): entries returned."""
        return self.returned.sum(axis=1)
