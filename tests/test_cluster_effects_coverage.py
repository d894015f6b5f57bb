"""Coverage of the answer check's F1 interval and the position experiment's effects when documents cluster.

By simulation at the shared sets' cluster sizes (their answerable questions grouped by first evidence
document): a document effect shared by its questions moves the paired difference (answer F1, a placement's
accuracy, the gold answer's log-likelihood). Clustered by document, each 95% interval must cover the true
mean difference in at least 93% of simulated sets; the question-level version of the same interval (the
same function without clusters) must fall short on squad2-en's large documents, so these tests can fail.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from evalkit.answers.position.powered import MAIN_ARM, describe_size, powered_size
from evalkit.answers.position.settings import PositionSettings
from evalkit.scoring import stats
from evalkit.scoring.answer_check import paired_f1
from evalkit.scoring.position_effects import HEAD, MID, paired_effect
from evalkit.scoring.stats.cluster_intervals import cluster_difference
from evalkit.scoring.stats.cluster_paired import cluster_paired_bootstrap
from tests.test_cluster_coverage import answerable_clusters, simulate, true_difference

F1_SHIFT, F1_DOC_SPREAD, F1_QUESTION_SPREAD = 0.3, 0.8, 1.5
"""Log-odds of the candidate's answer F1 over production's: mean shift, document spread, question spread."""
LOGLIK_SHIFT, LOGLIK_DOC_SPREAD, LOGLIK_QUESTION_SPREAD = 0.3, 0.6, 1.0
"""The gold answer's log-likelihood, head minus mid (nats): mean, document spread, question spread."""
RESAMPLES = 999
POSITION_QUESTIONS = 300
"""Answerable questions of a simulated position experiment (its answers are a model's calls: a few hundred)."""


def codes_of(labels: np.ndarray) -> np.ndarray:
    return np.unique(labels, return_inverse=True)[1]


def simulate_f1(codes: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Production's and the candidate's answer F1 per question (in [0, 1]), a document effect on the change."""
    ability = rng.normal(0.5, 1.2, size=codes.size)
    doc = rng.normal(size=int(codes.max()) + 1)[codes] * F1_DOC_SPREAD
    change = F1_SHIFT + doc + rng.normal(size=codes.size) * F1_QUESTION_SPREAD
    return expit(ability), expit(ability + change)


def true_f1_difference() -> float:
    """E[candidate F1 - production F1] under :func:`simulate_f1` (Monte Carlo, 2 million questions)."""
    rng = np.random.default_rng(999)
    n = 2_000_000
    ability = rng.normal(0.5, 1.2, size=n)
    change = F1_SHIFT + rng.normal(size=n) * F1_DOC_SPREAD + rng.normal(size=n) * F1_QUESTION_SPREAD
    return float(np.mean(expit(ability + change) - expit(ability)))


def f1_coverage(name: str, reps: int) -> tuple[float, float]:
    """Coverage of the answer check's F1 interval clustered by document, and without clusters (paired t)."""
    labels = answerable_clusters(name)
    codes = codes_of(labels)
    truth = true_f1_difference()
    rng = np.random.default_rng(37)
    clustered = flat = 0
    for rep in range(reps):
        base, cand = simulate_f1(codes, rng)
        by_document = paired_f1(base, cand, 0.95, 0.05, labels, seed=rep)
        by_question = paired_f1(base, cand, 0.95, 0.05)
        assert by_document is not None and by_question is not None
        assert by_document["method"].startswith("cluster bootstrap") and by_question["method"] == "paired t"
        clustered += by_document["low"] <= truth <= by_document["high"]
        flat += by_question["low"] <= truth <= by_question["high"]
    return clustered / reps, flat / reps


def simulate_position(codes: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Per question: correct with the gold at mid and at head (0/1, a document effect on which wins), and the
    gold answer's log-likelihood at mid and at head (a document effect on the difference)."""
    mid, head = simulate(codes, rng)
    doc = rng.normal(size=int(codes.max()) + 1)[codes] * LOGLIK_DOC_SPREAD
    loglik_mid = rng.normal(-3.0, 1.0, size=codes.size)
    loglik_head = loglik_mid + LOGLIK_SHIFT + doc + rng.normal(size=codes.size) * LOGLIK_QUESTION_SPREAD
    return mid, head, loglik_mid, loglik_head


def position_rows(codes: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
    """position/rows as :func:`paired_effect` reads them: one answer per question at head and one at mid."""
    mid, head, loglik_mid, loglik_head = simulate_position(codes, rng)
    ids = [f"q{i}" for i in range(codes.size)]
    return pd.DataFrame(
        {
            "question_id": ids * 2,
            "placement": [HEAD] * codes.size + [MID] * codes.size,
            "correct": np.concatenate([head, mid]),
            "gold_loglik": np.concatenate([loglik_head, loglik_mid]),
        }
    )


def experiment_clusters(name: str, size: int = POSITION_QUESTIONS) -> np.ndarray:
    """The set's first whole documents holding at least ``size`` answerable questions (a position experiment's
    size), each question labelled with its document: the set's own cluster sizes, at the experiment's scale."""
    labels = answerable_clusters(name)
    order = list(dict.fromkeys(labels))
    counts = pd.Series(labels).value_counts()
    kept = order[: int(np.searchsorted(np.cumsum([counts[d] for d in order]), size)) + 1]
    return labels[np.isin(labels, kept)]


def effect_intervals(
    mid: np.ndarray, head: np.ndarray, loglik: np.ndarray, labels: np.ndarray | None, seed: int
) -> tuple[tuple[float, float], tuple[float, float]]:
    """The accuracy and log-likelihood intervals :func:`paired_effect` states (head against mid), clustered by
    ``labels`` or, with None, by question (its two paths; ``test_paired_effect_states_these_intervals``)."""
    if labels is None:
        accuracy = stats.paired_difference_ci(mid, head, 0.95, seed, RESAMPLES)
        flat = stats.studentised_ci(loglik, 0.95, n_resamples=RESAMPLES, seed=seed)  # t and bootstrap-t, by question
        return (accuracy.low, accuracy.high), (flat.low, flat.high)
    both = cluster_difference(mid, head, labels, 0.95, RESAMPLES, seed)
    found = cluster_paired_bootstrap(np.zeros_like(loglik), loglik, labels, 0.95, RESAMPLES, seed)
    return (both.delta_low, both.delta_high), (found.delta_low, found.delta_high)


def position_coverage(name: str, reps: int) -> dict[str, float]:
    """Coverage of the head-against-mid accuracy and log-likelihood intervals over ``reps`` simulated experiments
    at :func:`experiment_clusters`, clustered by document and by question."""
    labels = experiment_clusters(name)
    codes = codes_of(labels)
    truth = true_difference()
    rng = np.random.default_rng(2027)
    hits = dict.fromkeys(("accuracy", "loglik", "accuracy_flat", "loglik_flat"), 0)
    for rep in range(reps):
        mid, head, loglik_mid, loglik_head = simulate_position(codes, rng)
        for suffix, unit in (("", labels), ("_flat", None)):
            accuracy, loglik = effect_intervals(mid, head, loglik_head - loglik_mid, unit, rep)
            hits["accuracy" + suffix] += accuracy[0] <= truth <= accuracy[1]
            hits["loglik" + suffix] += loglik[0] <= LOGLIK_SHIFT <= loglik[1]
    return {k: v / reps for k, v in hits.items()}


def test_the_clustered_answer_f1_interval_covers_at_squad2_cluster_sizes_where_the_paired_t_does_not() -> None:
    clustered, flat = f1_coverage("squad2-en", 500)
    assert clustered >= 0.93, (clustered, flat)
    assert flat < 0.90, (clustered, flat)


def test_the_clustered_answer_f1_interval_covers_at_cmrc2018_cluster_sizes() -> None:
    clustered, flat = f1_coverage("cmrc2018-zh", 500)
    assert clustered >= 0.93, (clustered, flat)


def test_the_clustered_position_effects_cover_at_squad2_cluster_sizes_where_question_level_ones_do_not() -> None:
    found = position_coverage("squad2-en", 1000)
    assert found["accuracy"] >= 0.93 and found["loglik"] >= 0.93, found
    assert found["accuracy_flat"] < 0.90 and found["loglik_flat"] < 0.90, found


def test_the_clustered_position_effects_cover_at_cmrc2018_cluster_sizes() -> None:
    found = position_coverage("cmrc2018-zh", 1000)
    assert found["accuracy"] >= 0.93 and found["loglik"] >= 0.93, found


@pytest.mark.parametrize("by_document", [True, False])
def test_paired_effect_states_these_intervals(by_document: bool) -> None:
    """The position experiment's effect (:func:`paired_effect` on position/rows) states the intervals the
    coverage above measured, on either path."""
    labels = experiment_clusters("squad2-en")
    codes = codes_of(labels)
    by_id = pd.Series(labels, index=[f"q{i}" for i in range(codes.size)])
    rows = position_rows(codes, np.random.default_rng(11))
    effect = paired_effect(rows, HEAD, MID, RESAMPLES, 3, by_id if by_document else None)
    assert effect is not None
    wide = rows.pivot(index="question_id", columns="placement")  # question ids sorted, as paired_effect pairs them
    mid, head = wide[("correct", MID)].to_numpy(), wide[("correct", HEAD)].to_numpy()
    loglik = (wide[("gold_loglik", HEAD)] - wide[("gold_loglik", MID)]).to_numpy()
    unit = by_id.reindex(wide.index).to_numpy(dtype=object) if by_document else None
    accuracy, likelihood = effect_intervals(mid, head, loglik, unit, 3)
    assert (effect["delta_low"], effect["delta_high"]) == pytest.approx(accuracy, abs=1e-12)
    assert (effect["loglik_low"], effect["loglik_high"]) == pytest.approx(likelihood, abs=1e-12)


def test_a_clustered_effect_states_its_design_effect_and_a_larger_mde() -> None:
    labels = experiment_clusters("squad2-en")
    codes = codes_of(labels)
    clusters = pd.Series(labels, index=[f"q{i}" for i in range(codes.size)])
    rows = position_rows(codes, np.random.default_rng(5))
    by_document = paired_effect(rows, HEAD, MID, 999, 0, clusters)
    by_question = paired_effect(rows, HEAD, MID, 999, 0)
    assert by_document is not None and by_question is not None
    assert by_question["design_effect"] == 1.0 and by_document["design_effect"] > 1.5
    assert by_document["mde"] > by_question["mde"]
    assert by_document["delta"] == pytest.approx(by_question["delta"])
    assert by_document["p_value"] >= by_document["mcnemar_p"]


def test_the_powered_size_grows_by_the_measured_design_effect() -> None:
    """The effects state their MDE at n / design effect, so ``position=powered`` sizes for the same: the
    independent size times the design effect measured on the pilot's head-vs-mid differences."""
    labels = experiment_clusters("squad2-en")
    codes = codes_of(labels)
    clusters = pd.Series(labels, index=[f"q{i}" for i in range(codes.size)])
    rows = position_rows(codes, np.random.default_rng(7)).assign(arm=MAIN_ARM)
    settings = PositionSettings(preset="powered", target_mde=0.1, pilot_questions=50)
    flat = powered_size(settings, 2910, rows, codes.size)
    by_document = powered_size(settings, 2910, rows, codes.size, clusters)
    assert flat.design_effect == 1.0 and flat.needed is not None and by_document.needed is not None
    assert by_document.design_effect > 1.5
    assert by_document.needed == math.ceil(flat.needed * by_document.design_effect)
    assert f"design effect {by_document.design_effect:.2f}" in describe_size(by_document, settings)
