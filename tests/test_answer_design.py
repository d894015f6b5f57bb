"""The stratified, prediction-powered answer difference: coverage and power by simulation, predictors of every
quality, questions clustered in their documents as the shared sets are.

Each simulated set takes a shared set's answerable questions grouped by document (squad2-en ~13 per
document, cmrc2018-zh ~4). Per question: production's hit and the candidate's (their changes follow a
document effect), a third of the pairs return identical contexts, and answers follow retrieval: a latent
ease shared by both configs plus the gold in context plus a document effect, with a little independent noise
per context. Every question's two answers are simulated, so the estimand, the set's own mean difference, is
known exactly. The check runs as the sweep does: a pilot of 60 (even spread), the plan
(:func:`plan_answers`: Neyman over the strata, the sample's design effect), the grown sample (the same seeded
draws), the estimate (:func:`pair_effect`).

- Coverage of the 95% interval >= 0.93 with a useless predictor (noise features), a realistic one (hit,
  recall, rank, tokens) and a perfect one (the answer itself as a feature).
- Power at the stated size >= 0.77 (0.8 - 0.03) when the true difference is 0.
- The realistic predictor narrows the interval; the useless one costs at most a little width.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from scipy.special import expit

from evalkit.scoring.answer_design import (
    IDENTICAL,
    PairDesign,
    draws,
    pair_effect,
    pair_strata,
    pilot_inclusion,
    plan_answers,
)
from evalkit.scoring.evidence import SHOWN_NOT_WORSE, evidence_state
from tests.test_cluster_coverage import answerable_clusters as load_clusters

MARGIN, LEVEL, POWER, PILOT = 0.05, 0.95, 0.8, 60


@functools.cache
def answerable_clusters(name: str) -> np.ndarray:
    return load_clusters(name)


def simulate(codes: np.ndarray, rng: np.random.Generator, shift: float) -> dict[str, np.ndarray]:
    """One set: hits, both configs' answers on every question, identical contexts. ``shift``: the candidate's
    gain in answer log-odds where its context differs (0: the true difference is about 0, by symmetry)."""
    n = codes.size
    doc = rng.normal(size=int(codes.max()) + 1)[codes]
    hit_p = (rng.random(n) < expit(1.0 + 0.8 * doc)).astype(float)
    change = rng.normal(size=int(codes.max()) + 1)[codes] * 0.8
    moves = rng.random(n) < 0.15  # the gold in one context only: which one follows a document effect
    gains = rng.random(n) < expit(change)
    hit_p = np.where(moves, (~gains).astype(float), hit_p)
    hit_c = np.where(moves, gains.astype(float), hit_p)
    identical = (~moves) & (rng.random(n) < 0.45)  # the same lists: a third of all pairs
    ease = rng.normal(size=n) + 0.7 * doc
    correct_p = (ease + 2.2 * hit_p - 1.2 + 0.4 * rng.normal(size=n) > 0).astype(float)
    correct_c = (ease + 2.2 * hit_c - 1.2 + shift + 0.4 * rng.normal(size=n) > 0).astype(float)
    correct_c = np.where(identical, correct_p, correct_c)
    return {"hit_p": hit_p, "hit_c": hit_c, "identical": identical, "p": correct_p, "c": correct_c,
            "ease": ease}  # fmt: skip


def features(sim: dict[str, np.ndarray], quality: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    n = sim["p"].size
    if quality == "useless":
        return rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
    if quality == "perfect":
        return sim["p"][:, None] * 4 - 2, sim["c"][:, None] * 4 - 2
    tokens = rng.normal(6.5, 0.3, size=n)
    return np.column_stack([sim["hit_p"], tokens]), np.column_stack([sim["hit_c"], tokens])


def one_check(
    name: str, quality: str, shift: float, seed: int, use_predictor: bool = True
) -> tuple[float, float, float, float, str]:
    """(truth, low, high, answers asked, state) of one simulated check."""
    labels = answerable_clusters(name)
    codes = np.unique(labels, return_inverse=True)[1]
    rng = np.random.default_rng(seed)
    sim = simulate(codes, rng, shift)
    strata = pair_strata(sim["hit_p"], sim["hit_c"], np.ones(codes.size, bool), sim["identical"])
    x_p, x_c = features(sim, quality, rng)
    ids = np.array([f"q{i}" for i in range(codes.size)])
    design = PairDesign(ids, labels, strata, x_p, x_c)
    u = draws(list(ids), seed)
    pilot = pilot_inclusion(strata, PILOT)
    measured = u < pilot
    differences = sim["c"] - sim["p"]
    plan = plan_answers(strata, differences, measured, pilot, MARGIN, LEVEL, POWER, set_design_effect=2.0)
    inclusion = plan.inclusion
    measured = u < inclusion
    found = pair_effect(design, np.where(measured, sim["p"], np.nan), np.where(measured, sim["c"], np.nan),
                        measured, inclusion, LEVEL, use_predictor)  # fmt: skip
    assert found is not None
    truth = float(np.mean(differences))
    state = evidence_state(found.low, found.high, MARGIN)
    return truth, found.low, found.high, float(measured.sum()), state


@pytest.mark.parametrize("quality", ["useless", "realistic", "perfect"])
@pytest.mark.parametrize("name", ["squad2-en", "cmrc2018-zh"])
def test_the_interval_covers_with_predictors_of_every_quality(name: str, quality: str) -> None:
    reps = 150
    covered = 0
    for seed in range(reps):
        truth, low, high, _, _ = one_check(name, quality, 0.6, seed)
        covered += low <= truth <= high
    assert covered / reps >= 0.93, covered / reps


@pytest.mark.parametrize("name", ["squad2-en", "cmrc2018-zh"])
def test_the_planned_size_has_its_power(name: str) -> None:
    reps = 150
    shown = 0
    for seed in range(reps):
        _, _, _, _, state = one_check(name, "realistic", 0.0, 1000 + seed)
        shown += state == SHOWN_NOT_WORSE
    assert shown / reps >= POWER - 0.03, shown / reps


def test_a_useless_predictor_costs_little_width_and_a_realistic_one_saves_some() -> None:
    reps = 80
    width = {}
    for label, quality, use in (("none", "useless", False), ("useless", "useless", True), ("real", "realistic", True)):
        found = [one_check("squad2-en", quality, 0.6, 500 + s, use) for s in range(reps)]
        width[label] = float(np.mean([high - low for _, low, high, _, _ in found]))
    assert width["useless"] <= 1.05 * width["none"], width
    assert width["real"] < 0.95 * width["none"], width


def test_identical_contexts_are_never_asked_and_count_as_agreeing() -> None:
    labels = answerable_clusters("cmrc2018-zh")
    codes = np.unique(labels, return_inverse=True)[1]
    sim = simulate(codes, np.random.default_rng(3), 0.0)
    strata = pair_strata(sim["hit_p"], sim["hit_c"], np.ones(codes.size, bool), sim["identical"])
    pilot = pilot_inclusion(strata, PILOT)
    assert (pilot[strata == IDENTICAL] == 0).all()
    plan = plan_answers(strata, sim["c"] - sim["p"], draws([str(i) for i in range(codes.size)], 0) < pilot, pilot,
                        MARGIN, LEVEL, POWER)  # fmt: skip
    assert (plan.inclusion[strata == IDENTICAL] == 0).all()
