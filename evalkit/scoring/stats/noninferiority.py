"""Sizing a paired non-inferiority check of answer accuracy (pure): how many questions show "not worse than
production by more than the margin" with a stated power when the true difference is zero.

The check's decision rule is the one the gate applies: the lower bound of Newcombe's hybrid score interval
(:func:`evalkit.scoring.stats.clustered.paired_difference_ci`, method 10) for candidate minus production lies
above ``-margin``. Its power at a true difference of 0 depends on the discordance psi (the share of questions
where exactly one of the two answers is right) and, slightly, on the accuracy. :func:`noninferiority_power`
computes it by simulating the 2x2 table of paired outcomes (seeded: the same answer every call) and applying
the vectorised interval; :func:`questions_for_noninferiority` starts from the normal approximation
``n = (z_{1-a/2} + z_power)^2 psi / margin^2`` and walks up until the simulated power reaches the target.
Sizing from a pilot plans with :func:`planning_discordance`, an upper confidence bound of the pilot's psi
(a one-sided 80% Wilson bound), so an unlucky low pilot does not under-size the check.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtri

from evalkit.scoring.stats.clustered import newcombe_bounds
from evalkit.scoring.stats.intervals import wilson_bounds

N_SIMULATIONS = 4000
"""Simulated tables per power figure: the Monte-Carlo error of a power near 0.8 is about 0.006."""
SIMULATION_MARGIN = 0.015
"""The simulated power must clear the target by this much (about two Monte-Carlo standard errors), so the
stated size has the stated power, not a coin's chance of it."""
PLANNING_LEVEL = 0.6
"""Two-sided level of the Wilson interval whose upper bound plans the size (a one-sided 80% bound)."""


def newcombe_lower(both: np.ndarray, wins: np.ndarray, losses: np.ndarray, n: int, level: float) -> np.ndarray:
    """Lower bounds of Newcombe's method-10 interval for many 2x2 tables at once (the one implementation)."""
    return newcombe_bounds(both, wins, losses, n, level)[0]


def noninferiority_power(
    n: int,
    discordance: float,
    margin: float,
    level: float = 0.95,
    accuracy: float = 0.7,
    difference: float = 0.0,
    *,
    n_simulations: int = N_SIMULATIONS,
    seed: int = 0,
) -> float:
    """Share of simulated checks of ``n`` questions whose Newcombe lower bound clears ``-margin``.

    Each question is right under both configs, under the candidate only, under production only, or under
    neither, with probabilities set by ``accuracy`` (production's), ``discordance`` and ``difference``
    (candidate minus production; 0 is the planning case).
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    wins_p = (discordance + difference) / 2.0
    losses_p = (discordance - difference) / 2.0
    both_p = accuracy - losses_p
    neither_p = 1.0 - both_p - wins_p - losses_p
    probabilities = np.array([both_p, wins_p, losses_p, neither_p])
    if (probabilities < -1e-12).any():
        raise ValueError("accuracy, discordance and difference do not make a 2x2 table of probabilities")
    rng = np.random.default_rng(seed)
    tables = rng.multinomial(n, np.clip(probabilities, 0.0, 1.0) / np.clip(probabilities, 0.0, 1.0).sum(),
                             size=n_simulations).astype(float)  # fmt: skip
    lows = newcombe_lower(tables[:, 0], tables[:, 1], tables[:, 2], n, level)
    return float(np.mean(lows > -margin))


def questions_for_noninferiority(
    discordance: float,
    margin: float,
    level: float = 0.95,
    power: float = 0.8,
    accuracy: float = 0.7,
    max_n: int = 20_000,
) -> int | None:
    """The smallest n (on a 1% grid above the normal approximation) whose simulated power reaches ``power``
    (plus :data:`SIMULATION_MARGIN`).

    None when even ``max_n`` questions do not. ``discordance`` 0 (every answer the same under both configs)
    needs only the questions that make Newcombe's interval narrower than the margin.
    """
    if not 0.0 < margin < 1.0:
        raise ValueError(f"the margin must lie in (0, 1), got {margin}")
    z = float(ndtri(0.5 + level / 2.0)) + float(ndtri(power))
    n = max(2, math.ceil(z * z * max(discordance, 1e-3) / (margin * margin)))
    while n <= max_n:
        if noninferiority_power(n, discordance, margin, level, accuracy) >= power + SIMULATION_MARGIN:
            return n
        n = max(n + 1, math.ceil(n * 1.01))
    return None


def feasible_accuracy(accuracy: float, discordance: float) -> float:
    """``accuracy`` moved into the range a 2x2 table with this discordance allows at a difference of 0
    (both right ``accuracy - d/2`` and neither right ``1 - accuracy - d/2`` non-negative)."""
    half = min(max(discordance, 0.0), 1.0) / 2.0
    return min(max(accuracy, half), 1.0 - half)


def planning_discordance(discordant: int, n: int) -> float:
    """The discordance the size is planned at: the upper one-sided 80% Wilson bound of the pilot's share."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    return wilson_bounds(discordant / n, n, PLANNING_LEVEL)[1]
