"""Resampling machinery: bootstrap means in bounded blocks, interval bounds, sign-flip p-values (pure).

Resamples are drawn in blocks of at most :data:`BLOCK_ELEMENTS` indices, so
memory stays bounded for large sets and many resamples; the random stream
does not depend on the block size (``tests/test_stats.py`` patches it).
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr, ndtri

from evalkit.scoring.stats.inputs import FloatArray

__all__ = [
    "BLOCK_ELEMENTS",
    "EXACT_MAX",
    "TIE_RTOL",
    "bca_bounds",
    "bootstrap_bounds",
    "bootstrap_p_value",
    "percentile_bounds",
    "resampled_means",
    "sign_flip_p",
]

BLOCK_ELEMENTS = 1 << 21
"""Most resampled indices (or signs) held in memory at once (16 MiB as float64)."""
EXACT_MAX = 16
"""Sign-flip tests enumerate all 2**m patterns up to this many non-zero differences."""
TIE_RTOL = 1e-9
"""Relative tolerance under which two resampled statistics count as equal."""


def resampled_means(columns: FloatArray, n_resamples: int, rng: np.random.Generator) -> FloatArray:
    """Means of ``n_resamples`` bootstrap resamples of the rows of ``columns``.

    ``columns`` has shape ``(k, n)``: k paired series over the same n
    questions; each resample draws n question indices with replacement and
    applies them to all k series. Returns shape ``(k, n_resamples)``.
    """
    k, n = columns.shape
    block = max(1, BLOCK_ELEMENTS // n)
    out = np.empty((k, n_resamples), dtype=np.float64)
    for start in range(0, n_resamples, block):
        stop = min(start + block, n_resamples)
        idx = rng.integers(0, n, size=(stop - start, n))
        out[:, start:stop] = columns[:, idx].mean(axis=2)
    return out


def percentile_bounds(boot: FloatArray, level: float) -> tuple[float, float]:
    """The ``(1-level)/2`` and ``(1+level)/2`` quantiles of the resampled statistics (linear interpolation)."""
    alpha = 1.0 - level
    low, high = np.quantile(boot, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(low), float(high)


def bca_bounds(boot: FloatArray, values: FloatArray, level: float) -> tuple[float, float]:
    """Bias-corrected and accelerated bounds for the mean (Efron 1987).

    Bias correction ``z0 = Phi^-1(share of resampled means below the
    observed mean)``, counting exact ties as one half (resampled means of
    binary data tie with the observed mean often; counting ties as "not
    below", as ``scipy.stats.bootstrap`` does, biases z0 downwards).
    Acceleration from the jackknife, which for the mean has the closed form
    ``a = sum(d**3) / (6 * sum(d**2) ** 1.5)`` with ``d = x - mean``.
    """
    theta = float(values.mean())
    tol = TIE_RTOL * max(1.0, abs(theta))
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


def bootstrap_bounds(boot: FloatArray, values: FloatArray, level: float, method: str) -> tuple[float, float]:
    """The interval ``method`` (``percentile`` or ``bca``) draws from ``boot``, the resampled means of ``values``:
    the one dispatch for a mean's interval and a paired difference's."""
    if method == "percentile":
        return percentile_bounds(boot, level)
    if method == "bca":
        return bca_bounds(boot, values, level)
    raise ValueError(f"unknown method {method!r}; use 'percentile' or 'bca'")


def bootstrap_p_value(boot_deltas: FloatArray) -> float:
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


def sign_flip_p(diffs: FloatArray, n_resamples: int, rng: np.random.Generator) -> float:
    """Two-sided sign-flip p-value for ``|sum(diffs)|`` (see paired_permutation_test)."""
    nonzero = diffs[diffs != 0.0]
    m = nonzero.size
    if m == 0:
        return 1.0
    observed = abs(float(nonzero.sum()))
    threshold = observed - TIE_RTOL * float(np.abs(nonzero).sum())
    if m <= EXACT_MAX:
        patterns = (np.arange(2**m)[:, np.newaxis] >> np.arange(m)) & 1
        signs = 1.0 - 2.0 * patterns
        return float(np.mean(np.abs(signs @ nonzero) >= threshold))
    total = float(nonzero.sum())
    n_words = -(-m // 64)
    block = max(1, BLOCK_ELEMENTS // m)
    hits = 0
    for start in range(0, n_resamples, block):
        size = min(block, n_resamples - start)
        # Whole 64-bit words keep the random stream independent of the block size.
        words = rng.integers(0, np.iinfo(np.uint64).max, size=(size, n_words), dtype=np.uint64, endpoint=True)
        flips = np.unpackbits(words.view(np.uint8), axis=1, count=m).astype(np.float64)
        flipped_sums = total - 2.0 * (flips @ nonzero)
        hits += int(np.count_nonzero(np.abs(flipped_sums) >= threshold))
    return (hits + 1.0) / (n_resamples + 1.0)
