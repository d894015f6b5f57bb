"""Exact power and minimum detectable effects for paired comparisons: McNemar and the paired t test (pure).

Two outcomes per question, as the question is the unit:

- **Paired binary** (hit or miss under two configs or two placements): the
  exact McNemar test, a binomial test on the discordant questions. Its power is
  computed exactly, as a mixture over the number of discordant questions, never
  from a normal approximation (Connor's formula overstates what small sets can
  detect and is not capped at the discordance). When even the largest possible
  effect (every discordant question going the candidate's way) is detected with
  less than the wanted power, the minimum detectable effect is ``None``: not
  detectable at this size.
- **Paired continuous** (per-question differences, e.g. the log-likelihood of
  the gold answer or a per-question share): the two-sided one-sample t test on
  the differences, its power from the noncentral t distribution.

Notation: ``n`` questions; ``psi`` (``discordance``) the share of questions
where exactly one side is correct; ``delta`` (``effect``) the candidate's
accuracy minus the baseline's, so ``|delta| <= psi``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.stats import binom, nct
from scipy.stats import t as student_t

from evalkit.scoring.stats.inputs import FloatArray

__all__ = [
    "mcnemar_exact_p",
    "mcnemar_power",
    "paired_binary_mde",
    "paired_mean_mde",
    "paired_mean_power",
    "questions_for_paired_binary",
    "questions_for_paired_mean",
    "share_mde",
    "stay_horizon",
    "two_sample_mean_mde",
    "two_sample_mean_power",
]

EFFECT_TOLERANCE = 1e-6
"""Bisection stops when the bracket of a detectable effect is this narrow; the upper end is returned."""
SCAN_LIMIT = 4096
"""Sizes up to this many questions are scanned one by one when planning; beyond it, bisection first."""
TAIL_MASS = 1e-13
"""Binomial mass left out on each side when summing the power over the discordant count (planning scans)."""


def _check_alpha_power(alpha: float, power: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha}")
    if not 0.0 < power < 1.0:
        raise ValueError(f"power must lie strictly between 0 and 1, got {power}")


def _check_discordance(discordance: float) -> None:
    if not (math.isfinite(discordance) and 0.0 <= discordance <= 1.0):
        raise ValueError(f"discordance must lie in [0, 1], got {discordance}")


# Paired binary: exact McNemar -----------------------------------------------------


def mcnemar_exact_p(wins: int, losses: int) -> float:
    """Two-sided exact McNemar p-value from the discordant questions.

    With ``D = wins + losses`` discordant questions and ``k = min(wins, losses)``:
    ``p = min(1, 2 * P(X <= k))`` for ``X ~ Binomial(D, 1/2)``; 1.0 when ``D = 0``.
    For p = 1/2 this equals ``scipy.stats.binomtest(wins, D).pvalue``.

    Raises:
        ValueError: a negative count.
    """
    if wins < 0 or losses < 0:
        raise ValueError(f"wins and losses must be non-negative, got {wins} and {losses}")
    discordant = wins + losses
    if discordant == 0:
        return 1.0
    return float(min(1.0, 2.0 * binom.cdf(min(wins, losses), discordant, 0.5)))


def _critical_counts(max_discordant: int, alpha: float) -> np.ndarray:
    """For D = 0..max_discordant, the largest k with ``2 P(X <= k) <= alpha`` (X ~ Bin(D, 1/2)); -1 when none.

    The test rejects at D discordant questions exactly when ``min(wins, losses) <= c[D]``; the
    same ``binom.cdf`` as ``mcnemar_exact_p`` decides, so the region is that p-value's, not an
    approximation of it.
    """
    d = np.arange(max_discordant + 1)
    guess = np.nan_to_num(binom.ppf(alpha / 2.0, d, 0.5), nan=0.0).astype(np.int64)
    best = np.full(d.size, -1, dtype=np.int64)
    for k in (guess - 2, guess - 1, guess, guess + 1):
        ok = (k >= 0) & (2.0 * binom.cdf(k, d, 0.5) <= alpha)
        best = np.where(ok, np.maximum(best, k), best)
    return best


def _rejection_given_discordant(max_discordant: int, win_share: float, alpha: float) -> FloatArray:
    """P(reject | D) for D = 0..max_discordant when each discordant question is a win with ``win_share``.

    The region ``{W <= c} u {W >= D - c}`` is two-sided and symmetric; ``c < D/2`` always (at
    ``k = floor(D/2)`` the p-value is 1), so the two tails never overlap.
    """
    d = np.arange(max_discordant + 1)
    c = _critical_counts(max_discordant, alpha)
    low = np.where(c >= 0, binom.cdf(c, d, win_share), 0.0)
    high = np.where(c >= 0, binom.sf(d - c - 1, d, win_share), 0.0)
    return low + high


def _win_share(discordance: float, effect: float) -> float:
    # P(win | discordant) = p10 / psi with p10 = (psi + delta) / 2; clipped against rounding at |delta| = psi.
    return min(1.0, max(0.0, (discordance + effect) / (2.0 * discordance)))


def _mixture_power(n: int, discordance: float, rejection: FloatArray, window: bool) -> float:
    """Sum over D ~ Binomial(n, psi) of P(D) * P(reject | D); ``window`` drops D outside 1e-13 tails."""
    if window:
        lo = int(binom.ppf(TAIL_MASS, n, discordance))
        hi = int(binom.isf(TAIL_MASS, n, discordance))
        lo, hi = max(0, lo - 1), min(n, hi + 1)
    else:
        lo, hi = 0, n
    d = np.arange(lo, hi + 1)
    return float(min(1.0, np.dot(binom.pmf(d, n, discordance), rejection[lo : hi + 1])))


def mcnemar_power(n: int, discordance: float, effect: float, alpha: float = 0.05) -> float:
    """Exact power of the two-sided exact McNemar test (``mcnemar_exact_p <= alpha``) on n paired questions.

    ``power = sum_D P(D) * P(reject | D)`` with ``D ~ Binomial(n, psi)`` discordant questions and,
    given D, ``wins ~ Binomial(D, (psi + delta) / (2 psi))``; the test rejects where
    ``mcnemar_exact_p(wins, D - wins) <= alpha``. Symmetric in the sign of ``delta``. At
    ``delta = 0`` this is the test's exact size (at most alpha).

    Raises:
        ValueError: n < 0, psi outside [0, 1], ``|delta| > psi``, alpha outside (0, 1).
    """
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    _check_discordance(discordance)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha}")
    if not math.isfinite(effect) or abs(effect) > discordance + 1e-12:
        raise ValueError(f"the effect must satisfy |effect| <= discordance ({discordance}), got {effect}")
    if n == 0 or discordance == 0.0:
        return 0.0
    rejection = _rejection_given_discordant(n, _win_share(discordance, abs(effect)), alpha)
    return _mixture_power(n, discordance, rejection, window=False)


def paired_binary_mde(n: int, discordance: float, alpha: float = 0.05, power: float = 0.8) -> float | None:
    """Smallest ``delta`` in (0, psi] that the exact McNemar test detects with ``power`` on n questions.

    ``None`` ("not detectable at this size") whenever the exact power at ``delta = psi`` (every
    discordant question going one way) is below ``power``: never a value above psi. Power rises
    with ``|delta|`` at each D (the two-sided region is symmetric), so bisection finds the
    smallest effect; the returned value is the bracket's upper end, whose power is >= ``power``
    (at most ``EFFECT_TOLERANCE`` above the exact root).

    Raises:
        ValueError: n < 0, psi outside [0, 1], alpha or power outside (0, 1).
    """
    _check_alpha_power(alpha, power)
    _check_discordance(discordance)
    if n < 1 or discordance == 0.0 or mcnemar_power(n, discordance, discordance, alpha) < power:
        return None
    lo, hi = 0.0, discordance
    while hi - lo > EFFECT_TOLERANCE:
        mid = (lo + hi) / 2.0
        if mcnemar_power(n, discordance, mid, alpha) >= power:
            hi = mid
        else:
            lo = mid
    return hi


def _planning_power(discordance: float, effect: float, alpha: float, max_n: int) -> Callable[[int], float]:
    """Power as a function of n for fixed psi and delta, sharing one table of P(reject | D)."""
    rejection = _rejection_given_discordant(max_n, _win_share(discordance, effect), alpha)
    return lambda n: _mixture_power(n, discordance, rejection, window=True)


def questions_for_paired_binary(
    effect: float,
    discordance: float,
    alpha: float = 0.05,
    power: float = 0.8,
    max_n: int = 100_000,
    stays: bool = True,
) -> int | None:
    """Questions needed for the exact McNemar test to detect ``effect`` with ``power``.

    Exact power is saw-toothed in n (the critical count moves in steps), so "the first n reaching
    the power" can be followed by smaller sizes that fall short again. With ``stays=True`` (the
    default, what a planner should promise) the result is the smallest n such that every size
    through ``n + stay_horizon(n)`` reaches ``power`` (the horizon is half of n, at least 50 and
    at most ``SCAN_LIMIT`` sizes; a dip resets the search past it). With ``stays=False`` it is the
    first n reaching the power. Sizes up to ``SCAN_LIMIT`` are scanned one by one; above that, the
    power is smooth in n (the discordant count's spread covers many steps of the critical count),
    so doubling and bisection narrow the range before a scan.

    ``None`` when ``|effect| > discordance`` (impossible), when ``effect`` is 0, or when max_n
    questions do not reach the power.

    Raises:
        ValueError: psi outside [0, 1], alpha or power outside (0, 1), max_n < 1.
    """
    _check_alpha_power(alpha, power)
    _check_discordance(discordance)
    if max_n < 1:
        raise ValueError(f"max_n must be at least 1, got {max_n}")
    effect = abs(effect)
    if effect == 0.0 or discordance == 0.0 or effect > discordance:
        return None
    power_at = _planning_power(discordance, effect, alpha, max_n)
    if power_at(max_n) < power:
        return None
    hi = _first_reaching(power_at, power, max_n)
    if not stays:
        return hi
    return _first_staying(power_at, power, hi, max_n)


def _first_reaching(power_at: Callable[[int], float], target: float, max_n: int) -> int:
    """Smallest n reaching ``target`` (scan to SCAN_LIMIT, then doubling and bisection, then a scan)."""
    for n in range(1, min(max_n, SCAN_LIMIT) + 1):
        if power_at(n) >= target:
            return n
    lo, hi = SCAN_LIMIT, SCAN_LIMIT
    while hi < max_n and power_at(hi) < target:
        lo, hi = hi, min(max_n, 2 * hi)
    while hi - lo > SCAN_LIMIT:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if power_at(mid) >= target else (mid, hi)
    return next(n for n in range(lo + 1, hi + 1) if power_at(n) >= target)


def stay_horizon(n: int) -> int:
    """How many sizes past n must all reach the power for n to count as "staying" (see questions_for_paired_binary)."""
    return min(max(n // 2, 50), SCAN_LIMIT)


def _first_staying(power_at: Callable[[int], float], target: float, first: int, max_n: int) -> int:
    """Smallest n >= ``first`` with power >= ``target`` at every size from n to ``n + stay_horizon(n)``.

    A dip past the first crossing comes only from the saw-tooth, whose amplitude shrinks as the
    discordant count's spread grows; scanning psi and delta in steps of 0.05 up to n = 600 found
    one dip (psi 0.95, delta 0.8: first 10, stays from 12), all within a few sizes.
    """
    candidate, n = first, first + 1
    while n <= min(max_n, candidate + stay_horizon(candidate)):
        if power_at(n) < target:
            candidate = n + 1
        n += 1
    return candidate


# Paired continuous: the one-sample t test on the differences -----------------------


def _t_power(df: int, noncentrality: float, alpha: float) -> float:
    critical = float(student_t.isf(alpha / 2.0, df))
    return float(nct.sf(critical, df, noncentrality) + nct.cdf(-critical, df, noncentrality))


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
    _check_alpha_power(alpha, power)
    if n < 2 or not (math.isfinite(sd_difference) and sd_difference > 0):
        return None
    return _smallest_effect(lambda e: paired_mean_power(n, sd_difference, e, alpha), sd_difference, power)


def two_sample_mean_mde(n_per_arm: int, sd: float, alpha: float = 0.05, power: float = 0.8) -> float | None:
    """Smallest difference of means the two-sample t test detects with ``power`` (None as paired_mean_mde)."""
    _check_alpha_power(alpha, power)
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
    _check_alpha_power(alpha, power)
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
