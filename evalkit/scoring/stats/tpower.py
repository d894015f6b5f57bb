"""Exact power of the t tests: paired (one-sample on the differences) and two-sample (pure).

Re-exported by :mod:`evalkit.scoring.stats.power`, which holds the paired binary half; the
t half lives here only to keep modules small.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from scipy.stats import nct
from scipy.stats import t as student_t

from evalkit.scoring.stats.inputs import check_alpha_power

__all__ = [
    "paired_mean_mde",
    "paired_mean_power",
    "questions_for_paired_mean",
    "share_mde",
    "two_sample_mean_mde",
    "two_sample_mean_power",
]

EFFECT_TOLERANCE = 1e-6
"""Bisection stops when the bracket is this narrow (in units of the sd); the upper end is returned."""


# Paired continuous: the one-sample t test on the differences -----------------------


def _t_power(df: int, noncentrality: float, alpha: float) -> float:
    """Both tails of the noncentral t. The lower tail is taken as ``sf(critical, df, -lambda)`` (the same
    value by symmetry): scipy's ``cdf(-critical, df, lambda)`` returns NaN once lambda is large (about 8 and
    up, i.e. beyond ~300 questions at a typical effect), which made every MDE above that size wrong."""
    critical = float(student_t.isf(alpha / 2.0, df))
    upper = float(nct.sf(critical, df, noncentrality))
    lower = float(nct.sf(critical, df, -noncentrality))
    return (upper if math.isfinite(upper) else 1.0) + (lower if math.isfinite(lower) else 0.0)


def _check_t_inputs(n: int, sd: float, alpha: float) -> None:
    if n < 2:
        raise ValueError(f"a t test needs at least 2 questions, got {n}")
    if not (math.isfinite(sd) and sd > 0):
        raise ValueError(f"the standard deviation must be finite and positive, got {sd}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha}")


def paired_mean_power(n: int, sd_difference: float, effect: float, alpha: float = 0.05) -> float:
    """Exact power of the two-sided one-sample t test of mean difference 0 on n normal differences.

    With ``df = n - 1``, ``t* = t_{1 - alpha/2, df}`` and noncentrality ``lambda = effect sqrt(n) / sd``:
    ``power = P(T > t*) + P(T < -t*)`` for ``T ~ noncentral t(df, lambda)``.

    Raises:
        ValueError: n < 2, sd not finite and positive, alpha outside (0, 1).
    """
    _check_t_inputs(n, sd_difference, alpha)
    return _t_power(n - 1, abs(effect) * math.sqrt(n) / sd_difference, alpha)


def two_sample_mean_power(n_per_arm: int, sd: float, effect: float, alpha: float = 0.05) -> float:
    """Exact power of the two-sided two-sample t test (equal arms of n, common sd), noncentral t.

    ``df = 2n - 2``, noncentrality ``effect / (sd sqrt(2 / n))``.

    Raises:
        ValueError: n < 2, sd not finite and positive, alpha outside (0, 1).
    """
    _check_t_inputs(n_per_arm, sd, alpha)
    return _t_power(2 * n_per_arm - 2, abs(effect) / (sd * math.sqrt(2.0 / n_per_arm)), alpha)


def _smallest_effect(power_of: Callable[[float], float], scale: float, power: float) -> float:
    """Smallest effect with ``power_of(effect) >= power`` (rising in the effect), by doubling and bisection."""
    lo, hi = 0.0, scale
    while power_of(hi) < power:
        lo, hi = hi, 2.0 * hi
    while hi - lo > EFFECT_TOLERANCE * scale:
        mid = (lo + hi) / 2.0
        lo, hi = (lo, mid) if power_of(mid) >= power else (mid, hi)
    return hi


def paired_mean_mde(n: int, sd_difference: float, alpha: float = 0.05, power: float = 0.8) -> float | None:
    """Smallest mean difference the paired t test detects with ``power`` on n questions (exact, noncentral t).

    For a continuous paired outcome, e.g. the log-likelihood of the gold answer, head minus mid,
    one difference per question; ``sd_difference`` is the standard deviation of those differences.
    ``None`` for n < 2, or an sd that is not finite or not positive (there is nothing to plan
    from: an observed spread of 0 says nothing about the true one). The t quantile, not z: at
    n = 3 the normal formula is 1.91 times too small. The result is at most
    ``EFFECT_TOLERANCE * sd`` above the exact root, on the side that keeps the power.

    Raises:
        ValueError: alpha or power outside (0, 1).
    """
    check_alpha_power(alpha, power)
    if n < 2 or not (math.isfinite(sd_difference) and sd_difference > 0):
        return None
    return _smallest_effect(lambda e: paired_mean_power(n, sd_difference, e, alpha), sd_difference, power)


def two_sample_mean_mde(n_per_arm: int, sd: float, alpha: float = 0.05, power: float = 0.8) -> float | None:
    """Smallest difference of means the two-sample t test detects with ``power`` (None as paired_mean_mde)."""
    check_alpha_power(alpha, power)
    if n_per_arm < 2 or not (math.isfinite(sd) and sd > 0):
        return None
    return _smallest_effect(lambda e: two_sample_mean_power(n_per_arm, sd, e, alpha), sd, power)


def share_mde(n: int, sd: float, alpha: float = 0.05, power: float = 0.8) -> float | None:
    """MDE of a mean of per-question shares (e.g. accuracy over shuffles, head minus mid per question).

    The share is a per-question value, so the test is the paired t test on n questions and the
    MDE is ``paired_mean_mde(n, sd)`` (t quantile and noncentral t, not the normal formula).
    """
    return paired_mean_mde(n, sd, alpha=alpha, power=power)


def questions_for_paired_mean(
    effect: float,
    sd_difference: float,
    alpha: float = 0.05,
    power: float = 0.8,
    max_n: int = 100_000,
) -> int | None:
    """Smallest n >= 2 at which the paired t test detects ``effect`` with ``power``.

    The t test's power rises with n (no saw-tooth), so doubling then bisection finds it. ``None``
    when the effect is 0, the sd is not finite and positive, or max_n questions do not suffice.

    Raises:
        ValueError: alpha or power outside (0, 1).
    """
    check_alpha_power(alpha, power)
    if effect == 0 or not math.isfinite(effect) or not (math.isfinite(sd_difference) and sd_difference > 0):
        return None
    if max_n < 2 or paired_mean_power(max_n, sd_difference, effect, alpha) < power:
        return None
    lo, hi = 1, 2
    while paired_mean_power(hi, sd_difference, effect, alpha) < power:
        lo, hi = hi, min(max_n, 2 * hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if paired_mean_power(mid, sd_difference, effect, alpha) >= power else (mid, hi)
    return hi
