"""Coverage of the document-clustered paired interval, by simulation at the shared sets' cluster sizes.

Questions of one document share a document effect on the paired recall difference (candidate
better on some documents, worse on others). The gate's interval must cover the true mean
difference in at least 93% of simulated sets; the question-level bootstrap, which treats the
questions as independent, must fall short there (so this test can fail).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, logit

from evalkit.labels.read import load_labelset
from evalkit.records import Question, Span
from evalkit.scoring import stats
from evalkit.scoring.clusters import cluster_map, question_clusters
from evalkit.scoring.compare import Resampling, paired
from evalkit.scoring.stats.cluster_paired import cluster_paired_bootstrap
from tests.conftest import shared_set

WINS, LOSSES = 0.10, 0.07
"""Average shares of questions where the candidate finds the evidence and production not, and the reverse."""
SPREAD = 0.8
"""Standard deviation of the document effect on the log-odds of a win (and, opposite, of a loss)."""


def answerable_clusters(name: str) -> np.ndarray:
    """Cluster label of every answerable question of a shared set (its first evidence document)."""
    questions = [q for q in load_labelset(shared_set(name)).questions if q.answerable]
    return question_clusters(questions)["cluster"].to_numpy()


def true_difference() -> float:
    """E over documents of P(win) - P(loss): the mean paired difference the intervals estimate."""
    u = np.random.default_rng(12345).normal(size=2_000_000) * SPREAD
    return float(np.mean(expit(logit(WINS) + u) - expit(logit(LOSSES) - u)))


def simulate(codes: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Production's and the candidate's 0/1 recall on each question; a document effect shared by its questions."""
    effect = rng.normal(size=int(codes.max()) + 1)[codes] * SPREAD
    win, loss = expit(logit(WINS) + effect), expit(logit(LOSSES) - effect)
    draw = rng.random(codes.size)
    candidate = (draw < win).astype(float)
    baseline = ((draw >= win) & (draw < win + loss)).astype(float)
    return baseline, candidate


def coverage(name: str, reps: int, question_reps: int) -> tuple[float, float, float]:
    """Coverage of the clustered 95% interval (``reps`` sets) and of the question-level one (the first
    ``question_reps``: its bootstrap over every question is the slow part), and their mean width ratio."""
    labels = answerable_clusters(name)
    codes = np.unique(labels, return_inverse=True)[1]
    truth = true_difference()
    rng = np.random.default_rng(2026)
    hit_cluster = hit_question = 0
    ratios = []
    for rep in range(reps):
        base, cand = simulate(codes, rng)
        clustered = cluster_paired_bootstrap(base, cand, labels, n_resamples=999, seed=rep)
        hit_cluster += clustered.delta_low <= truth <= clustered.delta_high
        if rep < question_reps:
            flat = stats.paired_bootstrap(base, cand, n_resamples=999, seed=rep)
            hit_question += flat.delta_low <= truth <= flat.delta_high
            ratios.append((clustered.delta_high - clustered.delta_low) / (flat.delta_high - flat.delta_low))
    return hit_cluster / reps, hit_question / question_reps, float(np.mean(ratios))


def test_clustered_interval_covers_at_squad2_cluster_sizes_where_question_level_does_not() -> None:
    clustered, question, ratio = coverage("squad2-en", 500, 200)
    assert clustered >= 0.93, (clustered, question, ratio)
    assert question < 0.90, (clustered, question, ratio)
    assert ratio > 1.3


def test_clustered_interval_covers_at_cmrc2018_cluster_sizes() -> None:
    clustered, question, ratio = coverage("cmrc2018-zh", 1000, 200)
    assert clustered >= 0.93, (clustered, question, ratio)
    assert ratio > 1.0


def test_the_comparison_resamples_documents_when_given_clusters() -> None:
    rng = np.random.default_rng(1)
    codes = np.repeat(np.arange(30), 10)
    base, cand = simulate(codes, rng)
    questions = np.array([f"q{i}" for i in range(codes.size)], dtype=object)
    clusters = pd.Series([f"doc:{c}" for c in codes], index=questions)
    by_document = paired(base, cand, Resampling(n_resamples=2000, clusters=clusters), "recall", questions)
    by_question = paired(base, cand, Resampling(n_resamples=2000), "recall", questions)
    assert by_document is not None and by_question is not None
    assert by_document.test == "cluster bootstrap (30 clusters)" and by_question.test == "bootstrap"
    assert by_document.delta == pytest.approx(by_question.delta)
    # Each question its own cluster: the same point, an interval at least as wide as the question-level one.
    own = pd.Series(questions, index=questions)
    single = paired(base, cand, Resampling(n_resamples=2000, clusters=own), "recall", questions)
    assert single is not None and single.test == "cluster bootstrap (300 clusters)"
    assert single.delta_high - single.delta_low >= 0.98 * (by_question.delta_high - by_question.delta_low)


def test_clusters_by_document_question_or_tag() -> None:
    def question(qid: str, doc: str | None, role: str | None) -> Question:
        evidence = (Span(doc, 0, 4),) if doc else ()
        return Question(qid, "q?", ("a",) if doc else (), bool(doc), evidence, "any" if doc else "none",
                        {"role": role} if role else {})  # fmt: skip

    questions = [question("a", "d1", "x"), question("b", "d1", "y"), question("c", "d2", None)]
    questions.append(question("u", None, "x"))
    by_document = question_clusters(questions).set_index("question_id")["cluster"]
    assert list(by_document) == ["doc:d1", "doc:d1", "doc:d2", "question:u"]  # unanswerable: its own cluster
    assert cluster_map(question_clusters(questions, "question")) is None  # the old unit: questions
    by_role = question_clusters(questions, "role").set_index("question_id")["cluster"]
    assert list(by_role) == ["tag:x", "tag:y", "question:c", "tag:x"]
    assert cluster_map(question_clusters(questions)).to_dict() == by_document.to_dict()
