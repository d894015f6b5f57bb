"""The answer check's powered size has the power it states when questions cluster in their documents.

By simulation at the shared sets' structures (their answerable questions grouped by first evidence document:
squad2-en ~13 per document, cmrc2018-zh ~4): each question's retrieval hit differs between the two configs
with a document effect (some documents favour one config, some the other), and the answers change mostly
where retrieval changed, so answer changes cluster as retrieval's do; the true accuracy difference is 0.
Each simulated check runs as the sweep's does: a 40-question pilot measures the discordance, the size is
planned at its upper 80% bound (:func:`evalkit.scoring.answer_check.sizing`) with the design effect measured
on the whole set's retrieval differences, then that many questions are drawn and the clustered verdict is
taken (:func:`evalkit.scoring.answer_check.paired_accuracy`). At least 77% of checks (0.8 - 0.03) must show
"not worse by more than 5 points". Planned without the design effect, squad2-en's large documents leave the
check short of its power: the test can fail.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, logit

from evalkit.scoring.answer_check import design_effect, paired_accuracy, sizing
from evalkit.scoring.evidence import SHOWN_NOT_WORSE
from tests.test_cluster_coverage import answerable_clusters

MARGIN, LEVEL, POWER = 0.05, 0.95, 0.8
HIT_CHANGE, DOC_SPREAD = 0.14, 0.8
"""Share of questions whose hit changes between the configs, and the document effect on its direction."""
FOLLOWS, NOISE = 0.85, 0.02
"""An answer changes with its retrieval 85% of the time; 2% of answers change with retrieval unchanged."""
PILOT = 40


def simulate(codes: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per question: the hit difference (candidate - production) and both configs' 0/1 answers."""
    effect = rng.normal(size=int(codes.max()) + 1)[codes] * DOC_SPREAD
    half = logit(HIT_CHANGE / 2)
    draw = rng.random(codes.size)
    up, down = expit(half + effect), expit(half - effect)
    hit = np.where(draw < up, 1.0, np.where(draw < up + down, -1.0, 0.0))
    production = (rng.random(codes.size) < 0.6).astype(float)
    follows = (hit != 0) & (rng.random(codes.size) < FOLLOWS)
    production = np.where(follows, (hit < 0).astype(float), production)  # the side that lost the gold was right
    flip = (hit == 0) & (rng.random(codes.size) < NOISE)
    candidate = np.where(follows, (hit > 0).astype(float), np.where(flip, 1 - production, production))
    return hit, production, candidate


def _rows(ids: np.ndarray, production: np.ndarray, candidate: np.ndarray) -> pd.DataFrame:
    frame = pd.DataFrame({"question_id": np.concatenate([ids, ids]), "arm": "retrieve",
                          "config_id": ["P"] * ids.size + ["C"] * ids.size,
                          "correct": np.concatenate([production, candidate]).astype(bool)})  # fmt: skip
    frame["correct"] = frame["correct"].astype("boolean")
    return frame


def power(name: str, reps: int, with_design_effect: bool) -> tuple[float, float]:
    """Share of simulated checks that show non-inferiority at the stated size, and the mean stated size."""
    labels = answerable_clusters(name)
    codes = np.unique(labels, return_inverse=True)[1]
    ids = np.array([f"q{i}" for i in range(codes.size)])
    clusters = pd.Series(labels, index=ids)
    rng = np.random.default_rng(7)
    shown, sizes = 0, []  # sizes: the stated ones
    for _ in range(reps):
        hit, production, candidate = simulate(codes, rng)
        frames = {"P": pd.DataFrame({"question_id": ids, "hit": np.zeros(ids.size)}),
                  "C": pd.DataFrame({"question_id": ids, "hit": hit})}  # fmt: skip
        effect = design_effect(frames.__getitem__, "P", ["C"], clusters) if with_design_effect else 1.0
        order = rng.permutation(codes.size)
        pilot = order[:PILOT]
        planned = sizing(_rows(ids[pilot], production[pilot], candidate[pilot]), "P", ["C"], MARGIN, LEVEL, POWER,
                         codes.size, effect, codes.size)  # fmt: skip
        n = planned["questions_needed"]
        if n is None:  # "more questions than the set has": no size is stated, so no power is claimed
            continue
        sizes.append(n)
        drawn = order[:n]  # the pilot grown to the planned size (the same seeded order)
        verdict = paired_accuracy(production[drawn], candidate[drawn], LEVEL, MARGIN, labels[drawn], seed=1)
        shown += verdict is not None and verdict["verdict"] == SHOWN_NOT_WORSE
    assert len(sizes) >= 0.9 * reps, f"the check states a size in only {len(sizes)} of {reps} simulated sets"
    return shown / len(sizes), float(np.mean(sizes))


@pytest.mark.parametrize("name", ["squad2-en", "cmrc2018-zh"])
def test_the_stated_size_has_the_stated_power_under_document_clustering(name: str) -> None:
    found, size = power(name, 300, with_design_effect=True)
    assert found >= POWER - 0.03, (found, size)


def test_without_the_design_effect_large_documents_leave_the_check_short() -> None:
    plain, size = power("squad2-en", 200, with_design_effect=False)
    assert plain < POWER - 0.03, (plain, size)
