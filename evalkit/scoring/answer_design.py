"""Where to spend answers (pure): a paired answer difference estimated from few answers and what retrieval knows.

Retrieval tells, for free and for every question, most of what decides whether two configs' answers differ:

- **identical contexts** (the same units in the same order, greedy decoding, the same prompt): the answers
  are the same by construction: the difference is a known 0, never asked;
- **strata by retrieval discordance**: the gold in both contexts, in production's only, in the candidate's
  only, in neither, and unanswerable questions. Answers disagree mostly where retrieval does, so a Neyman
  allocation puts the answers where the two configs can differ (:func:`neyman_inclusion`, from the pilot's
  per-stratum discordance, planned at its upper 80% bound);
- **a predictor of correctness** from retrieval features (gold in context, recall, rank, context tokens),
  cross-fitted on the answered questions (:func:`evalkit.scoring.stats.logistic.cross_fitted`) and used as
  the control variate of a prediction-powered estimate (:func:`evalkit.scoring.stats.two_phase.two_phase_mean`),
  whose weight is tuned to the data: a useless predictor costs a little width, never bias.

Questions are drawn by Poisson sampling with one seeded uniform number per question (:func:`draws`): a
question is answered when its number is below its inclusion probability, so a pilot grows into the powered
sample without re-asking anything (raising a probability keeps every earlier draw), and the estimate weights
each answer by the probability it was drawn with. Intervals are clustered by document like every other.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from evalkit.scoring.stats.logistic import cross_fitted
from evalkit.scoring.stats.noninferiority import planning_discordance
from evalkit.scoring.stats.two_phase import TwoPhaseEstimate, two_phase_mean

if TYPE_CHECKING:
    import pandas as pd

IDENTICAL, UNANSWERABLE = "identical context", "unanswerable"
BOTH, PRODUCTION_ONLY, CANDIDATE_ONLY, NEITHER = (
    "gold in both",
    "gold in production's only",
    "gold in the candidate's only",
    "gold in neither",
)
STRATA = (IDENTICAL, UNANSWERABLE, BOTH, PRODUCTION_ONLY, CANDIDATE_ONLY, NEITHER)
FEATURES = ("hit", "recall", "mrr", "log_context_tokens", "answerable")
"""Per (config, question) retrieval features the correctness predictor reads."""


@dataclass(frozen=True)
class PairDesign:
    """One candidate against production over the whole set: each question's stratum and retrieval features."""

    question_ids: np.ndarray
    clusters: np.ndarray
    strata: np.ndarray
    production: np.ndarray
    """Features of production's context per question (rows x :data:`FEATURES`)."""
    candidate: np.ndarray


def pair_strata(hit_production: np.ndarray, hit_candidate: np.ndarray, answerable: np.ndarray,
                identical: np.ndarray) -> np.ndarray:  # fmt: skip
    """Each question's stratum (:data:`STRATA`) for one pair."""
    p, c = np.asarray(hit_production) > 0, np.asarray(hit_candidate) > 0
    out = np.where(p & c, BOTH, np.where(p, PRODUCTION_ONLY, np.where(c, CANDIDATE_ONLY, NEITHER))).astype(object)
    out[~np.asarray(answerable, dtype=bool)] = UNANSWERABLE
    out[np.asarray(identical, dtype=bool)] = IDENTICAL
    return out


def draws(question_ids: Sequence[str], seed: int) -> np.ndarray:
    """One uniform number in [0, 1) per question, the same on every call and machine (a hash of seed and id)."""
    out = np.empty(len(question_ids))
    for i, qid in enumerate(question_ids):
        digest = hashlib.sha256(f"answer-design:{seed}:{qid}".encode()).digest()
        out[i] = int.from_bytes(digest[:8], "big") / 2**64
    return out


def pilot_inclusion(strata: np.ndarray, pilot: int) -> np.ndarray:
    """The pilot's inclusion: ``pilot`` questions' worth spread evenly over every non-identical question."""
    askable = strata != IDENTICAL
    share = min(1.0, pilot / max(1, int(askable.sum())))
    return np.where(askable, share, 0.0)


def stratum_variances(strata: np.ndarray, differences: np.ndarray, measured: np.ndarray) -> dict[str, float]:
    """Planning variance of the paired difference per stratum: the upper 80% bound of its discordance share
    (a difference in {-1, 0, 1} has variance at most that share); strata the pilot did not reach plan at the
    pilot's overall bound. The identical stratum has none."""
    answered = measured & (strata != IDENTICAL)
    overall = planning_discordance(int(np.sum(differences[answered] != 0)), max(1, int(answered.sum())))
    out = {IDENTICAL: 0.0}
    for stratum in STRATA[1:]:
        inside = answered & (strata == stratum)
        k = int(inside.sum())
        out[stratum] = planning_discordance(int(np.sum(differences[inside] != 0)), k) if k >= 5 else overall
    return out


def neyman_inclusion(strata: np.ndarray, variances: Mapping[str, float], n: float) -> np.ndarray:
    """Inclusion probabilities for ``n`` expected answers, proportional to each stratum's standard deviation
    (Neyman), capped at 1 (the excess re-spread over the rest), 0 for identical contexts."""
    sd = np.array([math.sqrt(max(variances.get(s, 0.0), 0.0)) for s in strata])
    pi = np.zeros(len(strata))
    free = sd > 0
    budget = float(n)
    for _ in range(len(STRATA) + 1):  # re-spread what a capped stratum cannot take
        total = float(sd[free].sum())
        if total <= 0 or budget <= 0:
            break
        pi[free] = budget * sd[free] / total
        over = free & (pi >= 1.0)
        if not over.any():
            break
        pi[over] = 1.0
        budget -= float(over.sum())
        free &= ~over
    return np.clip(pi, 0.0, 1.0)


def planned_answers(strata: np.ndarray, variances: Mapping[str, float], target_variance: float) -> float | None:
    """Expected answers for the estimate's variance to reach ``target_variance`` under Neyman allocation:
    ``n = (sum N_s s_s)**2 / (N**2 V + sum N_s s_s**2)`` (Poisson sampling); None when even a census does not."""
    sizes = {s: int(np.sum(strata == s)) for s in STRATA}
    sd = {s: math.sqrt(max(variances.get(s, 0.0), 0.0)) for s in STRATA}
    total = len(strata)
    weighted = sum(sizes[s] * sd[s] for s in STRATA)
    if weighted == 0:
        return 0.0
    n = weighted**2 / (total**2 * target_variance + sum(sizes[s] * sd[s] ** 2 for s in STRATA))
    askable = total - sizes[IDENTICAL]
    return n if n <= askable else None


def predicted_difference(design: PairDesign, correct_production: np.ndarray, correct_candidate: np.ndarray,
                         measured: np.ndarray) -> np.ndarray:  # fmt: skip
    """Each question's predicted answer difference ``p(candidate right) - p(production right)``: one pooled
    correctness model over both configs' answered rows, cross-fitted by document (0 for identical contexts)."""
    x = np.vstack([design.production, design.candidate])
    y = np.concatenate([correct_production, correct_candidate])
    known = np.concatenate([measured, measured]) & np.isfinite(y)
    clusters = np.concatenate([design.clusters, design.clusters])
    fitted = cross_fitted(x, np.nan_to_num(y), known, clusters)
    n = len(design.question_ids)
    return np.where(design.strata == IDENTICAL, 0.0, fitted[n:] - fitted[:n])


def pair_effect(design: PairDesign, correct_production: np.ndarray, correct_candidate: np.ndarray,
                measured: np.ndarray, inclusion: np.ndarray, level: float,
                use_predictor: bool = True) -> TwoPhaseEstimate | None:  # fmt: skip
    """The set's mean answer difference (candidate - production) with its clustered interval.

    ``measured``: both answers known; ``inclusion``: each question's probability of having been drawn.
    Identical contexts count as measured with a difference of exactly 0 (inclusion 1).
    """
    identical = design.strata == IDENTICAL
    differences = np.where(identical, 0.0, np.nan_to_num(correct_candidate - correct_production))
    known = measured | identical
    pi = np.where(identical, 1.0, inclusion)
    prediction = (predicted_difference(design, correct_production, correct_candidate, measured & ~identical)
                  if use_predictor else np.zeros(len(differences)))  # fmt: skip
    return two_phase_mean(differences, known, pi, prediction, design.clusters, design.strata, level,
                          lam=None if use_predictor else 0.0, exact=identical)  # fmt: skip


@dataclass(frozen=True)
class AnswerPlan:
    """The inclusion probabilities that show the margin with the stated power, and what they cost."""

    inclusion: np.ndarray
    expected_answers: float | None
    """Questions answered per config in expectation (None: even every askable question would not show it)."""
    design_effect: float
    variances: Mapping[str, float]


def plan_answers(
    strata: np.ndarray,
    differences: np.ndarray,
    measured: np.ndarray,
    pilot: np.ndarray,
    margin: float,
    level: float,
    power: float,
    set_design_effect: float = 1.0,
) -> AnswerPlan:
    """From the pilot (``measured`` under inclusion ``pilot``): Neyman inclusion probabilities whose estimate
    has standard error ``margin / (z_{1 - a/2} + z_power)`` after the sample's design effect, never below the
    pilot's own (so every pilot answer stays in the sample)."""
    from scipy.stats import norm

    from evalkit.scoring.answer_check import sample_design_effect

    variances = stratum_variances(strata, differences, measured)
    z = float(norm.isf((1.0 - level) / 2.0)) + float(norm.isf(1.0 - power))
    target = (margin / z) ** 2
    askable = int(np.sum(strata != IDENTICAL))
    n, effect = planned_answers(strata, variances, target), 1.0
    for _ in range(20):  # the design effect grows with the sample: iterate to the fixed point
        if n is None:
            break
        effect = sample_design_effect(set_design_effect, math.ceil(n), askable)
        grown = planned_answers(strata, variances, target / effect)
        if grown is None or abs(grown - n) < 0.5:
            n = grown
            break
        n = grown
    if n is None:
        return AnswerPlan(np.where(strata == IDENTICAL, 0.0, 1.0), None, effect, variances)
    inclusion = np.maximum(pilot, neyman_inclusion(strata, variances, n))
    return AnswerPlan(inclusion, float(inclusion[strata != IDENTICAL].sum()), effect, variances)


def context_key(unit_ids: Sequence[str]) -> str:
    """A short key of a returned list (units in order): equal keys, identical contexts, identical prompts."""
    return hashlib.sha256("\x1f".join(unit_ids).encode()).hexdigest()[:16]


def feature_rows(frame: Mapping[str, np.ndarray]) -> np.ndarray:
    """The predictor's features (:data:`FEATURES`) from a config's per-question retrieval columns."""
    tokens = np.log1p(np.maximum(np.asarray(frame["returned_tokens"], dtype=float), 0.0))
    return np.column_stack([
        np.nan_to_num(np.asarray(frame["hit"], dtype=float)), np.nan_to_num(np.asarray(frame["recall"], dtype=float)),
        np.nan_to_num(np.asarray(frame["mrr"], dtype=float)), tokens, np.asarray(frame["answerable"], dtype=float),
    ])  # fmt: skip


def design_pair(table: pd.DataFrame, production: str, candidate: str) -> PairDesign:
    """The pair's design from ``answer_check/design.parquet`` (one row per config and question, every question
    of the set in the same order under every config)."""
    p = table[table["config_id"] == production].reset_index(drop=True)
    c = table[table["config_id"] == candidate].reset_index(drop=True)
    identical = (p["context_key"] == c["context_key"]).to_numpy()
    strata = pair_strata(p["hit"].to_numpy(), c["hit"].to_numpy(), p["answerable"].to_numpy(bool), identical)
    return PairDesign(p["question_id"].to_numpy(), p["cluster"].to_numpy(), strata, feature_rows(p), feature_rows(c))


def subset(design: PairDesign, keep: np.ndarray) -> PairDesign:
    """The design restricted to some questions (e.g. the answerable ones, where F1 is defined)."""
    return PairDesign(design.question_ids[keep], design.clusters[keep], design.strata[keep],
                      design.production[keep], design.candidate[keep])  # fmt: skip


def effect_record(estimate: TwoPhaseEstimate | None, margin: float, production: np.ndarray, candidate: np.ndarray,
                  measured: np.ndarray) -> dict[str, object] | None:  # fmt: skip
    """The check's effect record (the shape :func:`evalkit.scoring.answer_check.paired_accuracy` writes) of a
    design estimate: the set's difference with its interval and evidence state; the answered pairs' counts."""
    from evalkit.scoring.evidence import evidence_state

    if estimate is None:
        return None
    both = measured & np.isfinite(production) & np.isfinite(candidate)
    p, c = production[both], candidate[both]
    return {
        "n": int(both.sum()),
        "n_set": estimate.n_set,
        "production": float(p.mean()) if p.size else None,
        "candidate": float(c.mean()) if c.size else None,
        "delta": estimate.mean,
        "low": estimate.low,
        "high": estimate.high,
        "method": f"{estimate.method}; {estimate.clusters_measured} documents answered, prediction weight "
        f"{estimate.lam:.2f}",
        "wins": int(np.sum(c > p)),
        "losses": int(np.sum(c < p)),
        "p_value": None,
        "verdict": evidence_state(estimate.low, estimate.high, margin),
    }
