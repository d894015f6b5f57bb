"""Confidence intervals for the mean of one metric: bootstrap (percentile, BCa) and Wilson (pure)."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import ndtri

from evalkit.scoring.stats.inputs import Seed, check_level, check_resamples, clean, rng_from
from evalkit.scoring.stats.records import Interval
from evalkit.scoring.stats.resample import bca_bounds, percentile_bounds, resampled_means

__all__ = ["CIMethod", "bootstrap_ci", "wilson_bounds", "wilson_ci"]

CIMethod = Literal["percentile", "bca"]


def bootstrap_ci(
    values: ArrayLike,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: Seed = 0,
    method: CIMethod = "percentile",
) -> Interval:
    """Bootstrap confidence interval for the mean of per-question values.

    ``method="percentile"`` takes the ``(1-level)/2`` and ``(1+level)/2``
    quantiles (linear interpolation, as ``numpy.quantile`` and
    ``scipy.stats.bootstrap`` do) of the resampled means. ``method="bca"``
    corrects those quantile levels for bias and skew; prefer it for skewed
    metrics such as cost. For a proportion (binary metric) ``wilson_ci`` is
    the analytic alternative and, unlike any bootstrap, does not collapse to
    a zero-width interval when every value is 0 or every value is 1.

    NaN values are dropped and counted. All-equal values (including a single
    value) give the degenerate interval ``[v, v]`` with method
    ``degenerate``: the bootstrap has no spread to show.

    Raises:
        ValueError: no non-missing values, infinite values, bad level or
            resample count.
    """
    check_level(level)
    check_resamples(n_resamples)
    kept, n_missing = clean(values)
    mean = float(kept.mean())
    if np.ptp(kept) == 0:
        return Interval(mean, mean, mean, kept.size, level, "degenerate", n_missing)
    boot = resampled_means(kept[np.newaxis, :], n_resamples, rng_from(seed))[0]
    if method == "percentile":
        low, high = percentile_bounds(boot, level)
    elif method == "bca":
        low, high = bca_bounds(boot, kept, level)
    else:
        raise ValueError(f"unknown method {method!r}; use 'percentile' or 'bca'")
    return Interval(mean, low, high, kept.size, level, method, n_missing)


def wilson_ci(values: ArrayLike, level: float = 0.95) -> Interval:
    """Wilson score interval for the share of ones in binary values.

    With ``k`` ones in ``n`` values, ``p = k/n`` and ``z = Phi^-1((1+level)/2)``::

        centre = (p + z**2 / (2n)) / (1 + z**2 / n)
        half   = z / (1 + z**2 / n) * sqrt(p (1-p) / n + z**2 / (4 n**2))

    NaN values are dropped and counted.

    Raises:
        ValueError: no values, or values other than 0 and 1.
    """
    check_level(level)
    kept, n_missing = clean(values)
    if not np.isin(kept, (0.0, 1.0)).all():
        raise ValueError("wilson_ci needs binary values (0 or 1)")
    p = float(kept.mean())
    low, high = wilson_bounds(p, kept.size, level)
    return Interval(p, low, high, kept.size, level, "wilson", n_missing)


def wilson_bounds(share: float, n: int, level: float) -> tuple[float, float]:
    """Wilson score bounds for an observed share of n (the formula in ``wilson_ci``).

    ``share`` may be any value in [0, 1] (a mean of per-question shares, as the fallbacks of the
    clustered intervals use it). The width is positive for every n >= 1 and share, including 0
    and 1: the half-width is at least ``z**2 / (2 n (1 + z**2 / n))``.
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    z = float(ndtri(0.5 + level / 2.0))
    denom = 1.0 + z * z / n
    centre = (share + z * z / (2.0 * n)) / denom
    half = z / denom * math.sqrt(share * (1.0 - share) / n + z * z / (4.0 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)
