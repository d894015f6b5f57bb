"""Statistics over per-question metric values.

Every metric keeps one float per question (hit@5 in {0, 1}, context
precision in [0, 1], cost in dollars, ...); the functions here aggregate
those values into intervals, paired comparisons and planning figures.

Conventions shared by every function:

- Pure: inputs are never modified; results are frozen dataclasses.
- Missing values are ``NaN``. They are dropped (pairwise for paired data)
  and counted in the result's ``n_missing``; ``+-inf`` is an error.
- Randomness comes only from the ``seed`` argument: an ``int`` (the same
  seed gives the same result) or a ``numpy.random.Generator``, which is
  advanced. No global random state is touched.
- Bootstrap resamples are drawn in blocks of at most ``_BLOCK_ELEMENTS``
  indices, so memory stays bounded for large sets and many resamples.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import ndtr, ndtri

FloatArray = NDArray[np.float64]
Seed = int | np.random.Generator
CIMethod = Literal["percentile", "bca"]
PValueTest = Literal["bootstrap", "permutation"]

_BLOCK_ELEMENTS = 1 << 21
"""Most resampled indices (or signs) held in memory at once (16 MiB as float64)."""
_EXACT_MAX = 16
"""Sign-flip tests enumerate all 2**m patterns up to this many non-zero differences."""
_TIE_RTOL = 1e-9
"""Relative tolerance under which two resampled statistics count as equal."""


# --------------------------------------------------------------------------
# Result records
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Interval:
    """A confidence interval for the mean of one metric."""

    mean: float
    """Sample mean of the non-missing values."""
    low: float
    """Lower bound."""
    high: float
    """Upper bound."""
    n: int
    """Number of values used (missing values excluded)."""
    level: float
    """Two-sided confidence level, e.g. 0.95."""
    method: str = "percentile"
    """How the bounds were computed: ``percentile``, ``bca``, ``wilson`` or ``degenerate``."""
    n_missing: int = 0
    """Number of NaN values dropped before computing."""

    @property
    def half_width(self) -> float:
        """Half the interval's width (the "+-" figure a report shows)."""
        return (self.high - self.low) / 2.0


@dataclass(frozen=True)
class PairedComparison:
    """Candidate versus baseline on the same questions, one metric."""

    metric: str
    """Metric name, e.g. ``hit@5``."""
    baseline_mean: float
    """Mean of the baseline's values over the compared questions."""
    candidate_mean: float
    """Mean of the candidate's values over the compared questions."""
    delta: float
    """``candidate_mean - baseline_mean``."""
    delta_low: float
    """Lower bound of the bootstrap interval for ``delta``."""
    delta_high: float
    """Upper bound of the bootstrap interval for ``delta``."""
    p_value: float
    """Two-sided p-value for "no difference", from ``test``."""
    n: int
    """Number of question pairs compared."""
    test: str
    """Source of ``p_value``: ``bootstrap`` or ``permutation`` (paired sign flip)."""
    p_adjusted: float | None = None
    """Holm-adjusted p-value when this comparison is one of a family, else None."""
    level: float = 0.95
    """Two-sided level of ``[delta_low, delta_high]``."""
    n_missing: int = 0
    """Pairs dropped because either value was NaN."""


@dataclass(frozen=True)
class RatioInterval:
    """Interval for ``mean(candidate) / mean(baseline)`` on paired values (e.g. cost)."""

    ratio: float
    """Observed ratio of means."""
    low: float
    """Lower percentile-bootstrap bound."""
    high: float
    """Upper percentile-bootstrap bound (``inf`` if some resample had a zero baseline)."""
    n: int
    """Number of question pairs used."""
    level: float
    """Two-sided confidence level."""
    n_missing: int = 0
    """Pairs dropped because either value was NaN."""

    @property
    def percent_change(self) -> float:
        """Observed relative change in percent: ``100 * (ratio - 1)``."""
        return 100.0 * (self.ratio - 1.0)


# --------------------------------------------------------------------------
# Input handling
# --------------------------------------------------------------------------


def _as_vector(values: ArrayLike, name: str) -> FloatArray:
    """A 1-D float copy of ``values``; rejects other shapes and infinities."""
    arr = np.array(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if np.isinf(arr).any():
        raise ValueError(f"{name} contains infinite values")
    return arr


def _clean(values: ArrayLike, name: str = "values") -> tuple[FloatArray, int]:
    """Drop NaN; return the kept values and how many were dropped."""
    arr = _as_vector(values, name)
    keep = ~np.isnan(arr)
    kept = arr[keep]
    n_missing = int(arr.size - kept.size)
    if kept.size == 0:
        raise ValueError(f"{name} is empty: no non-missing values ({n_missing} NaN dropped)")
    return kept, n_missing


def _clean_pairs(baseline: ArrayLike, candidate: ArrayLike) -> tuple[FloatArray, FloatArray, int]:
    """Drop pairs where either side is NaN; lengths must match."""
    base = _as_vector(baseline, "baseline")
    cand = _as_vector(candidate, "candidate")
    if base.shape != cand.shape:
        raise ValueError(
            "baseline and candidate must hold one value per question in the same "
            f"order; got {base.size} and {cand.size} values"
        )
    keep = ~(np.isnan(base) | np.isnan(cand))
    n_missing = int(base.size - keep.sum())
    if not keep.any():
        raise ValueError(f"no complete pairs: inputs are empty or missing ({n_missing} pairs dropped)")
    return base[keep], cand[keep], n_missing


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie strictly between 0 and 1, got {level}")


def _check_resamples(n_resamples: int) -> None:
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")


def _rng(seed: Seed) -> np.random.Generator:
    """A generator from an int seed, or the caller's generator as is."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


# --------------------------------------------------------------------------
# Bootstrap machinery
# --------------------------------------------------------------------------


def _resampled_means(columns: FloatArray, n_resamples: int, rng: np.random.Generator) -> FloatArray:
    """Means of ``n_resamples`` bootstrap resamples of the rows of ``columns``.

    ``columns`` has shape ``(k, n)``: k paired series over the same n
    questions; each resample draws n question indices with replacement and
    applies them to all k series. Returns shape ``(k, n_resamples)``.
    """
    k, n = columns.shape
    block = max(1, _BLOCK_ELEMENTS // n)
    out = np.empty((k, n_resamples), dtype=np.float64)
    for start in range(0, n_resamples, block):
        stop = min(start + block, n_resamples)
        idx = rng.integers(0, n, size=(stop - start, n))
        out[:, start:stop] = columns[:, idx].mean(axis=2)
    return out


def _percentile_bounds(boot: FloatArray, level: float) -> tuple[float, float]:
    alpha = 1.0 - level
    low, high = np.quantile(boot, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(low), float(high)


def _bca_bounds(boot: FloatArray, values: FloatArray, level: float) -> tuple[float, float]:
    """Bias-corrected and accelerated bounds for the mean (Efron 1987).

    Bias correction ``z0 = Phi^-1(share of resampled means below the
    observed mean)``, counting exact ties as one half (resampled means of
    binary data tie with the observed mean often; counting ties as "not
    below", as ``scipy.stats.bootstrap`` does, biases z0 downwards).
    Acceleration from the jackknife, which for the mean has the closed form
    ``a = sum(d**3) / (6 * sum(d**2) ** 1.5)`` with ``d = x - mean``.
    """
    theta = float(values.mean())
    tol = _TIE_RTOL * max(1.0, abs(theta))
    below = np.count_nonzero(boot < theta - tol)
    ties = np.count_nonzero(np.abs(boot - theta) <= tol)
    share = (below + 0.5 * ties) / boot.size
    share = min(max(share, 0.5 / boot.size), 1.0 - 0.5 / boot.size)
    z0 = float(ndtri(share))
    dev = values - theta
    ss = float(np.sum(dev**2))
    accel = float(np.sum(dev**3)) / (6.0 * ss**1.5) if ss > 0 else 0.0
    alpha = 1.0 - level
    z = ndtri(np.array([alpha / 2.0, 1.0 - alpha / 2.0]))
    shifted = z0 + z
    denominator = 1.0 - accel * shifted
    # |accel| < 1/6 for the mean, so the denominator only vanishes under extreme bias at extreme levels;
    # past that pole the BCa level tends to 0 or 1.
    safe = np.where(denominator > 0, denominator, 1.0)
    adjusted = np.where(denominator > 0, ndtr(z0 + shifted / safe), (shifted > 0).astype(np.float64))
    low, high = np.quantile(boot, adjusted)
    return float(low), float(high)


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
    _check_level(level)
    _check_resamples(n_resamples)
    kept, n_missing = _clean(values)
    mean = float(kept.mean())
    if np.ptp(kept) == 0:
        return Interval(mean, mean, mean, kept.size, level, "degenerate", n_missing)
    boot = _resampled_means(kept[np.newaxis, :], n_resamples, _rng(seed))[0]
    if method == "percentile":
        low, high = _percentile_bounds(boot, level)
    elif method == "bca":
        low, high = _bca_bounds(boot, kept, level)
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
    _check_level(level)
    kept, n_missing = _clean(values)
    if not np.isin(kept, (0.0, 1.0)).all():
        raise ValueError("wilson_ci needs binary values (0 or 1)")
    n = kept.size
    p = float(kept.mean())
    z = float(ndtri(0.5 + level / 2.0))
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2.0 * n)) / denom
    half = z / denom * math.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n))
    low, high = max(0.0, centre - half), min(1.0, centre + half)
    return Interval(p, low, high, n, level, "wilson", n_missing)


# --------------------------------------------------------------------------
# Paired comparisons
# --------------------------------------------------------------------------


def _bootstrap_p_value(boot_deltas: FloatArray) -> float:
    """Two-sided p-value by inverting the percentile interval of the delta.

    ``p = 2 * (1 + min(#{d* <= 0}, #{d* >= 0})) / (B + 1)``, capped at 1: the
    smallest ``1 - level`` whose percentile interval excludes 0, with the
    usual +1 so that a finite number of resamples never reports p = 0.
    Resampled deltas of exactly 0 count on both sides (conservative).
    """
    b = boot_deltas.size
    at_most = np.count_nonzero(boot_deltas <= 0.0)
    at_least = np.count_nonzero(boot_deltas >= 0.0)
    return min(1.0, 2.0 * (1.0 + min(at_most, at_least)) / (b + 1.0))


def _sign_flip_p(diffs: FloatArray, n_resamples: int, rng: np.random.Generator) -> float:
    """Two-sided sign-flip p-value for ``|sum(diffs)|`` (see paired_permutation_test)."""
    nonzero = diffs[diffs != 0.0]
    m = nonzero.size
    if m == 0:
        return 1.0
    observed = abs(float(nonzero.sum()))
    threshold = observed - _TIE_RTOL * float(np.abs(nonzero).sum())
    if m <= _EXACT_MAX:
        patterns = (np.arange(2**m)[:, np.newaxis] >> np.arange(m)) & 1
        signs = 1.0 - 2.0 * patterns
        return float(np.mean(np.abs(signs @ nonzero) >= threshold))
    total = float(nonzero.sum())
    n_words = -(-m // 64)
    block = max(1, _BLOCK_ELEMENTS // m)
    hits = 0
    for start in range(0, n_resamples, block):
        size = min(block, n_resamples - start)
        # Whole 64-bit words keep the random stream independent of the block size.
        words = rng.integers(0, np.iinfo(np.uint64).max, size=(size, n_words), dtype=np.uint64, endpoint=True)
        flips = np.unpackbits(words.view(np.uint8), axis=1, count=m).astype(np.float64)
        flipped_sums = total - 2.0 * (flips @ nonzero)
        hits += int(np.count_nonzero(np.abs(flipped_sums) >= threshold))
    return (hits + 1.0) / (n_resamples + 1.0)


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
    _check_resamples(n_resamples)
    base, cand, _ = _clean_pairs(baseline, candidate)
    return _sign_flip_p(cand - base, n_resamples, _rng(seed))


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
    _check_level(level)
    _check_resamples(n_resamples)
    if test not in ("bootstrap", "permutation"):
        raise ValueError(f"unknown test {test!r}; use 'bootstrap' or 'permutation'")
    base, cand, n_missing = _clean_pairs(baseline, candidate)
    diffs = cand - base
    rng = _rng(seed)
    delta = float(diffs.mean())
    if np.ptp(diffs) == 0:
        boot = np.full(n_resamples, delta)
        low = high = delta
    else:
        boot = _resampled_means(diffs[np.newaxis, :], n_resamples, rng)[0]
        if method == "percentile":
            low, high = _percentile_bounds(boot, level)
        elif method == "bca":
            low, high = _bca_bounds(boot, diffs, level)
        else:
            raise ValueError(f"unknown method {method!r}; use 'percentile' or 'bca'")
    p_value = _bootstrap_p_value(boot) if test == "bootstrap" else _sign_flip_p(diffs, n_resamples, rng)
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
    _check_level(level)
    _check_resamples(n_resamples)
    base, cand, n_missing = _clean_pairs(baseline, candidate)
    base_mean = float(base.mean())
    if base_mean <= 0:
        raise ValueError(f"baseline mean must be positive for a ratio, got {base_mean}")
    ratio = float(cand.mean()) / base_mean
    boot = _resampled_means(np.stack([base, cand]), n_resamples, _rng(seed))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(boot[0] > 0, boot[1] / boot[0], np.inf)
    alpha = 1.0 - level
    low, high = np.quantile(ratios, [alpha / 2.0, 1.0 - alpha / 2.0])
    high = float(np.inf) if np.isnan(high) else float(high)
    return RatioInterval(ratio, float(low), high, int(base.size), level, n_missing)


# --------------------------------------------------------------------------
# Multiple comparisons
# --------------------------------------------------------------------------


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


# --------------------------------------------------------------------------
# Planning and decisions
# --------------------------------------------------------------------------


def discordance_rate(baseline: ArrayLike, candidate: ArrayLike) -> float:
    """Share of questions where two binary metrics disagree (for the paired MDE).

    Raises:
        ValueError: length mismatch, no complete pairs, non-binary values.
    """
    base, cand, _ = _clean_pairs(baseline, candidate)
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
    """Smallest true difference a two-sided level-``alpha`` test on n questions
    detects with probability ``power`` (normal approximation).

    With ``za = Phi^-1(1 - alpha/2)`` and ``zb = Phi^-1(power)``:

    - Continuous metric (``sd`` given). Paired, ``sd`` is the standard
      deviation of the per-question differences:
      ``(za + zb) * sd / sqrt(n)``. Unpaired, ``sd`` is the per-arm
      standard deviation and n the size of each arm:
      ``(za + zb) * sd * sqrt(2 / n)``.
    - Binary metric, paired (McNemar; Connor 1987). With discordant-pair
      rate ``psi`` (share of questions where exactly one config succeeds;
      ``discordance``, e.g. from ``discordance_rate`` on pilot data, else
      ``2 p (1 - p)`` with ``p = baseline_rate``, which assumes the two
      configs fail independently and so overstates psi for similar
      configs), the effect ``delta = p10 - p01`` solves
      ``sqrt(n) * delta = za * sqrt(psi) + zb * sqrt(psi - delta**2)``::

          delta = (za sqrt(psi n) + zb sqrt(psi (n + zb**2 - za**2))) / (n + zb**2)

      which is a little below the cruder ``(za + zb) * sqrt(psi / n)``.
      Returns ``inf`` when ``n * psi < za**2``: even a candidate that wins
      every discordant pair could not reach significance.
    - Binary metric, unpaired: ``(za + zb) * sqrt(2 p (1 - p) / n)``.

    Raises:
        ValueError: n < 1, alpha outside (0, 1), power outside [0.5, 1),
            neither or both of a rate and ``sd``, values out of range.
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
    za = float(ndtri(1.0 - alpha / 2.0))
    zb = float(ndtri(power))
    if sd is not None:
        if sd < 0:
            raise ValueError(f"sd must be non-negative, got {sd}")
        scale = 1.0 if paired else math.sqrt(2.0)
        return (za + zb) * sd * scale / math.sqrt(n)
    if baseline_rate is not None and not 0.0 <= baseline_rate <= 1.0:
        raise ValueError(f"baseline_rate must lie in [0, 1], got {baseline_rate}")
    if discordance is not None:
        if not paired:
            raise ValueError("discordance only applies to a paired comparison")
        if not 0.0 <= discordance <= 1.0:
            raise ValueError(f"discordance must lie in [0, 1], got {discordance}")
        return _mcnemar_mde(n, discordance, za, zb)
    if baseline_rate is None:
        raise ValueError("a binary MDE needs baseline_rate or discordance")
    independent = 2.0 * baseline_rate * (1.0 - baseline_rate)
    if paired:
        return _mcnemar_mde(n, independent, za, zb)
    return (za + zb) * math.sqrt(independent / n)


def _mcnemar_mde(n: int, psi: float, za: float, zb: float) -> float:
    """Connor's (1987) paired-binary MDE, solved in closed form; see minimum_detectable_effect."""
    if n * psi < za * za:
        return math.inf
    root = math.sqrt(psi * (n + zb * zb - za * za))
    return (za * math.sqrt(psi * n) + zb * root) / (n + zb * zb)


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
