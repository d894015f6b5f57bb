"""One config's mean, a paired share difference, and the design effect, with clusters as the unit (pure).

The same small-cluster-count method as :mod:`.cluster_paired` (which every function here calls):
the outer bounds of the expanded percentile bootstrap over clusters and the cluster-robust (CR1)
t interval with G - 1 degrees of freedom. So an interval the report, the answer check or the
position experiment states resamples the same clusters, in the same way, as the gate's.

- :func:`cluster_mean_ci`: the interval of one config's mean (the report's per-config intervals).
- :func:`cluster_difference`: a paired difference of 0/1 outcomes or per-question shares: the
  question-level interval of :func:`.clustered.paired_difference_ci` (Newcombe for 0/1; never of
  width zero) widened to the cluster bootstrap's bounds, with the cluster bootstrap's p-value (a
  caller's McNemar p assumes independent questions, so it takes the larger of the two).
- :func:`measured_design_effect`: the squared ratio of the cluster-robust to the independent standard
  error of a mean difference (at least 1): how many times fewer independent questions the set is worth.
- :func:`planning_design_effect`: ``1 + (m_w - 1) rho`` from the cluster sizes alone (``m_w`` the
  size-weighted mean cluster size), for sizing before any value is measured.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from evalkit.records import Interval, PairedComparison
from evalkit.scoring.stats.cluster_paired import cluster_paired_bootstrap, cluster_se
from evalkit.scoring.stats.clustered import paired_difference_ci
from evalkit.scoring.stats.inputs import Seed
from evalkit.scoring.stats.intervals import bootstrap_ci

__all__ = [
    "cluster_difference",
    "cluster_mean_ci",
    "measured_design_effect",
    "planning_design_effect",
    "weighted_cluster_size",
]


def cluster_mean_ci(
    values: ArrayLike, clusters: ArrayLike, level: float = 0.95, n_resamples: int = 5000, seed: Seed = 0
) -> Interval:
    """The mean of ``values`` (NaN dropped) with an interval resampling whole clusters, cut to the values' range.

    All-equal values give :func:`.intervals.bootstrap_ci`'s degenerate interval (nothing varies).

    Raises:
        ValueError: length mismatch, no value, infinite values, bad level.
    """
    x = np.asarray(values, dtype=np.float64)
    kept = x[~np.isnan(x)]
    if kept.size == 0 or np.ptp(kept) == 0:
        return bootstrap_ci(x, level=level, n_resamples=n_resamples, seed=seed)
    c = cluster_paired_bootstrap(np.zeros_like(x), x, clusters, level, n_resamples, seed)
    # The t half of the interval is symmetric; no resampled mean leaves the values' range (a share stays in [0, 1]).
    low, high = max(c.delta_low, float(kept.min())), min(c.delta_high, float(kept.max()))
    return Interval(c.delta, low, high, c.n, level, c.test, c.n_missing)


def cluster_difference(
    baseline: ArrayLike,
    candidate: ArrayLike,
    clusters: ArrayLike,
    level: float = 0.95,
    n_resamples: int = 5000,
    seed: Seed = 0,
    metric: str = "",
) -> PairedComparison:
    """``mean(candidate) - mean(baseline)`` of values in [0, 1] with the outer bounds of the question-level
    interval (:func:`.clustered.paired_difference_ci`) and the cluster bootstrap; the p-value is the cluster
    bootstrap's. ``test`` names both (e.g. ``newcombe and cluster bootstrap (40 clusters)``).

    Raises:
        ValueError: length mismatch, no complete pairs, values outside [0, 1], bad level.
    """
    inner = paired_difference_ci(baseline, candidate, level, seed, n_resamples)
    outer = cluster_paired_bootstrap(baseline, candidate, clusters, level, n_resamples, seed, metric)
    low, high = max(-1.0, min(inner.low, outer.delta_low)), min(1.0, max(inner.high, outer.delta_high))
    return PairedComparison(
        metric, outer.baseline_mean, outer.candidate_mean, outer.delta, low, high, outer.p_value,
        outer.n, f"{inner.method} and {outer.test}", level=level, n_missing=outer.n_missing,
    )  # fmt: skip


def measured_design_effect(diffs: ArrayLike, clusters: ArrayLike) -> float:
    """``(se_cluster / se_independent)**2`` of the mean of ``diffs`` (NaN dropped), floored at 1; 1.0 when
    nothing varies or there are fewer than two clusters (nothing to measure it from)."""
    x = np.asarray(diffs, dtype=np.float64)
    labels = np.asarray(clusters, dtype=object)
    keep = ~np.isnan(x)
    x, labels = x[keep], labels[keep]
    if x.size < 2 or np.ptp(x) == 0:
        return 1.0
    codes = pd.factorize(pd.Series(labels).astype(str))[0]
    clustered, g = cluster_se(x, codes)
    independent = float(np.std(x, ddof=1)) / math.sqrt(x.size)
    if g < 2 or not math.isfinite(clustered) or independent <= 0:
        return 1.0
    return max(1.0, (clustered / independent) ** 2)


def weighted_cluster_size(sizes: ArrayLike) -> float:
    """``sum m_g**2 / sum m_g``: the cluster size an average question sits in (1.0 when every cluster is one)."""
    m = np.asarray(sizes, dtype=np.float64)
    if m.size == 0 or m.sum() <= 0:
        return 1.0
    return float(np.sum(m * m) / np.sum(m))


def planning_design_effect(sizes: ArrayLike, rho: float) -> float:
    """Kish's design effect ``1 + (m_w - 1) rho`` of a mean over clusters of ``sizes`` at intra-cluster
    correlation ``rho``: the factor by which clusters shrink the effective number of questions.

    Raises:
        ValueError: ``rho`` outside [0, 1].
    """
    if not 0.0 <= rho <= 1.0:
        raise ValueError(f"rho must be in [0, 1], got {rho}")
    return 1.0 + (weighted_cluster_size(sizes) - 1.0) * rho
