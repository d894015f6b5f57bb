"""A mean over every question of a set when only a sample was measured (pure): prediction-powered and
stratified, clustered by document.

The answer check cannot answer every question; it knows, for free and for every question, what retrieval
returned. Two phases: phase one is the whole set with a *prediction* ``f_i`` for each question (from
retrieval features, :mod:`evalkit.scoring.answer_design`); phase two is a sample drawn with known inclusion
probabilities ``pi_i`` (Poisson sampling: higher where answers can differ), where the value ``y_i`` is
measured. The estimate of the set mean is the augmented inverse-probability one (PPI++'s form, Angelopoulos,
Duchi & Zrnic 2023, with the design's known ``pi`` in place of a random labelled subset)::

    z_i = lam * f_i + R_i * (y_i - lam * f_i) / pi_i            mean_hat = sum(z_i) / N

It is unbiased for any predictor and any ``lam`` (``E[R_i / pi_i] = 1``); ``lam`` in [0, 1] is chosen to
minimise the estimated variance, so a useless predictor costs only a little width (``lam`` near 0 gives the
Horvitz-Thompson estimate of the stratified design) and a perfect one removes the sampling error. The
predictor must not be fitted on the same answers it corrects: callers cross-fit it
(:func:`evalkit.scoring.stats.logistic.cross_fitted`).

Variance: ``z_i`` are independent across documents (questions and their sampling draws are), so the
cluster-robust (CR1) variance of their mean over clusters applies, with a t reference on (sampled clusters
- 1) degrees of freedom, the number of clusters that carry information. A small-sample floor keeps a
handful of agreeing answers from claiming certainty: in each stratum the residual variance is at least
Wilson's upper share at zero events, ``z**2 / (k + z**2)`` for ``k`` answers (no disagreement seen in ``k``
pairs bounds the share that disagree by that much: :func:`evalkit.scoring.evidence.floor_half_width`'s
rule), and the interval is never narrower than that floor's design variance. Simulated coverage and power,
predictors from useless to perfect, clustered as the shared sets are: ``tests/test_answer_design.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm
from scipy.stats import t as student_t


@dataclass(frozen=True)
class TwoPhaseEstimate:
    """A set mean with its interval, from a sample of measured questions and predictions for all."""

    mean: float
    low: float
    high: float
    se: float
    lam: float
    """The prediction's weight (0: stratified Horvitz-Thompson alone)."""
    n_set: int
    n_measured: int
    clusters_measured: int
    method: str = "prediction-powered, stratified, clusters (CR1, t)"


def two_phase_mean(
    values: np.ndarray,
    measured: np.ndarray,
    inclusion: np.ndarray,
    prediction: np.ndarray,
    clusters: np.ndarray,
    strata: np.ndarray,
    level: float,
    lam: float | None = None,
    bounds: tuple[float, float] = (-1.0, 1.0),
    exact: np.ndarray | None = None,
) -> TwoPhaseEstimate | None:
    """The set mean of ``values`` (read only where ``measured``), one entry per question of the set.

    ``inclusion``: each question's probability of having been drawn (> 0 wherever ``measured``);
    ``prediction``: finite for every question (0 where nothing is predicted); ``clusters``/``strata``: labels.
    ``lam``: None chooses it (variance-minimising, in [0, 1]). ``exact``: questions whose value is known by
    construction, not by an answer (identical contexts: a difference of exactly 0); they carry no floor.
    None when nothing was measured.
    """
    y = np.where(measured, np.nan_to_num(np.asarray(values, dtype=float)), 0.0)
    r = np.asarray(measured, dtype=bool)
    pi = np.where(r, np.asarray(inclusion, dtype=float), 1.0)
    f = np.asarray(prediction, dtype=float)
    if not r.any():
        return None
    if lam is None:
        lam = _best_lambda(y, r, pi, f, clusters)
    z = lam * f + np.where(r, (y - lam * f) / pi, 0.0)
    n = z.size
    mean = float(z.mean())
    variance = max(
        _cr1_variance(z, clusters),
        _floor_variance(y - lam * f, r, np.asarray(inclusion, dtype=float), strata, n, level, exact),
    )
    se = math.sqrt(variance)
    g = len(set(np.asarray(clusters)[r].tolist()))
    t = float(student_t.isf((1.0 - level) / 2.0, max(g - 1, 1)))
    low, high = max(bounds[0], mean - t * se), min(bounds[1], mean + t * se)
    return TwoPhaseEstimate(mean, low, high, se, float(lam), n, int(r.sum()), g)


def _cr1_variance(z: np.ndarray, clusters: np.ndarray) -> float:
    """The cluster-robust variance of ``mean(z)`` over the clusters' sums (CR1's G/(G-1))."""
    deviations = z - z.mean()
    _, at = np.unique(np.asarray(clusters), return_inverse=True)
    sums = np.bincount(at, weights=deviations)
    g = sums.size
    if g < 2:
        return math.inf
    return float(g / (g - 1) * np.sum(sums**2) / z.size**2)


def _floor_variance(
    residual: np.ndarray,
    measured: np.ndarray,
    inclusion: np.ndarray,
    strata: np.ndarray,
    n: int,
    level: float,
    exact: np.ndarray | None = None,
) -> float:
    """The variance of the residual total with each stratum's variance at least its zero-event floor.

    ``Var = sum_s N_s / pi_s * e_s**2 / N**2``, with ``e_s**2`` the stratum's residual variance, floored, so a
    stratum measured twice with equal answers still has width. No finite-population correction: the question
    is about questions like these, not only this set's (a census of 20 agreeing answers shows what 20 show).
    """
    z2 = float(norm.isf((1.0 - level) / 2.0)) ** 2
    total = 0.0
    labels = np.asarray(strata)
    certain = np.zeros(labels.size, dtype=bool) if exact is None else np.asarray(exact, dtype=bool)
    for stratum in np.unique(labels[~certain]):
        inside = (labels == stratum) & ~certain
        sampled = inside & measured
        k = int(sampled.sum())
        observed = float(np.var(residual[sampled], ddof=1)) if k > 1 else 0.0
        shrunk = max(observed, z2 / (k + z2))
        expected_pi = float(np.mean(np.clip(inclusion[inside], 0.0, 1.0)))
        size = int(inside.sum())
        if expected_pi <= 0.0:  # a stratum no question of which could be drawn: nothing bounds its mean
            return math.inf
        total += size / expected_pi * shrunk
    return total / n**2


def _best_lambda(y: np.ndarray, r: np.ndarray, pi: np.ndarray, f: np.ndarray, clusters: np.ndarray) -> float:
    """The ``lam`` in [0, 1] that minimises the estimate's CR1 variance (a quadratic in ``lam``).

    ``z(lam) = a + lam * b`` with ``a = R y / pi`` and ``b = f - R f / pi``: the variance is
    ``V(a) + 2 lam C(a, b) + lam**2 V(b)``, minimised at ``-C(a, b) / V(b)``, clipped to [0, 1].
    """
    a = np.where(r, y / pi, 0.0)
    b = f - np.where(r, f / pi, 0.0)
    _, at = np.unique(np.asarray(clusters), return_inverse=True)
    sa = np.bincount(at, weights=a - a.mean())
    sb = np.bincount(at, weights=b - b.mean())
    vb = float(np.sum(sb**2))
    if vb <= 0:
        return 0.0
    return float(np.clip(-float(np.sum(sa * sb)) / vb, 0.0, 1.0))
