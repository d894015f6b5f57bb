"""Sizing the position experiment from a pilot: planned at an upper bound of the pilot's discordance.

The stated size's true power is computed exactly over every pilot outcome (the pilot's discordant count is
binomial), not sampled: the share of pilots whose stated size has exact McNemar power >= 0.8 at the true
discordance. Planned at the pilot's own psi about half fall short (0.54-0.57 adequate at psi 0.15-0.3 with a
50-question pilot and a 10-point target); at the upper one-sided 80% Wilson bound 0.78-0.82 are adequate.
"""

from __future__ import annotations

import functools

import pandas as pd
import pytest
from scipy.stats import binom

from evalkit.answers.position.powered import HEAD, MAIN_ARM, MID, powered_size
from evalkit.answers.position.settings import PositionSettings
from evalkit.scoring.stats.noninferiority import planning_discordance
from evalkit.scoring.stats.power import mcnemar_power, questions_for_paired_binary

PILOT, TARGET = 50, 0.10


@functools.cache
def _stated(discordant: int, upper: bool) -> int | None:
    psi = planning_discordance(discordant, PILOT) if upper else discordant / PILOT
    return questions_for_paired_binary(TARGET, psi, max_n=5000) if psi > 0 else None


def _adequate_share(true_psi: float, upper: bool) -> float:
    """Of the pilots that state a size, the probability-weighted share whose size has power >= 0.8."""
    stated = adequate = 0.0
    for k in range(PILOT + 1):
        n = _stated(k, upper)
        if n is None:
            continue
        weight = float(binom.pmf(k, PILOT, true_psi))
        stated += weight
        adequate += weight * (mcnemar_power(n, true_psi, TARGET) >= 0.8)
    return adequate / stated


@pytest.mark.parametrize("true_psi", [0.15, 0.20, 0.30])
def test_the_stated_size_has_80_percent_power_in_most_pilots(true_psi: float) -> None:
    at_bound, at_estimate = _adequate_share(true_psi, upper=True), _adequate_share(true_psi, upper=False)
    assert at_bound >= 0.75, f"psi {true_psi}: only {at_bound:.2f} of pilots state a size with 80% power"
    assert at_estimate < 0.6, "the point estimate under-sizes about half the pilots (the issue's finding)"


def test_powered_size_plans_at_the_upper_wilson_bound() -> None:
    rows = []
    for q in range(PILOT):  # 10 of 50 questions discordant: psi 0.2, planned above it
        discordant = q < 10
        rows += [
            {"question_id": f"q{q}", "arm": MAIN_ARM, "placement": HEAD, "correct": True},
            {"question_id": f"q{q}", "arm": MAIN_ARM, "placement": MID, "correct": not discordant},
        ]
    settings = PositionSettings(pilot_questions=PILOT, target_mde=TARGET)
    size = powered_size(settings, 5000, pd.DataFrame(rows), PILOT)
    assert size.discordance == pytest.approx(0.2)
    assert size.planning == pytest.approx(planning_discordance(10, PILOT)) and size.planning > 0.2
    assert size.needed == questions_for_paired_binary(TARGET, size.planning, max_n=5000)
    assert size.needed > questions_for_paired_binary(TARGET, 0.2, max_n=5000)
