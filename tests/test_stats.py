"""Tests for evalkit.scoring.stats: reference implementations, hand-worked values, simulations.

Reference values come from scipy (bootstrap, permutation_test, binomtest's
Wilson interval) and from calculations written out in comments. The
simulation tests use fixed seeds, so they are deterministic; their sizes
are chosen so Monte Carlo error is small next to the acceptance bands.
"""

from __future__ import annotations

import math
import time
from dataclasses import FrozenInstanceError

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

import evalkit.scoring.stats.resample as resample_module
from evalkit.scoring.stats import (
    Interval,
    PairedComparison,
    bootstrap_ci,
    discordance_rate,
    holm,
    mcnemar_power,
    minimum_detectable_effect,
    non_inferior,
    paired_binary_mde,
    paired_bootstrap,
    paired_permutation_test,
    relative_change,
    wilson_ci,
    with_holm,
    within_noise,
)

Z_975 = 1.959963984540054  # Phi^-1(0.975)
Z_80 = 0.8416212335729143  # Phi^-1(0.80)


def _mean_diff(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(y - x, axis=axis)


def _binary(rng: np.random.Generator, n: int, p: float) -> np.ndarray:
    return (rng.random(n) < p).astype(np.float64)


def _comparison(low: float, high: float) -> PairedComparison:
    return PairedComparison("hit@5", 0.7, 0.7 + (low + high) / 2, (low + high) / 2, low, high, 0.5, 200, "bootstrap")


# --------------------------------------------------------------------------
# bootstrap_ci
# --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["binary", "beta"])
def test_percentile_interval_matches_scipy(kind: str) -> None:
    rng = np.random.default_rng(11)
    values = _binary(rng, 200, 0.7) if kind == "binary" else rng.beta(2, 5, 200)
    ours = bootstrap_ci(values, n_resamples=5000, seed=1)
    ref = scipy.stats.bootstrap(
        (values,), np.mean, n_resamples=5000, method="percentile", confidence_level=0.95, rng=2
    ).confidence_interval
    assert ours.mean == pytest.approx(values.mean())
    assert ours.low == pytest.approx(ref.low, abs=0.01)
    assert ours.high == pytest.approx(ref.high, abs=0.01)
    assert ours.method == "percentile"
    assert (ours.n, ours.level, ours.n_missing) == (200, 0.95, 0)


def test_bca_interval_matches_scipy_on_skewed_data() -> None:
    values = np.random.default_rng(12).lognormal(0.0, 1.0, 300)
    ours = bootstrap_ci(values, n_resamples=5000, seed=1, method="bca")
    ref = scipy.stats.bootstrap((values,), np.mean, n_resamples=5000, method="BCa", rng=2).confidence_interval
    width = ref.high - ref.low
    assert ours.low == pytest.approx(ref.low, abs=0.03 * width)
    assert ours.high == pytest.approx(ref.high, abs=0.03 * width)
    # BCa moves a right-skewed mean's interval up relative to the percentile one.
    percentile = bootstrap_ci(values, n_resamples=5000, seed=1)
    assert ours.high > percentile.high


def test_bca_handles_rare_events_and_extreme_levels() -> None:
    for values, level in (([0.0] * 9 + [1.0], 0.95), ([0.0] * 999 + [1.0], 0.9999), ([1.0, 0.0], 0.5)):
        interval = bootstrap_ci(values, level=level, method="bca", n_resamples=500)
        assert 0.0 <= interval.low <= interval.high <= 1.0
    paired = paired_bootstrap([0, 1, 1, 0, 1], [1, 1, 1, 1, 0], method="bca", n_resamples=500)
    assert paired.delta_low <= paired.delta <= paired.delta_high


def test_interval_is_frozen_and_has_half_width() -> None:
    interval = Interval(mean=0.5, low=0.4, high=0.7, n=10, level=0.95)
    assert interval.half_width == pytest.approx(0.15)
    with pytest.raises(FrozenInstanceError):
        interval.low = 0.0  # type: ignore[misc]


def test_all_equal_values_give_degenerate_interval() -> None:
    for values in ([0.25] * 50, [1.0], [0.0] * 3):
        interval = bootstrap_ci(values)
        assert interval.low == interval.mean == interval.high == values[0]
        assert interval.method == "degenerate"
        assert interval.half_width == 0.0


def test_nan_is_dropped_and_counted() -> None:
    values = np.array([1.0, np.nan, 0.0, 1.0, 1.0, np.nan, 0.0])
    with_nan = bootstrap_ci(values, seed=3)
    without = bootstrap_ci(values[~np.isnan(values)], seed=3)
    assert (with_nan.low, with_nan.high, with_nan.mean) == (without.low, without.high, without.mean)
    assert with_nan.n == 5
    assert with_nan.n_missing == 2


@pytest.mark.parametrize("values", [[], np.array([]), [np.nan, np.nan]])
def test_empty_input_raises_clear_error(values: list[float]) -> None:
    with pytest.raises(ValueError, match="empty: no non-missing values"):
        bootstrap_ci(values)


def test_bad_arguments_raise() -> None:
    with pytest.raises(ValueError, match="infinite"):
        bootstrap_ci([0.0, np.inf])
    with pytest.raises(ValueError, match="one-dimensional"):
        bootstrap_ci([[0.0, 1.0], [1.0, 0.0]])
    with pytest.raises(ValueError, match="level"):
        bootstrap_ci([0.0, 1.0], level=95)
    with pytest.raises(ValueError, match="n_resamples"):
        bootstrap_ci([0.0, 1.0], n_resamples=0)
    with pytest.raises(ValueError, match="unknown method"):
        bootstrap_ci([0.0, 1.0], method="basic")  # type: ignore[arg-type]


def test_seeded_deterministic_and_inputs_untouched() -> None:
    values = np.random.default_rng(5).random(300)
    copy = values.copy()
    first = bootstrap_ci(values, seed=9)
    assert bootstrap_ci(values, seed=9) == first
    assert bootstrap_ci(values, seed=10) != first
    assert bootstrap_ci(values, seed=np.random.default_rng(9)) == first
    np.testing.assert_array_equal(values, copy)


def test_block_size_does_not_change_results(monkeypatch: pytest.MonkeyPatch) -> None:
    values = np.random.default_rng(6).random(500)
    diffs = np.random.default_rng(7).normal(0.1, 1.0, 60)
    before = (bootstrap_ci(values, seed=4), paired_permutation_test(np.zeros(60), diffs, 3000, seed=4))
    monkeypatch.setattr(resample_module, "BLOCK_ELEMENTS", 1000)
    after = (bootstrap_ci(values, seed=4), paired_permutation_test(np.zeros(60), diffs, 3000, seed=4))
    assert before == after


def test_large_set_is_fast() -> None:
    values = _binary(np.random.default_rng(8), 6000, 0.7)
    started = time.perf_counter()
    interval = bootstrap_ci(values, n_resamples=2000, seed=0)
    assert time.perf_counter() - started < 2.0  # about 0.1 s on 2 cores
    assert interval.low < values.mean() < interval.high


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(0.0, 1.0), min_size=1, max_size=40),
    st.floats(-5.0, 5.0),
)
def test_interval_is_ordered_bounded_and_shift_equivariant(values: list[float], shift: float) -> None:
    interval = bootstrap_ci(values, n_resamples=200, seed=1)
    assert min(values) - 1e-12 <= interval.low <= interval.high <= max(values) + 1e-12
    shifted = bootstrap_ci([v + shift for v in values], n_resamples=200, seed=1)
    assert shifted.low == pytest.approx(interval.low + shift, abs=1e-9)
    assert shifted.high == pytest.approx(interval.high + shift, abs=1e-9)


# --------------------------------------------------------------------------
# wilson_ci
# --------------------------------------------------------------------------


def test_wilson_matches_hand_calculation_and_scipy() -> None:
    # k = 7 of n = 10, z = 1.959964, z^2 = 3.841459:
    #   denom  = 1 + 3.841459 / 10                         = 1.3841459
    #   centre = (0.7 + 3.841459 / 20) / 1.3841459         = 0.6444934
    #   half   = 1.959964 / 1.3841459 * sqrt(0.021 + 3.841459 / 400)
    #          = 1.4160097 * 0.1749390                      = 0.2477153
    #   -> [0.3967781, 0.8922087]
    interval = wilson_ci([1] * 7 + [0] * 3)
    assert interval.low == pytest.approx(0.3967781, abs=1e-6)
    assert interval.high == pytest.approx(0.8922087, abs=1e-6)
    ref = scipy.stats.binomtest(7, 10).proportion_ci(method="wilson")
    assert (interval.low, interval.high) == pytest.approx((ref.low, ref.high), abs=1e-12)


def test_wilson_does_not_collapse_on_all_ones() -> None:
    interval = wilson_ci([1.0] * 200)
    assert interval.high == 1.0
    assert 0.97 < interval.low < 1.0
    with pytest.raises(ValueError, match="binary"):
        wilson_ci([0.5, 1.0])


# --------------------------------------------------------------------------
# paired_permutation_test
# --------------------------------------------------------------------------


def test_permutation_exact_hand_enumerated() -> None:
    # diffs (1, 2, 3): the 8 sign patterns give sums 6, 4, 2, 0, 0, -2, -4, -6;
    # |sum| >= 6 for 2 of 8 -> p = 0.25.
    assert paired_permutation_test([0, 0, 0], [1, 2, 3]) == 0.25
    # diffs (1, -2, 3, 4): a pattern that negates the subset S sums to 10 - 2 sum(S).
    # Observed: S = {2}, sum 6. |10 - 2 s| >= 6 <=> s <= 2 or s >= 8:
    # subsets {}, {1}, {2} and their complements {1,2,3,4}, {2,3,4}, {1,3,4} -> 6 of 16.
    assert paired_permutation_test([0, 0, 0, 0], [1, -2, 3, 4]) == 0.375
    # Zero differences do not change the p-value; swapping the arms does not either.
    assert paired_permutation_test([0, 5, 0, 0, 0, 7], [1, 5, -2, 3, 4, 7]) == 0.375
    assert paired_permutation_test([1, -2, 3, 4], [0, 0, 0, 0]) == 0.375
    assert paired_permutation_test([0.3, 0.5], [0.3, 0.5]) == 1.0


def test_permutation_exact_matches_scipy() -> None:
    rng = np.random.default_rng(21)
    baseline, candidate = rng.random(12), rng.random(12) + 0.25
    ours = paired_permutation_test(baseline, candidate)
    ref = scipy.stats.permutation_test(
        (baseline, candidate), _mean_diff, permutation_type="samples", n_resamples=np.inf, vectorized=True
    ).pvalue
    assert ours == pytest.approx(ref, abs=1e-12)


def test_permutation_monte_carlo_matches_scipy() -> None:
    rng = np.random.default_rng(22)
    baseline = rng.random(40)
    noise = rng.normal(0.0, 0.2, 40)
    # Centre the differences and add 1.7 standard errors: a paired t of 1.7, p near 0.1.
    candidate = baseline + noise - noise.mean() + 1.7 * noise.std(ddof=1) / math.sqrt(40)
    b = 20_000
    ours = paired_permutation_test(baseline, candidate, n_resamples=b, seed=1)
    ref = scipy.stats.permutation_test(
        (baseline, candidate), _mean_diff, permutation_type="samples", n_resamples=b, vectorized=True, rng=2
    ).pvalue
    assert 0.02 < ref < 0.3  # a p-value where the comparison is informative
    se = math.sqrt(2 * ref * (1 - ref) / b)  # two independent Monte Carlo estimates
    assert abs(ours - ref) < 4 * se


def test_permutation_monte_carlo_never_reports_zero() -> None:
    p = paired_permutation_test(np.zeros(50), np.ones(50) + np.arange(50) / 100, n_resamples=999)
    assert p == pytest.approx(1 / 1000)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1.0, 1.0), min_size=1, max_size=30), st.floats(0.1, 10.0))
def test_permutation_p_is_valid_symmetric_and_scale_free(diffs: list[float], scale: float) -> None:
    zeros = [0.0] * len(diffs)
    p = paired_permutation_test(zeros, diffs, n_resamples=300, seed=3)
    assert 0.0 < p <= 1.0
    assert paired_permutation_test(diffs, zeros, n_resamples=300, seed=3) == p
    scaled = paired_permutation_test(zeros, [d * scale for d in diffs], n_resamples=300, seed=3)
    assert scaled == pytest.approx(p, abs=1e-12)


# --------------------------------------------------------------------------
# paired_bootstrap and relative_change
# --------------------------------------------------------------------------


def test_paired_bootstrap_interval_matches_scipy() -> None:
    rng = np.random.default_rng(31)
    baseline = _binary(rng, 300, 0.7)
    flip = rng.random(300) < 0.15
    candidate = np.where(flip, 1 - baseline, baseline)
    ours = paired_bootstrap(baseline, candidate, n_resamples=5000, seed=1, metric="hit@5")
    ref = scipy.stats.bootstrap(
        (baseline, candidate), _mean_diff, paired=True, vectorized=True, n_resamples=5000, method="percentile", rng=2
    ).confidence_interval
    assert ours.delta == pytest.approx(candidate.mean() - baseline.mean())
    assert ours.delta == pytest.approx(ours.candidate_mean - ours.baseline_mean)
    assert (ours.delta_low, ours.delta_high) == pytest.approx((ref.low, ref.high), abs=0.01)
    assert (ours.metric, ours.n, ours.test, ours.p_adjusted) == ("hit@5", 300, "bootstrap", None)


def test_paired_bootstrap_p_value_agrees_with_interval() -> None:
    rng = np.random.default_rng(32)
    baseline = rng.random(200)
    for shift in (0.0, 0.02, 0.05, 0.1):
        result = paired_bootstrap(baseline, baseline + shift + rng.normal(0, 0.2, 200), seed=1)
        assert (result.p_value < 0.05) == (not within_noise(result))


def test_paired_bootstrap_edge_cases() -> None:
    same = paired_bootstrap([0.2, 0.4, 0.9], [0.2, 0.4, 0.9])
    assert (same.delta, same.delta_low, same.delta_high, same.p_value) == (0.0, 0.0, 0.0, 1.0)
    assert within_noise(same)
    shifted = paired_bootstrap([0.0, 1.0, 2.0], [0.5, 1.5, 2.5], n_resamples=999)
    assert shifted.delta_low == shifted.delta_high == shifted.delta == 0.5
    assert shifted.p_value == pytest.approx(2 / 1000)
    with_nan = paired_bootstrap([1.0, np.nan, 0.0, 1.0], [1.0, 1.0, np.nan, 0.0])
    assert (with_nan.n, with_nan.n_missing) == (2, 2)
    permutation = paired_bootstrap([0, 0, 0], [1, 2, 3], test="permutation")
    assert (permutation.test, permutation.p_value) == ("permutation", 0.25)


def test_paired_inputs_must_match() -> None:
    with pytest.raises(ValueError, match="same order; got 3 and 2 values"):
        paired_bootstrap([0.0, 1.0, 1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="same order"):
        paired_permutation_test([0.0, 1.0, 1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="no complete pairs"):
        paired_bootstrap([], [])
    with pytest.raises(ValueError, match="no complete pairs"):
        paired_permutation_test([np.nan, 1.0], [1.0, np.nan])
    with pytest.raises(ValueError, match="unknown test"):
        paired_bootstrap([0.0, 1.0], [1.0, 1.0], test="wilcoxon")  # type: ignore[arg-type]


def test_relative_change_matches_scipy() -> None:
    rng = np.random.default_rng(41)
    baseline = rng.lognormal(-6.0, 0.5, 250)  # dollars per query
    candidate = baseline * rng.lognormal(np.log(1.3), 0.2, 250)
    ours = relative_change(baseline, candidate, n_resamples=5000, seed=1)
    ref = scipy.stats.bootstrap(
        (baseline, candidate),
        lambda b, c, axis: np.mean(c, axis=axis) / np.mean(b, axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=5000,
        method="percentile",
        rng=2,
    ).confidence_interval
    assert ours.ratio == pytest.approx(candidate.mean() / baseline.mean())
    assert (ours.low, ours.high) == pytest.approx((ref.low, ref.high), abs=0.01)
    assert ours.percent_change == pytest.approx(100 * (ours.ratio - 1))
    with pytest.raises(ValueError, match="positive"):
        relative_change([0.0, 0.0], [1.0, 1.0])


# --------------------------------------------------------------------------
# holm
# --------------------------------------------------------------------------


def test_holm_worked_example() -> None:
    # m = 4; sorted p: 0.005, 0.01, 0.03, 0.04
    #   0.005 * 4 = 0.02
    #   0.01  * 3 = 0.03   (max(0.02, 0.03) = 0.03)
    #   0.03  * 2 = 0.06   (0.06)
    #   0.04  * 1 = 0.04   -> max(0.06, 0.04) = 0.06 (monotone)
    # statsmodels multipletests(p, method="holm")[1] gives the same:
    # np.maximum.accumulate((m - arange(m)) * sorted_p), clipped at 1, unsorted.
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx((0.03, 0.06, 0.06, 0.02))
    # Capping: 0.5 * 2 = 1.0, then max(1.0, 0.6 * 1) = 1.0.
    assert holm([0.6, 0.5]) == (1.0, 1.0)
    assert holm([0.2]) == (0.2,)
    assert holm([]) == ()


def test_holm_rejects_invalid_p() -> None:
    for bad in ([0.1, 1.2], [-0.1], [float("nan")]):
        with pytest.raises(ValueError, match=r"\[0, 1\]"):
            holm(bad)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), max_size=20))
def test_holm_matches_reference_and_is_monotone(p: list[float]) -> None:
    adjusted = holm(p)
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    reference = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):  # the textbook loop
        running = max(running, min(1.0, (m - rank) * p[i]))
        reference[i] = running
    assert adjusted == pytest.approx(tuple(reference), abs=1e-15)
    for i in range(m):
        assert p[i] <= adjusted[i] <= 1.0
        for j in range(m):
            if p[i] <= p[j]:
                assert adjusted[i] <= adjusted[j]


def test_with_holm_fills_p_adjusted() -> None:
    family = tuple(
        PairedComparison(f"m{i}", 0.5, 0.5, 0.0, -0.1, 0.1, p, 100, "bootstrap")
        for i, p in enumerate((0.01, 0.04, 0.03, 0.005))
    )
    adjusted = with_holm(family)
    assert tuple(c.p_adjusted for c in adjusted) == pytest.approx((0.03, 0.06, 0.06, 0.02))
    assert all(c.p_adjusted is None for c in family)  # inputs untouched


# --------------------------------------------------------------------------
# minimum_detectable_effect, discordance_rate
# --------------------------------------------------------------------------


def test_mde_continuous_is_the_exact_t_test() -> None:
    # The t test's exact power at the returned effect is 0.8 (noncentral t), and the normal
    # formula (za + zb) * sd / sqrt(n) = 0.1400793 is a little too small at n = 100.
    delta = minimum_detectable_effect(100, sd=0.5)
    noncentral = delta * math.sqrt(100) / 0.5
    critical = scipy.stats.t.isf(0.025, 99)
    exact = scipy.stats.nct.sf(critical, 99, noncentral) + scipy.stats.nct.cdf(-critical, 99, noncentral)
    assert exact == pytest.approx(0.8, abs=1e-5)
    assert 0.1400793 < delta < 0.1420
    # Unpaired: two-sample t with df = 2n - 2 and noncentrality delta / (sd sqrt(2 / n)).
    delta = minimum_detectable_effect(100, sd=0.5, paired=False)
    noncentral = delta / (0.5 * math.sqrt(2 / 100))
    critical = scipy.stats.t.isf(0.025, 198)
    exact = scipy.stats.nct.sf(critical, 198, noncentral) + scipy.stats.nct.cdf(-critical, 198, noncentral)
    assert exact == pytest.approx(0.8, abs=1e-5)
    assert minimum_detectable_effect(1, sd=0.5) == math.inf  # no t test on one question


def test_mde_paired_binary_is_exact_mcnemar() -> None:
    # Connor's normal formula gave 0.0624609 at n = 400, psi = 0.2; exact McNemar power needs a little more.
    delta = minimum_detectable_effect(400, discordance=0.2)
    assert delta == pytest.approx(paired_binary_mde(400, 0.2), abs=0)
    assert 0.0624609 < delta < 0.2
    assert mcnemar_power(400, 0.2, delta) >= 0.8 > mcnemar_power(400, 0.2, delta - 1e-4)
    # Default discordance 2 p (1 - p): p = 0.7 -> psi = 0.42.
    assert minimum_detectable_effect(400, baseline_rate=0.7) == pytest.approx(
        minimum_detectable_effect(400, discordance=0.42), abs=1e-5
    )
    # Not detectable at this size (exact power at delta = psi below 0.8): inf, never a finite value above psi.
    assert minimum_detectable_effect(30, discordance=0.1) == math.inf
    assert minimum_detectable_effect(25, discordance=0.2) == math.inf  # Connor reported 0.239
    assert minimum_detectable_effect(15, discordance=0.3) == math.inf  # Connor reported 0.366


def test_mde_bad_arguments() -> None:
    with pytest.raises(ValueError, match="give sd"):
        minimum_detectable_effect(100)
    with pytest.raises(ValueError, match="give sd"):
        minimum_detectable_effect(100, baseline_rate=0.5, sd=0.3)
    with pytest.raises(ValueError, match="power"):
        minimum_detectable_effect(100, sd=0.3, power=1.0)
    with pytest.raises(ValueError, match="n must"):
        minimum_detectable_effect(0, sd=0.3)
    with pytest.raises(ValueError, match="sd must"):
        minimum_detectable_effect(10, sd=0.0)
    with pytest.raises(ValueError, match="baseline_rate"):
        minimum_detectable_effect(100, baseline_rate=1.5)
    with pytest.raises(ValueError, match="unpaired binary"):
        minimum_detectable_effect(100, discordance=0.2, paired=False)
    with pytest.raises(ValueError, match="unpaired binary"):
        minimum_detectable_effect(100, baseline_rate=0.5, paired=False)


def test_mde_has_the_stated_power() -> None:
    # At a true effect equal to the MDE, the paired bootstrap (the report's test) rejects about 80% of the time.
    rng = np.random.default_rng(51)
    sims = 1000
    delta = minimum_detectable_effect(100, sd=0.5)
    hits = sum(
        paired_bootstrap(np.zeros(100), rng.normal(delta, 0.5, 100), n_resamples=1000, seed=rng).p_value < 0.05
        for _ in range(sims)
    )
    assert 0.76 <= hits / sims <= 0.86  # the t test's exact power is 0.8; the bootstrap's is about the same


def test_discordance_rate() -> None:
    assert discordance_rate([1, 1, 0, 0, 1], [1, 0, 1, 0, 1]) == pytest.approx(0.4)
    with pytest.raises(ValueError, match="binary"):
        discordance_rate([0.5, 1.0], [1.0, 1.0])


# --------------------------------------------------------------------------
# non_inferior, within_noise
# --------------------------------------------------------------------------


def test_non_inferior_and_within_noise() -> None:
    slightly_worse = _comparison(-0.015, 0.01)
    assert non_inferior(slightly_worse, margin=0.02)
    assert not non_inferior(slightly_worse, margin=0.01)
    assert within_noise(slightly_worse)
    clearly_better = _comparison(0.01, 0.05)
    assert non_inferior(clearly_better, margin=0.0)
    assert not within_noise(clearly_better)
    # Lower is better (cost): the upper bound of the increase must stay below the margin.
    dearer = _comparison(0.001, 0.004)
    assert non_inferior(dearer, margin=0.005, higher_is_better=False)
    assert not non_inferior(dearer, margin=0.003, higher_is_better=False)
    with pytest.raises(ValueError, match="margin"):
        non_inferior(dearer, margin=-0.01)


# --------------------------------------------------------------------------
# Simulations (fixed seeds: deterministic)
# --------------------------------------------------------------------------


def _coverage(draw, true_mean: float, sims: int, method: str, seed: int) -> float:
    rng = np.random.default_rng(seed)
    covered = 0
    for _ in range(sims):
        interval = bootstrap_ci(draw(rng), n_resamples=2000, seed=rng, method=method)
        covered += interval.low <= true_mean <= interval.high
    return covered / sims


def test_coverage_bernoulli_percentile() -> None:
    # 2,000 samples of n = 200 Bernoulli(0.7); Monte Carlo SE of the share ~0.005.
    coverage = _coverage(lambda rng: _binary(rng, 200, 0.7), 0.7, 2000, "percentile", seed=61)
    assert 0.93 <= coverage <= 0.97  # measured 0.9525


def test_coverage_bernoulli_percentile_by_enumeration() -> None:
    # A binary sample's interval depends only on k, its number of ones, so the coverage
    # is sum_k Binom(k; 200, 0.7) * [0.7 in interval(k)], free of simulation error.
    n, p = 200, 0.7
    pmf = scipy.stats.binom.pmf(np.arange(n + 1), n, p)
    coverage = 0.0
    for k in np.flatnonzero(pmf > 1e-9):
        interval = bootstrap_ci(np.r_[np.ones(k), np.zeros(n - k)], n_resamples=4000, seed=int(k))
        coverage += pmf[k] * (interval.low <= p <= interval.high)
    assert 0.93 <= coverage <= 0.97  # measured 0.9550


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_coverage_skewed_exponential(method: str) -> None:
    # Exponential(1): skewness 2, like per-query cost. 1,500 samples of n = 200 (SE ~0.006).
    coverage = _coverage(lambda rng: rng.exponential(1.0, 200), 1.0, 1500, method, seed=62)
    assert 0.93 <= coverage <= 0.97  # measured 0.948 (percentile), 0.946 (BCa)


def _null_binary(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    # Each question has its own difficulty; the two configs are exchangeable given it.
    q = rng.beta(2.0, 1.0, n)
    return _binary_given(rng, q), _binary_given(rng, q)


def _binary_given(rng: np.random.Generator, q: np.ndarray) -> np.ndarray:
    return (rng.random(q.size) < q).astype(np.float64)


def _null_continuous(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    q = rng.beta(2.0, 2.0, n)
    return np.clip(q + rng.normal(0, 0.15, n), 0, 1), np.clip(q + rng.normal(0, 0.15, n), 0, 1)


def _rejection_rate(null, test: str, sims: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    rejected = 0
    for _ in range(sims):
        baseline, candidate = null(rng, 200)
        result = paired_bootstrap(baseline, candidate, n_resamples=999, seed=rng, test=test)
        rejected += result.p_value < 0.05
    return rejected / sims


@pytest.mark.parametrize(
    ("null", "test"),
    [(_null_continuous, "bootstrap"), (_null_continuous, "permutation"), (_null_binary, "bootstrap")],
)
def test_type_one_error_is_about_five_percent(null, test: str) -> None:
    # 1,000 null data sets of n = 200 pairs; Monte Carlo SE at 5% ~0.007.
    rate = _rejection_rate(null, test, 1000, seed=71)
    assert 0.03 <= rate <= 0.07  # measured 0.042 / 0.047 / 0.048


def test_type_one_error_binary_permutation_is_valid() -> None:
    # On binary data the sign-flip test is the exact McNemar test: discrete, so its size is
    # below alpha (3-4% with ~67 discordant pairs here), never above it.
    rate = _rejection_rate(_null_binary, "permutation", 1000, seed=71)
    assert rate <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / 1000)  # measured 0.035
