"""Threshold advice that keeps answers: hand-worked values, the zero-hit invariant, AUC against scipy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import mannwhitneyu

from evalkit.scoring.calibration import best_scores, calibrate_by_class
from evalkit.scoring.thresholds import (
    WIDEN_POOL,
    advise,
    auto_thresholds,
    floor_significant,
    highest_threshold_within,
    no_filter_threshold,
    roc_auc,
    zero_hit_at,
)

NAN = math.nan


def test_roc_auc_by_hand_with_ties_counted_half() -> None:
    # Pairs (p, n): (3,1) win, (3,3) tie, (2,1) win, (2,3) loss -> (1 + .5 + 1 + 0) / 4.
    assert roc_auc(np.array([3.0, 2.0]), np.array([1.0, 3.0])) == pytest.approx(0.625)
    assert roc_auc(np.array([5.0]), np.array([1.0, 2.0])) == 1.0
    assert roc_auc(np.array([1.0]), np.array([1.0])) == 0.5
    assert math.isnan(roc_auc(np.array([]), np.array([1.0])))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 8), min_size=1, max_size=30),
    st.lists(st.integers(0, 8), min_size=1, max_size=30),
)
def test_roc_auc_equals_mann_whitney_u(pos: list[int], neg: list[int]) -> None:
    u = mannwhitneyu(pos, neg, alternative="two-sided").statistic
    assert roc_auc(np.array(pos, float), np.array(neg, float)) == pytest.approx(u / (len(pos) * len(neg)))


def test_highest_threshold_within_by_hand() -> None:
    best = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0])
    # 20% of 10 = 2 misses allowed: the third score; at 3.0 two questions (1, 2) get nothing.
    assert highest_threshold_within(best, 0.2) == 3.0
    assert zero_hit_at(best, 3.0) == 0.2
    assert zero_hit_at(best, 3.0001) == 0.3
    # A question without any candidate is a miss at every threshold.
    with_missing = np.array([NAN, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0])
    assert highest_threshold_within(with_missing, 0.2) == 3.0
    assert highest_threshold_within(np.array([NAN, NAN, 1.0]), 0.5) is None
    # Ties: both 2s fall below any threshold above 2.
    assert highest_threshold_within(np.array([2.0, 2.0, 5.0, 6.0]), 0.25) == 2.0


def test_advice_sets_a_threshold_only_where_it_separates() -> None:
    ans = np.arange(10.0, 30.0)  # 20 answerable questions, best 10..29
    unans = np.array([1.0, 2.0, 3.0, 11.0])
    a = advise(ans, unans, floor=0.0, target=0.05)
    assert a.advice == "threshold"
    # 5% of 20 = one miss: threshold 11, below it only the answerable 10 and three unanswerable.
    assert a.advised_threshold == 11.0 == a.recommended_threshold
    assert a.zero_hit_answerable_at_advised == 0.05
    assert a.abstention_at_advised == 0.75
    assert a.auc_answerable_vs_unanswerable == pytest.approx((3 * 20 + 18 + 0.5) / 80)


@pytest.mark.parametrize(
    ("ans", "unans", "why"),
    [
        (np.arange(10.0, 30.0), np.array([]), "no unanswerable questions"),
        (np.arange(10.0, 30.0), np.arange(10.5, 30.5), "< 0.7: the best score barely separates"),
        (np.array([NAN, NAN, 5.0]), np.array([1.0]), "get no candidate"),
        (np.arange(10.0, 30.0), np.array([40.0, 41.0, 9.0, 1.0]), "AUC 0.50 < 0.7"),
    ],
)
def test_no_threshold_says_why_and_widens_the_pool(ans: np.ndarray, unans: np.ndarray, why: str) -> None:
    a = advise(ans, unans, floor=0.0, target=0.05)
    assert a.advice == "no threshold"
    assert why in a.reason and a.reason.endswith(WIDEN_POOL)
    assert math.isnan(a.advised_threshold) and a.recommended_threshold == 0.0


def test_no_threshold_when_it_buys_no_abstention() -> None:
    # The score separates (AUC 0.95), but no unanswerable question scores below the one safe threshold, 5.
    ans = np.concatenate([[5.0], np.full(19, 10.0)])
    a = advise(ans, np.array([6.0, 7.0]), floor=0.0, target=0.0)
    assert a.auc_answerable_vs_unanswerable == pytest.approx(0.95)
    assert a.advice == "no threshold" and "abstains on no more" in a.reason


scores_st = st.lists(
    st.one_of(st.floats(-5, 50, allow_nan=False), st.just(NAN), st.sampled_from([0.0, 1.0, 2.5])),
    min_size=1,
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(scores_st, scores_st, st.sampled_from([0.0, 0.01, 0.05, 0.07, 0.1, 0.29, 0.5]))
def test_zero_hit_at_the_advised_threshold_never_exceeds_the_target(
    ans: list[float], unans: list[float], target: float
) -> None:
    ans_a, unans_a = np.array(ans), np.array(unans)
    floor = no_filter_threshold(np.concatenate([ans_a, unans_a]))
    a = advise(ans_a, unans_a, floor=floor, target=target)
    t = highest_threshold_within(ans_a, target)
    if t is not None:
        assert zero_hit_at(ans_a, t) <= target
        # ... and it is the highest such threshold: just above it, the target breaks.
        assert zero_hit_at(ans_a, float(np.nextafter(t, np.inf))) > target or t == np.nanmax(ans_a)
    if a.advice == "threshold":
        assert np.mean(np.isnan(ans_a) | (ans_a < a.advised_threshold)) <= target
        assert a.zero_hit_answerable_at_advised <= target
        assert a.abstention_at_advised > zero_hit_at(unans_a, floor)
    else:
        assert math.isnan(a.advised_threshold) and a.recommended_threshold == floor


@settings(max_examples=100, deadline=None)
@given(
    st.integers(2, 30).flatmap(
        lambda n: st.tuples(
            st.lists(st.lists(st.floats(0, 30, allow_nan=False), min_size=5, max_size=5), min_size=n, max_size=n),
            st.lists(st.lists(st.booleans(), min_size=5, max_size=5), min_size=n, max_size=n),
            st.lists(st.booleans(), min_size=n, max_size=n),
            st.lists(st.sampled_from(["en", "zh"]), min_size=n, max_size=n),
        )
    )
)
def test_calibration_records_keep_the_invariant(case: tuple) -> None:
    scores, relevant, answerable, classes = (np.array(x) for x in case)
    relevant = relevant & answerable[:, None]  # unanswerable questions have no relevant unit
    for c in calibrate_by_class("c", "bm25", list(classes), scores, relevant, answerable):
        assert not c.zero_hit_answerable_at_advised > c.zero_hit_target
        assert not c.zero_hit_answerable_at_recommended > c.zero_hit_target or c.advice == "no threshold"
        assert (c.advice == "threshold") == np.isfinite(c.advised_threshold)
        if c.n_unanswerable == 0:
            assert c.advice == "no threshold"


def test_calibrate_by_class_worked_example() -> None:
    # 20 answerable questions (relevant best 10..29, irrelevant best 5), 4 unanswerable (best 1, 2, 3, 11).
    n_ans = 20
    scores = np.full((24, 2), NAN)
    relevant = np.zeros((24, 2), dtype=bool)
    scores[:n_ans, 0] = np.arange(10.0, 30.0)
    relevant[:n_ans, 0] = True
    scores[:n_ans, 1] = 5.0
    scores[n_ans:, 0] = [1.0, 2.0, 3.0, 11.0]
    answerable = np.arange(24) < n_ans
    classes = ["en"] * 12 + ["zh"] * 12
    found = {c.question_class: c for c in calibrate_by_class("s512", "bm25", classes, scores, relevant, answerable)}
    assert list(found) == ["all", "en", "zh"]
    c = found["all"]
    assert (c.n_answerable, c.n_unanswerable, c.n_relevant_best, c.n_irrelevant_best) == (20, 4, 20, 24)
    assert c.advice == "threshold" and c.advised_threshold == 11.0 == c.recommended_threshold
    assert c.zero_hit_answerable_at_advised == 0.05 and c.abstention_at_advised == 0.75
    assert c.zero_hit_answerable_at_recommended == 0.05 and c.zero_hit_unanswerable_at_recommended == 0.75
    # Relevant best 10..29 against irrelevant best (twenty 5s, then 1, 2, 3, 11): all but the 10 beat the 11.
    assert c.auc_relevant_vs_irrelevant == pytest.approx((20 * 23 + 18.5) / (20 * 24))
    # The former recommendation, kept as overlap_threshold: here the edges separate, so their midpoint.
    low, high = np.quantile(np.arange(10.0, 30.0), 0.05), np.quantile([5.0] * 20 + [1, 2, 3, 11], 0.95)
    assert (c.overlap_low, c.overlap_high, c.separable) == (pytest.approx(low), pytest.approx(high), True)
    assert c.overlap_threshold == pytest.approx((low + high) / 2)
    assert c.zero_hit_answerable_at_overlap == 0.0
    assert found["en"].advice == "no threshold" and "no unanswerable questions" in found["en"].advice_reason
    assert found["en"].recommended_threshold == 0.0 and math.isnan(found["en"].auc_answerable_vs_unanswerable)
    assert set(c.to_dict()) >= {
        "advice",
        "advice_reason",
        "advised_threshold",
        "zero_hit_answerable_at_advised",
        "abstention_at_advised",
        "auc_answerable_vs_unanswerable",
        "auc_relevant_vs_irrelevant",
        "n_answerable",
        "n_unanswerable",
        "overlap_low",
        "overlap_high",
        "recommended_threshold",
    }


def test_best_scores_split_relevant_and_irrelevant() -> None:
    scores = np.array([[3.0, 2.0, NAN], [NAN, NAN, NAN]])
    relevant = np.array([[False, True, False], [False, False, False]])
    rel, irr = best_scores(scores, relevant)
    assert rel[0] == 2.0 and irr[0] == 3.0 and np.isnan(rel[1]) and np.isnan(irr[1])


def test_floor_significant_never_rounds_up() -> None:
    assert floor_significant(10.5549) == 10.5
    assert floor_significant(3.98453) == 3.98
    assert floor_significant(0.012345) == 0.0123
    assert floor_significant(-1.234) == -1.24
    assert floor_significant(0.0) == 0.0
    for x in np.random.default_rng(0).uniform(0.001, 1000, 500):
        assert floor_significant(float(x)) <= x


def test_auto_thresholds_from_answerable_best_scores() -> None:
    best = np.arange(1.0, 101.0) * 0.12345  # 100 answerable questions
    grid = auto_thresholds(best)
    # 0 first, then the 2nd/5th/10th percentile scores ("lower": observed values), floored to 3 digits.
    assert grid == (0.0, floor_significant(2 * 0.12345), floor_significant(5 * 0.12345), 1.23)
    for level, t in zip((0.02, 0.05, 0.10), grid[1:], strict=True):
        assert zero_hit_at(best, t) <= level
    assert auto_thresholds(np.full(10, 7.0)) == (0.0, 7.0)  # deduplicated
    assert auto_thresholds(np.array([NAN, NAN])) == (0.0,)
    assert len(auto_thresholds(best, n=6)) == 6
    assert auto_thresholds(np.array([-3.0, 1.0, 2.0]), n=2) == (-3.0,)
