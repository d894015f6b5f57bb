"""Paired differences with the source document as the unit: a cluster (block) bootstrap (pure).

Questions written against one document share its wording and its chunks, so their paired
differences are correlated; resampling questions then gives intervals too narrow (on real
sets 0.8-1.9x, a "95%" interval covering 85-90%). Here whole clusters are resampled: each
resample draws G clusters with replacement and the statistic is the mean difference over the
questions they hold (a ratio of sums, so clusters of any size weigh as many questions as
they hold, as the point estimate does).

Few clusters: a percentile bootstrap over G clusters is too narrow when G is small (its
spread is the plug-in ``sd/sqrt(G)``, its quantiles normal ones). So the interval is the
outer bounds of two (method ``cluster-bootstrap``):

- the *expanded* percentile bootstrap over clusters (Hesterberg 2015; quantile levels widened
  with ``sqrt(G/(G-1)) t_{G-1}``, as :mod:`.clustered` does over questions), which follows skew;
- the cluster-robust (CR1) t interval ``d +- t_{G-1} se`` with
  ``se = sqrt(G/(G-1) sum_g e_g**2) / N`` and ``e_g`` the sum of a cluster's deviations from
  ``d``: the usual small-G reference (G - 1 degrees of freedom), which keeps few or unequal
  clusters from being too narrow.

The p-value is the larger of the bootstrap one (inverting the percentile interval) and the
CR1 t test's, so a p below ``1 - level`` goes with an interval that excludes 0.
Simulated coverage is checked in ``tests/test_cluster_coverage.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy.stats import t as student_t

from evalkit.records import PairedComparison
from evalkit.scoring.stats.clustered import expanded_level
from evalkit.scoring.stats.inputs import FloatArray, Seed, check_level, check_resamples, rng_from
from evalkit.scoring.stats.resample import BLOCK_ELEMENTS, bootstrap_p_value

__all__ = ["cluster_paired_bootstrap", "cluster_se"]


def cluster_se(diffs: FloatArray, codes: np.ndarray) -> tuple[float, int]:
    """The CR1 standard error of the mean of ``diffs`` with clusters ``codes`` (0..G-1), and G."""
    n_clusters = int(codes.max()) + 1
    centred = np.bincount(codes, weights=diffs - diffs.mean(), minlength=n_clusters)
    if n_clusters < 2:
        return math.nan, n_clusters
    scale = n_clusters / (n_clusters - 1.0)
    return math.sqrt(scale * float(np.sum(centred**2))) / diffs.size, n_clusters


def _resampled(sums: FloatArray, counts: FloatArray, n_resamples: int, rng: np.random.Generator) -> FloatArray:
    g = sums.size
    block = max(1, BLOCK_ELEMENTS // g)
    out = np.empty(n_resamples, dtype=np.float64)
    for start in range(0, n_resamples, block):
        stop = min(start + block, n_resamples)
        idx = rng.integers(0, g, size=(stop - start, g))
        out[start:stop] = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
    return out


def _shares(values: np.ndarray) -> bool:
    """Values that are shares (every one in [0, 1]): their means, and so the difference's bounds, are too."""
    return bool(values.size) and float(values.min()) >= 0.0 and float(values.max()) <= 1.0


def cluster_paired_bootstrap(
    baseline: ArrayLike,
    candidate: ArrayLike,
    clusters: ArrayLike,
    level: float = 0.95,
    n_resamples: int = 5000,
    seed: Seed = 0,
    metric: str = "",
) -> PairedComparison:
    """``mean(candidate) - mean(baseline)`` over the questions both define, resampling whole clusters.

    ``clusters`` holds one label per question (any hashable values; equal labels are one
    cluster), aligned with the two value arrays. Pairs with a NaN on either side are dropped
    and counted. See the module docstring for the interval and the p-value.

    Raises:
        ValueError: length mismatch, no complete pairs, infinite values, bad level.
    """
    check_level(level)
    check_resamples(n_resamples)
    base = np.asarray(baseline, dtype=np.float64)
    cand = np.asarray(candidate, dtype=np.float64)
    labels = np.asarray(clusters, dtype=object)
    if not base.shape == cand.shape == labels.shape or base.ndim != 1:
        raise ValueError(f"baseline, candidate and clusters must be 1-D of one length: {base.shape}, "
                         f"{cand.shape}, {labels.shape}")  # fmt: skip
    if np.isinf(base).any() or np.isinf(cand).any():
        raise ValueError("infinite values are not allowed; use NaN for missing values")
    keep = ~(np.isnan(base) | np.isnan(cand))
    if not keep.any():
        raise ValueError("no complete pairs")
    base, cand = base[keep], cand[keep]
    codes = pd.factorize(pd.Series(labels[keep]).astype(str))[0]
    diffs = cand - base
    delta = float(diffs.mean())
    se, g = cluster_se(diffs, codes)
    if np.ptp(diffs) == 0 or g < 2:
        low = high = delta
        p_value = bootstrap_p_value(np.full(n_resamples, delta))
        boot = None
    else:
        sums = np.bincount(codes, weights=diffs, minlength=g)
        counts = np.bincount(codes, minlength=g).astype(np.float64)
        boot = _resampled(sums, counts, n_resamples, rng_from(seed))
        wide = expanded_level(level, g)
        low, high = (float(v) for v in np.quantile(boot, [(1.0 - wide) / 2.0, (1.0 + wide) / 2.0]))
        half = float(student_t.isf((1.0 - level) / 2.0, g - 1)) * se
        low, high = min(low, delta - half), max(high, delta + half)
        t_p = float(2.0 * student_t.sf(abs(delta) / se, g - 1)) if se > 0 else 1.0
        p_value = max(bootstrap_p_value(boot), t_p)
    if boot is None and g < 2 and np.ptp(diffs) > 0:
        # One cluster: nothing to resample; the difference is known only as this one cluster's mean.
        low, high, p_value = -math.inf, math.inf, 1.0
    if _shares(base) and _shares(cand):
        # Two shares differ by at most 1: the t half's width (t with G-1 df on a few clusters) is not allowed to
        # state more than the measure can take (an answer check of 2 questions gave [-585, +685] points).
        low, high = max(low, -1.0), min(high, 1.0)
    return PairedComparison(
        metric=metric,
        baseline_mean=float(base.mean()),
        candidate_mean=float(cand.mean()),
        delta=delta,
        delta_low=low,
        delta_high=high,
        p_value=p_value,
        n=int(diffs.size),
        test=f"cluster bootstrap ({g} clusters)",
        level=level,
        n_missing=int((~keep).sum()),
    )
