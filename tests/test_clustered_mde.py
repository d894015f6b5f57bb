"""The MDE the report and the decision state is the one a clustered test reaches with 80% power.

Questions from one document move together, so the clustered intervals beside the MDE are wider than
independent ones: an MDE stated at n questions would promise power the test does not have. Simulated under a
document effect at cmrc2018-zh-like cluster sizes: the clustered MDE is reached with about 80% power by the
cluster-robust test, the by-question MDE is not.
"""

from __future__ import annotations

import numpy as np
from scipy import stats as st

from evalkit.scoring.compare import detectable_effect
from evalkit.scoring.stats.cluster_paired import cluster_se


def _clustered_set(rng: np.random.Generator, sizes: np.ndarray, shift: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-question differences: a document effect (sd 0.3) plus question noise (sd 0.3), mean ``shift``."""
    labels = np.repeat(np.arange(sizes.size), sizes)
    diffs = shift + rng.normal(0, 0.3, sizes.size)[labels] + rng.normal(0, 0.3, labels.size)
    return diffs, labels


def _power(shift: float, sizes: np.ndarray, sims: int = 400) -> float:
    rng = np.random.default_rng(1)
    rejected = 0
    for _ in range(sims):
        diffs, labels = _clustered_set(rng, sizes, shift)
        se, g = cluster_se(diffs, labels)
        rejected += abs(diffs.mean() / se) > st.t.ppf(0.975, g - 1)
    return rejected / sims


def test_the_clustered_mde_has_about_the_power_it_states_and_the_question_level_one_does_not() -> None:
    sizes = np.random.default_rng(0).integers(1, 9, 120)  # 120 documents of 1-8 questions, as cmrc2018-zh's
    clustered_power, question_power = [], []
    for seed in range(5):  # the MDE is planned from one set's own spread: average over sets
        diffs, labels = _clustered_set(np.random.default_rng(100 + seed), sizes, 0.0)
        zeros = np.zeros_like(diffs)
        clustered = detectable_effect(zeros, diffs, 0.95, labels.astype(object))
        by_question = detectable_effect(zeros, diffs, 0.95)
        assert clustered is not None and by_question is not None and "design effect" in clustered.how
        clustered_power.append(_power(clustered.value, sizes, 300))
        question_power.append(_power(by_question.value, sizes, 300))
    # Measured 0.67-0.80 per set (mean 0.74: the spread and the design effect are estimated from the set
    # itself); stated at n questions it would be about 0.3.
    assert 0.68 <= float(np.mean(clustered_power)) <= 0.9, clustered_power
    assert float(np.mean(question_power)) < 0.45, question_power
