"""Multiple comparisons, planning and decisions: Holm, the minimum detectable effect, non-inferiority (pure)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from numpy.typing import ArrayLike

from evalkit.records import PairedComparison
from evalkit.scoring.stats.inputs import clean_pairs
from evalkit.scoring.stats.power import paired_binary_mde, paired_mean_mde, two_sample_mean_mde

__all__ = [
    "discordance_rate",
    "holm",
    "minimum_detectable_effect",
    "non_inferior",
    "with_holm",
    "within_noise",
]


def holm(p_values: Sequence[float]) -> tuple[float, ...]:
    """Holm-Bonferroni adjusted p-values, in the input's order.

    Sort ascending; the i-th smallest (1-based) becomes
    ``max over j <= i of min(1, (m - j + 1) * p_(j))``, so adjusted values
    are monotone in the raw ones and capped at 1. Rejecting where the
    adjusted value is below alpha controls the family-wise error rate.

    Raises:
        ValueError: a value outside [0, 1] or NaN.
    """
    p = np.array(p_values, dtype=np.float64).reshape(-1)
    if p.size == 0:
        return ()
    if np.isnan(p).any() or (p < 0).any() or (p > 1).any():
        raise ValueError("p-values must lie in [0, 1]")
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m, dtype=np.float64)
    adjusted[order] = np.maximum.accumulate(scaled)
    return tuple(float(x) for x in adjusted)


def with_holm(comparisons: Sequence[PairedComparison]) -> tuple[PairedComparison, ...]:
    """Copies of ``comparisons`` with ``p_adjusted`` set by ``holm`` over the family."""
    adjusted = holm([c.p_value for c in comparisons])
    return tuple(replace(c, p_adjusted=a) for c, a in zip(comparisons, adjusted, strict=True))


def discordance_rate(baseline: ArrayLike, candidate: ArrayLike) -> float:
    """Share of questions where two binary metrics disagree (for the paired MDE).

    Raises:
        ValueError: length mismatch, no complete pairs, non-binary values.
    """
    base, cand, _ = clean_pairs(baseline, candidate)
    if not (np.isin(base, (0.0, 1.0)).all() and np.isin(cand, (0.0, 1.0)).all()):
        raise ValueError("discordance_rate needs binary values (0 or 1)")
    return float(np.mean(base != cand))


def minimum_detectable_effect(
    n: int,
    baseline_rate: float | None = None,
    sd: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    paired: bool = True,
    discordance: float | None = None,
) -> float:
    """Smallest true difference a two-sided level-``alpha`` test on n questions detects with ``power``.

    Computed from exact power, never a normal approximation; ``inf`` means "not detectable at
    this size" (no effect, however large, reaches the power):

    - Binary metric, paired: the exact McNemar test (``power.paired_binary_mde``) at the
      discordance ``psi`` (share of questions where exactly one config succeeds; ``discordance``,
      e.g. from ``discordance_rate`` on pilot data, else ``2 p (1 - p)`` with ``p =
      baseline_rate``, which assumes the two configs fail independently and so overstates psi for
      similar configs). ``inf`` whenever exact power at ``delta = psi`` is below ``power``, so the
      result is never above psi.
    - Continuous metric (``sd`` given), paired: ``sd`` is the standard deviation of the
      per-question differences; the one-sample t test's exact power (noncentral t,
      ``power.paired_mean_mde``). Unpaired: ``sd`` is the per-arm standard deviation and n the
      size of each arm; the two-sample t test's (``power.two_sample_mean_mde``). ``inf`` for
      n < 2 (no t test exists).
    - Binary metric, unpaired: not supported (no exact test is implemented for it); ValueError.

    Raises:
        ValueError: n < 1, alpha outside (0, 1), power outside [0.5, 1), neither or both of a rate
            and ``sd``, ``sd`` not positive, values out of range, an unpaired binary metric.
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha}")
    if not 0.5 <= power < 1.0:
        raise ValueError(f"power must lie in [0.5, 1), got {power}")
    binary = baseline_rate is not None or discordance is not None
    if binary == (sd is not None):
        raise ValueError("give sd (continuous metric) or baseline_rate/discordance (binary)")
    if sd is not None:
        if not (math.isfinite(sd) and sd > 0):
            raise ValueError(f"sd must be finite and positive (a spread of 0 gives nothing to plan from), got {sd}")
        mde = paired_mean_mde if paired else two_sample_mean_mde
        return _or_inf(mde(n, sd, alpha=alpha, power=power))
    if baseline_rate is not None and not 0.0 <= baseline_rate <= 1.0:
        raise ValueError(f"baseline_rate must lie in [0, 1], got {baseline_rate}")
    if not paired:
        raise ValueError("an unpaired binary MDE is not supported: compare the configs on the same (paired) questions")
    if discordance is not None:
        if not 0.0 <= discordance <= 1.0:
            raise ValueError(f"discordance must lie in [0, 1], got {discordance}")
        psi = discordance
    else:
        psi = 2.0 * baseline_rate * (1.0 - baseline_rate)  # type: ignore[operator]
    return _or_inf(paired_binary_mde(n, psi, alpha=alpha, power=power))


def _or_inf(value: float | None) -> float:
    return math.inf if value is None else value


def non_inferior(comparison: PairedComparison, margin: float, higher_is_better: bool = True) -> bool:
    """Whether the candidate is non-inferior to the baseline within ``margin``.

    ``margin`` is the largest tolerated loss in the metric's own units
    (e.g. 0.02 for two points of hit@5, or dollars per query for cost).
    Higher is better: passes when ``delta_low > -margin``. Lower is better
    (cost, latency): passes when ``delta_high < margin``. The bound used is
    one end of the comparison's two-sided interval at ``level``, i.e. a
    one-sided test at ``(1 - level) / 2`` (2.5% for a 95% interval, the
    conventional non-inferiority level).

    Raises:
        ValueError: negative or non-finite margin.
    """
    if not (math.isfinite(margin) and margin >= 0):
        raise ValueError(f"margin must be finite and non-negative, got {margin}")
    if higher_is_better:
        return comparison.delta_low > -margin
    return comparison.delta_high < margin


def within_noise(comparison: PairedComparison) -> bool:
    """Whether the interval for delta contains 0 (the difference is within noise)."""
    return comparison.delta_low <= 0.0 <= comparison.delta_high
