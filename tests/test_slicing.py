"""The vectorised slices the sweep uses agree with the scalar metric definitions."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from evalkit.scoring.ir.context_precision import context_precision_at_k
from evalkit.scoring.ir.hit import hit_at_k
from evalkit.scoring.ir.ndcg import ndcg_at_k
from evalkit.scoring.ir.precision import precision_at_k, recall_at_k
from evalkit.scoring.ir.reciprocal_rank import reciprocal_rank
from evalkit.scoring.ir.zero_hit import zero_hit
from evalkit.scoring.slicing import PoolJudgement, best_score, returned_mask, slice_metrics


@st.composite
def pools(draw: st.DrawFn) -> tuple[PoolJudgement, int, float]:
    n_q = draw(st.integers(1, 6))
    depth = draw(st.integers(1, 12))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    lengths = rng.integers(0, depth + 1, size=n_q)
    scores = np.full((n_q, depth), np.nan)
    relevant = np.zeros((n_q, depth), dtype=bool)
    for q, length in enumerate(lengths):
        # Unsorted scores on purpose: a hybrid pool is ordered by RRF, not by its threshold score.
        scores[q, :length] = rng.choice([0.1, 0.2, 0.3, 0.5, 0.9], size=length)
        relevant[q, :length] = rng.random(length) < 0.4
    n_relevant = relevant.sum(axis=1) + rng.integers(0, 3, size=n_q)
    k = draw(st.integers(1, depth + 2))
    threshold = draw(st.sampled_from([0.0, 0.15, 0.3, 0.95]))
    return PoolJudgement(relevant, scores, n_relevant), k, threshold


@settings(max_examples=300, deadline=None)
@given(pools())
def test_slices_equal_scalar_metrics(case: tuple[PoolJudgement, int, float]) -> None:
    judgement, k, threshold = case
    sliced = slice_metrics(judgement, k, threshold)
    for q in range(judgement.relevant.shape[0]):
        keep = [
            bool(r) for r, s in zip(judgement.relevant[q], judgement.scores[q]) if not np.isnan(s) and s >= threshold
        ][:k]
        n_rel = int(judgement.n_relevant[q])
        assert sliced.values["hit"][q] == hit_at_k(keep, k)
        assert abs(sliced.values["precision"][q] - precision_at_k(keep, k)) < 1e-12
        assert abs(sliced.values["context_precision"][q] - context_precision_at_k(keep, k)) < 1e-12
        assert abs(sliced.values["mrr"][q] - reciprocal_rank(keep, k)) < 1e-12
        assert abs(sliced.values["ndcg"][q] - ndcg_at_k(keep, k, n_rel)) < 1e-12
        assert abs(sliced.values["recall_trec"][q] - recall_at_k(keep, k, n_rel)) < 1e-12
        best = best_score(judgement.scores[q : q + 1])[0]
        expected = zero_hit(None if np.isnan(best) else float(best), threshold)
        assert bool(sliced.values["zero_hit"][q]) == expected
        assert sliced.n_returned[q] == len(keep)


def test_no_fallback_to_top1_when_everything_is_below_threshold() -> None:
    scores = np.array([[0.2, 0.1, np.nan]])
    judgement = PoolJudgement(np.array([[True, False, False]]), scores, np.array([1]))
    sliced = slice_metrics(judgement, k=3, threshold=0.25)
    assert sliced.values["zero_hit"][0] and sliced.n_returned[0] == 0 and sliced.values["hit"][0] == 0.0


def test_returned_mask_keeps_pool_order_and_cuts_at_k() -> None:
    scores = np.array([[0.9, 0.1, 0.8, 0.7, np.nan]])
    assert returned_mask(scores, 2, 0.5).tolist() == [[True, False, True, False, False]]
