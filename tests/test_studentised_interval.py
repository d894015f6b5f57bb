"""The interval of a continuous paired difference at small n: t and studentised bootstrap, outer bounds.

Simulated coverage at n = 10 and n = 30 on differences shaped like the position experiment's gold
log-likelihood differences (symmetric, heavy-tailed, a share of large losses, skewed): the interval covers
the true mean at least 0.93 of the time where the plain percentile bootstrap covered 0.84-0.90 at n = 10.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from evalkit.scoring.stats import bootstrap_ci, studentised_ci

Draw = Callable[[np.random.Generator, int], np.ndarray]
SHAPES: dict[str, tuple[Draw, float]] = {
    "normal": (lambda r, n: r.normal(0.3, 1.0, n), 0.3),
    "t3": (lambda r, n: r.standard_t(3, n), 0.0),
    "20% large losses": (lambda r, n: np.where(r.random(n) < 0.2, r.normal(-3, 2, n), r.normal(0, 1, n)), -0.6),
    "gamma2": (lambda r, n: r.gamma(2.0, 1.0, n) - 2.0, 0.0),
    "lognormal": (lambda r, n: np.exp(r.normal(0.0, 0.75, n)), math.exp(0.75**2 / 2)),
}
REPEATS = 1500


def _coverage(shape: str, n: int, interval: Callable[[np.ndarray, int], tuple[float, float]]) -> float:
    draw, mean = SHAPES[shape]
    rng = np.random.default_rng(2026)
    hits = 0
    for i in range(REPEATS):
        low, high = interval(draw(rng, n), i)
        hits += low <= mean <= high
    return hits / REPEATS


@pytest.mark.parametrize("n", [10, 30])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_studentised_interval_covers_at_small_n(shape: str, n: int) -> None:
    def studentised(x: np.ndarray, seed: int) -> tuple[float, float]:
        i = studentised_ci(x, 0.95, n_resamples=999, seed=seed)
        return i.low, i.high

    covered = _coverage(shape, n, studentised)
    assert covered >= 0.93, f"{shape}, n={n}: covered {covered:.3f}"


def test_the_percentile_bootstrap_it_replaces_is_too_narrow_at_n_10() -> None:
    def percentile(x: np.ndarray, seed: int) -> tuple[float, float]:
        i = bootstrap_ci(x, 0.95, n_resamples=999, seed=seed)
        return i.low, i.high

    assert _coverage("20% large losses", 10, percentile) < 0.9


def test_degenerate_and_missing_values() -> None:
    same = studentised_ci([0.5, 0.5, 0.5])
    assert (same.low, same.high, same.method) == (0.5, 0.5, "degenerate")
    kept = studentised_ci([1.0, 2.0, float("nan"), 4.0, 3.5])
    assert kept.n == 4 and kept.n_missing == 1 and kept.low < kept.mean < kept.high
    assert kept.method == "t-studentised"
    with pytest.raises(ValueError):
        studentised_ci([1.0, math.inf])
