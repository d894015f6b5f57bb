"""Input handling shared by the statistics: vectors, missing values, checks, seeds (pure)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "FloatArray",
    "Seed",
    "as_vector",
    "check_alpha_power",
    "check_level",
    "check_resamples",
    "clean",
    "clean_pairs",
    "rng_from",
]

FloatArray = NDArray[np.float64]
Seed = int | np.random.Generator


def as_vector(values: ArrayLike, name: str) -> FloatArray:
    """A 1-D float copy of ``values``; rejects other shapes and infinities."""
    arr = np.array(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if np.isinf(arr).any():
        raise ValueError(f"{name} contains infinite values")
    return arr


def clean(values: ArrayLike, name: str = "values") -> tuple[FloatArray, int]:
    """Drop NaN; return the kept values and how many were dropped."""
    arr = as_vector(values, name)
    keep = ~np.isnan(arr)
    kept = arr[keep]
    n_missing = int(arr.size - kept.size)
    if kept.size == 0:
        raise ValueError(f"{name} is empty: no non-missing values ({n_missing} NaN dropped)")
    return kept, n_missing


def clean_pairs(baseline: ArrayLike, candidate: ArrayLike) -> tuple[FloatArray, FloatArray, int]:
    """Drop pairs where either side is NaN; lengths must match."""
    base = as_vector(baseline, "baseline")
    cand = as_vector(candidate, "candidate")
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


def check_alpha_power(alpha: float, power: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha}")
    if not 0.0 < power < 1.0:
        raise ValueError(f"power must lie strictly between 0 and 1, got {power}")


def check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie strictly between 0 and 1, got {level}")


def check_resamples(n_resamples: int) -> None:
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")


def rng_from(seed: Seed) -> np.random.Generator:
    """A generator from an int seed, or the caller's generator as is."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)
