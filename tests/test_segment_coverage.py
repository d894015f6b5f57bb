"""Segment checks by simulation, questions clustered in documents (issue 47, item 1).

Every config the run names is checked on every segment; a segment flag is a claim ("worse beyond the margin on
lang=zh"), so its false-flag rate, its interval's coverage and its power are checked here on sets whose questions
share a document effect (the candidate better on some documents, worse on others), with the segment made of whole
documents as a language is. The question-level interval, which treats a document's questions as independent,
must over-flag the same null sets (so these tests can fail).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import expit, logit

from evalkit.scoring.compare import Resampling
from evalkit.scoring.segments import SegmentMeasure, segment_flags, segment_gains

DOCS, PER_DOC = 60, 6
"""Documents per language and questions per document (squad2-en's answerable questions: about 5 per document)."""
SPREAD = 1.0
"""Standard deviation of the document effect on the log-odds of a win (and, opposite, of a loss)."""
MARGIN = 0.02
"""The default gate's recall margin (conf/gate/default.yaml: max_drop 0.02)."""
PRODUCTION, CANDIDATE = "production", "candidate"


def true_difference(wins: float, losses: float) -> float:
    """E over documents of P(win) - P(loss): the segment's mean paired difference."""
    u = np.random.default_rng(12345).normal(size=2_000_000) * SPREAD
    return float(np.mean(expit(logit(wins) + u) - expit(logit(losses) - u)))


def simulate(
    rng: np.random.Generator, zh: tuple[float, float], en: tuple[float, float] = (0.10, 0.05)
) -> tuple[pd.DataFrame, pd.DataFrame, pd.Series]:
    """Per-question 0/1 recall of production and the candidate, the lang tag, and each question's document.

    ``zh`` / ``en``: (share of questions the candidate wins, share it loses) on an average document of that language.
    """
    n_docs = 2 * DOCS
    doc = np.repeat(np.arange(n_docs), PER_DOC)
    lang = np.where(doc < DOCS, "en", "zh")
    wins = np.where(lang == "zh", zh[0], en[0])
    losses = np.where(lang == "zh", zh[1], en[1])
    effect = rng.normal(size=n_docs)[doc] * SPREAD
    win, loss = expit(logit(wins) + effect), expit(logit(losses) - effect)
    draw = rng.random(doc.size)
    candidate = (draw < win).astype(float)
    baseline = ((draw >= win) & (draw < win + loss)).astype(float)
    ids = pd.Index([f"q{i:04d}" for i in range(doc.size)], name="question_id")
    frame = pd.DataFrame({PRODUCTION: baseline, CANDIDATE: candidate}, index=ids)
    segments = pd.DataFrame({"lang": lang}, index=ids)
    return frame, segments, pd.Series([f"doc:{d}" for d in doc], index=ids)


def run(reps: int, zh: tuple[float, float], seed: int) -> dict[str, float]:
    """Over ``reps`` simulated sets: the share whose zh segment is flagged (resampling documents, questions) and the
    share whose zh interval covers the true difference (``coverage``: by document; ``question_coverage``)."""
    truth = true_difference(*zh)
    rng = np.random.default_rng(seed)
    flagged = {"document": 0, "question": 0}
    covered = {"document": 0, "question": 0}
    for rep in range(reps):
        frame, segments, clusters = simulate(rng, zh)
        measures = {"recall": SegmentMeasure(frame, True, MARGIN, "recall@k")}
        for unit, by in (("document", clusters), ("question", None)):
            gains = segment_gains(measures, segments, PRODUCTION, {CANDIDATE: ["recommended"]},
                                  Resampling(0.95, 999, rep, by))  # fmt: skip
            zh_row = next(s for s in gains if s["value"] == "zh")
            flags = segment_flags(gains)
            flagged[unit] += any("lang=zh" in f["message"] for f in flags)
            covered[unit] += zh_row["low"] <= truth <= zh_row["high"]
    return {
        "document": flagged["document"] / reps,
        "question": flagged["question"] / reps,
        "coverage": covered["document"] / reps,
        "question_coverage": covered["question"] / reps,
    }


def test_no_segment_loss_is_rarely_flagged_by_documents_and_more_often_by_questions() -> None:
    """The zh segment neither gains nor loses on average (documents differ): every flag is a false flag.

    Measured (300 sets): false flags 1.7% resampling documents, 5.0% resampling questions; coverage 96.7% by
    document, 88.7% by question.
    """
    assert abs(true_difference(0.10, 0.10)) < 1e-3
    found = run(300, zh=(0.10, 0.10), seed=7)
    assert found["document"] <= 0.05 and found["coverage"] >= 0.93, found
    assert found["question_coverage"] < 0.91 and found["question"] > found["document"], found


def test_a_segment_loss_beyond_the_margin_is_flagged_with_power() -> None:
    """The zh segment (360 questions in 60 documents) loses about 12 points against a 2-point margin.

    Measured (150 sets): flagged in 95%, coverage 96%. At a 7-point loss the same segment is flagged about half the
    time (49% of 150 sets): a segment loss smaller than that is not reliably detectable at this size.
    """
    truth = true_difference(0.04, 0.14)
    assert truth < -5 * MARGIN
    found = run(150, zh=(0.04, 0.14), seed=11)
    assert found["document"] >= 0.85 and found["coverage"] >= 0.93, found
