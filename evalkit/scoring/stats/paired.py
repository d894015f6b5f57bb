"""Paired comparisons of two configs on the same questions: bootstrap, sign-flip permutation, ratio (pure)."""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from evalkit.records import PairedComparison, RatioInterval
from evalkit.scoring.stats.inputs import Seed, check_level, check_resamples, clean_pairs, rng_from
from evalkit.scoring.stats.intervals import CIMethod
from evalkit.scoring.stats.resample import (
    bootstrap_bounds,
    bootstrap_p_value,
    resampled_means,
    sign_flip_p,
)

__all__ = ["PValueTest", "paired_bootstrap", "paired_permutation_test", "relative_change"]

PValueTest = Literal["bootstrap", "permutation"]


def paired_permutation_test(
    baseline: ArrayLike,
    candidate: ArrayLike,
    n_resamples: int = 10_000,
    seed: Seed = 0,
) -> float:
    """Two-sided paired sign-flip (permutation) test of "no difference".

    Under the null, swapping a question's baseline and candidate values is
    as likely as not, so each difference ``candidate - baseline`` keeps or
    flips its sign with probability 1/2. The p-value is the share of sign
    patterns whose ``|mean difference|`` reaches the observed one.

    Zero differences are unchanged by a flip and are left out of the
    enumeration (this does not change the p-value). With m non-zero
    differences: m <= 16 enumerates all 2**m patterns (exact; this covers
    every n <= 16); otherwise ``n_resamples`` random patterns give
    ``(1 + hits) / (1 + n_resamples)``, which never reports p = 0 and keeps
    the test valid. All differences zero gives p = 1. Pairs with a NaN on
    either side are dropped.

    Raises:
        ValueError: length mismatch, no complete pairs, infinite values.
    """
    check_resamples(n_resamples)
    base, cand, _ = clean_pairs(baseline, candidate)
    return sign_flip_p(cand - base, n_resamples, rng_from(seed))


def paired_bootstrap(
    baseline: ArrayLike,
    candidate: ArrayLike,
    level: float = 0.95,
    n_resamples: int = 5000,
    seed: Seed = 0,
    metric: str = "",
    method: CIMethod = "percentile",
    test: PValueTest = "bootstrap",
) -> PairedComparison:
    """Compare candidate with baseline on the same questions in the same order.

    The interval for ``delta = mean(candidate) - mean(baseline)`` comes
    from resampling questions (pairs stay together), by ``method`` as in
    ``bootstrap_ci``. The two-sided p-value comes from ``test``:

    - ``bootstrap``: inverts the percentile interval,
      ``2 * (1 + min(#{d* <= 0}, #{d* >= 0})) / (B + 1)`` capped at 1, so
      with ``method="percentile"``, ``p < 1 - level`` exactly when the
      interval excludes 0 (up to the +1 and ties at 0).
    - ``permutation``: ``paired_permutation_test`` with the same
      ``n_resamples`` (exact for few non-zero differences; advisable when n
      is small).

    Pairs with a NaN on either side are dropped and counted.

    Raises:
        ValueError: length mismatch, no complete pairs, infinite values,
            bad level, method or test.
    """
    check_level(level)
    check_resamples(n_resamples)
    if test not in ("bootstrap", "permutation"):
        raise ValueError(f"unknown test {test!r}; use 'bootstrap' or 'permutation'")
    base, cand, n_missing = clean_pairs(baseline, candidate)
    diffs = cand - base
    rng = rng_from(seed)
    delta = float(diffs.mean())
    if np.ptp(diffs) == 0:
        boot = np.full(n_resamples, delta)
        low = high = delta
    else:
        boot = resampled_means(diffs[np.newaxis, :], n_resamples, rng)[0]
        low, high = bootstrap_bounds(boot, diffs, level, method)
    p_value = bootstrap_p_value(boot) if test == "bootstrap" else sign_flip_p(diffs, n_resamples, rng)
    return PairedComparison(
        metric=metric,
        baseline_mean=float(base.mean()),
        candidate_mean=float(cand.mean()),
        delta=delta,
        delta_low=low,
        delta_high=high,
        p_value=p_value,
        n=int(diffs.size),
        test=test,
        level=level,
        n_missing=n_missing,
    )


def relative_change(
    baseline: ArrayLike,
    candidate: ArrayLike,
    level: float = 0.95,
    n_resamples: int = 5000,
    seed: Seed = 0,
) -> RatioInterval:
    """Paired percentile-bootstrap interval for ``mean(candidate) / mean(baseline)``.

    Meant for cost-like metrics (non-negative, "x times as expensive").
    Both means come from the same resampled questions. A resample whose
    baseline mean is 0 gives a ratio of ``inf``.

    Raises:
        ValueError: length mismatch, no complete pairs, baseline mean <= 0.
    """
    check_level(level)
    check_resamples(n_resamples)
    base, cand, n_missing = clean_pairs(baseline, candidate)
    base_mean = float(base.mean())
    if base_mean <= 0:
        raise ValueError(f"baseline mean must be positive for a ratio, got {base_mean}")
    ratio = float(cand.mean()) / base_mean
    boot = resampled_means(np.stack([base, cand]), n_resamples, rng_from(seed))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(boot[0] > 0, boot[1] / boot[0], np.inf)
    alpha = 1.0 - level
    low, high = np.quantile(ratios, [alpha / 2.0, 1.0 - alpha / 2.0])
    high = float(np.inf) if np.isnan(high) else float(high)
    return RatioInterval(ratio, float(low), high, int(base.size), level, n_missing)
