"""What the answer check shows (pure): each candidate's answers against production's on the same questions.

- **Accuracy** (``correct``: the gold stated, or a refusal on an unanswerable question): the paired
  difference with Newcombe's hybrid score interval and the exact McNemar p-value; with clusters (the
  sweep's, :mod:`evalkit.scoring.clusters`: the question's source document by default) the interval is
  widened to the cluster bootstrap's and the p-value is the larger of the two
  (:func:`evalkit.scoring.stats.cluster_intervals.cluster_difference`), as the gate's accuracy check does.
- **F1** (SQuAD token F1 on answerable questions): the mean paired difference with a t interval; with
  clusters, the cluster bootstrap's (:mod:`evalkit.scoring.stats.cluster_paired`: the expanded percentile
  bootstrap over clusters and the cluster-robust t interval with G - 1 degrees of freedom).
- **Words.** One rule for every answer measure (:mod:`evalkit.scoring.evidence`): *shown not worse*, *shown
  worse* or *not shown*, after the interval is widened to what ``n`` pairs can show at all
  (:func:`evalkit.scoring.evidence.with_floor`: 2 equal F1 scores show nothing), with the size that would
  show it (:mod:`evalkit.scoring.stats.noninferiority`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import t as student_t

from evalkit.scoring.clusters import labels_for
from evalkit.scoring.evidence import evidence_state, with_floor
from evalkit.scoring.stats import paired_difference_ci, wilson_ci
from evalkit.scoring.stats.cluster_intervals import cluster_difference, cluster_mean_ci, measured_design_effect
from evalkit.scoring.stats.cluster_paired import cluster_paired_bootstrap
from evalkit.scoring.stats.noninferiority import (
    feasible_accuracy,
    planning_discordance,
    questions_for_noninferiority,
)
from evalkit.scoring.stats.power import mcnemar_exact_p

RETRIEVE = "retrieve"


def outcome_table(rows: pd.DataFrame, column: str) -> pd.DataFrame:
    """question x config values of ``column`` on the retrieve arm (NaN where a request was not scored)."""
    mine = rows[rows["arm"] == RETRIEVE]
    values = mine.assign(_v=pd.to_numeric(mine[column].astype("Float64"), errors="coerce").astype(float))
    return values.pivot_table(index="question_id", columns="config_id", values="_v", aggfunc="first", dropna=False)


def paired_accuracy(
    base: np.ndarray, cand: np.ndarray, level: float, margin: float, clusters: np.ndarray | None = None, seed: int = 0
) -> dict[str, Any] | None:
    """The accuracy difference on the questions both answered (None when there is none); ``clusters``: one
    label per question (aligned with the values), None to treat questions as independent."""
    keep = np.isfinite(base) & np.isfinite(cand)
    if not keep.any():
        return None
    b, c = base[keep], cand[keep]
    wins, losses = int(np.sum((c == 1) & (b == 0))), int(np.sum((c == 0) & (b == 1)))
    p_value = mcnemar_exact_p(wins, losses)
    if clusters is None:
        interval = paired_difference_ci(b, c, level)
        delta, low, high, method = interval.mean, interval.low, interval.high, interval.method
    else:
        found = cluster_difference(b, c, clusters[keep], level, seed=seed)
        delta, low, high, method = found.delta, found.delta_low, found.delta_high, found.test
        p_value = max(p_value, found.p_value)
    low, high = with_floor(delta, low, high, int(b.size), level)
    return {
        "n": int(b.size),
        "production": float(b.mean()),
        "candidate": float(c.mean()),
        "delta": delta,
        "low": low,
        "high": high,
        "method": method,
        "wins": wins,
        "losses": losses,
        "p_value": p_value,
        "verdict": evidence_state(low, high, margin),
    }


def paired_f1(
    base: np.ndarray, cand: np.ndarray, level: float, margin: float, clusters: np.ndarray | None = None, seed: int = 0
) -> dict[str, Any] | None:
    """The mean F1 difference on answerable questions both answered: a paired t interval, or with ``clusters``
    (one label per question) the cluster bootstrap's (module docstring)."""
    keep = np.isfinite(base) & np.isfinite(cand)
    if not keep.any():
        return None
    diffs = cand[keep] - base[keep]
    n, delta = int(diffs.size), float(diffs.mean())
    if clusters is None or n < 2:
        sd = float(np.std(diffs, ddof=1)) if n > 1 else 0.0
        half = float(student_t.isf((1.0 - level) / 2.0, n - 1)) * sd / math.sqrt(n) if sd > 0 else 0.0
        low, high, method = delta - half, delta + half, "paired t"
    else:
        found = cluster_paired_bootstrap(base[keep], cand[keep], clusters[keep], level, seed=seed)
        low, high, method = found.delta_low, found.delta_high, found.test
    low, high = with_floor(delta, low, high, n, level)
    return {"n": n, "production": float(base[keep].mean()), "candidate": float(cand[keep].mean()), "delta": delta,
            "low": low, "high": high, "method": method, "verdict": evidence_state(low, high, margin)}  # fmt: skip


def candidate_effects(
    rows: pd.DataFrame,
    production_id: str,
    candidates: Sequence[str],
    level: float,
    accuracy_margin: float,
    f1_margin: float,
    clusters: pd.Series | None = None,
) -> dict[str, dict[str, Any]]:
    """Per candidate: its paired accuracy and F1 differences against production.

    ``clusters``: question_id -> cluster (the sweep's, :func:`evalkit.scoring.clusters.cluster_map`); whole
    clusters are resampled; None: questions.
    """
    correct, f1 = outcome_table(rows, "correct"), outcome_table(rows, "f1")
    if production_id not in correct.columns:
        return {}
    correct_units = labels_for(correct.index.to_numpy(), clusters)
    f1_units = labels_for(f1.index.to_numpy(), clusters)
    out = {}
    for config_id in candidates:
        if config_id == production_id or config_id not in correct.columns:
            continue
        out[config_id] = {
            "accuracy": paired_accuracy(
                correct[production_id].to_numpy(), correct[config_id].to_numpy(), level, accuracy_margin, correct_units
            ),
            "f1": paired_f1(f1[production_id].to_numpy(), f1[config_id].to_numpy(), level, f1_margin, f1_units),
        }
    return out


def config_summary(
    rows: pd.DataFrame, config_id: str, level: float, clusters: pd.Series | None = None
) -> dict[str, Any]:
    """One config's answers: accuracy with its Wilson interval (widened to the cluster bootstrap's with
    ``clusters``), mean F1, refusals, answered count."""
    mine = rows[(rows["arm"] == RETRIEVE) & (rows["config_id"] == config_id) & rows["correct"].notna()]
    if mine.empty:
        return {"config_id": config_id, "n": 0}
    correct = mine["correct"].astype(float).to_numpy()
    accuracy = wilson_ci(correct, level)
    labels = labels_for(mine["question_id"].to_numpy(), clusters)
    if labels is not None:
        outer = cluster_mean_ci(correct, labels, level)
        accuracy = replace(accuracy, low=min(accuracy.low, outer.low), high=max(accuracy.high, outer.high))
    f1 = pd.to_numeric(mine["f1"], errors="coerce")
    return {
        "config_id": config_id,
        "n": len(mine),
        "accuracy": accuracy.mean,
        "accuracy_low": accuracy.low,
        "accuracy_high": accuracy.high,
        "f1": float(f1.mean()) if f1.notna().any() else None,
        "refused": float(mine["refused"].astype(float).mean()),
        "mean_input_tokens": float(pd.to_numeric(mine["input_tokens"], errors="coerce").mean()),
    }


DESIGN_COLUMNS = ("hit", "recall")
"""The per-question retrieval measure whose clustering stands in for the answers' (the first one held)."""


def design_effect(
    config_frame: Callable[[str], pd.DataFrame],
    production_id: str,
    candidates: Sequence[str],
    clusters: pd.Series | None,
) -> float:
    """The design effect of a paired difference on the whole set, measured as the retrieval MDE measures it:
    the largest over the candidates of the squared ratio of the cluster-robust to the independent standard
    error of the per-question difference in ``hit`` (gold in the context: what decides whether an answer
    can change), or ``recall`` where the results hold no hit. 1.0 without clusters."""
    if clusters is None:
        return 1.0
    frame = config_frame(production_id)
    column = next((c for c in DESIGN_COLUMNS if c in frame.columns), None)
    if column is None:
        return 1.0
    base = frame.set_index("question_id")[column].astype(float)
    worst = 1.0
    for config_id in candidates:
        if config_id == production_id:
            continue
        cand = config_frame(config_id).set_index("question_id")[column].astype(float).reindex(base.index)
        labels = labels_for(base.index.to_numpy(), clusters)
        if labels is not None:
            worst = max(worst, measured_design_effect((cand - base).to_numpy(), labels))
    return worst


def sample_design_effect(set_effect: float, n: int, n_set: int) -> float:
    """The design effect of ``n`` questions drawn at random from a set of ``n_set`` whose own is ``set_effect``.

    With intra-document correlation ``rho``, ``deff = 1 + rho * (sum m_g (m_g - 1)) / N`` on the set; a random
    sample of ``n`` keeps, for each drawn question, ``(n - 1) / (N - 1)`` of its document's other questions,
    so its design effect is ``1 + (set_effect - 1) * (n - 1) / (N - 1)``: a sample spread over many documents
    is nearly independent, a census is as clustered as the set.
    """
    if n_set <= 1:
        return 1.0
    return 1.0 + max(0.0, set_effect - 1.0) * max(0, n - 1) / (n_set - 1)


def sizing(
    rows: pd.DataFrame,
    production_id: str,
    candidates: Sequence[str],
    margin: float,
    level: float,
    power: float,
    max_n: int,
    set_design_effect: float = 1.0,
    n_set: int | None = None,
) -> dict[str, Any]:
    """The size that shows every candidate non-inferior at ``margin`` with ``power`` at a true difference of 0.

    Planned at the upper one-sided 80% bound of the largest measured discordance (see
    :func:`planning_discordance`) and inflated by the sample's design effect (:func:`sample_design_effect`,
    solved for the size it applies at); None when even ``max_n`` questions do not reach it.
    """
    correct = outcome_table(rows, "correct")
    worst = (0, 0)
    for config_id in candidates:
        if config_id == production_id or config_id not in correct.columns or production_id not in correct.columns:
            continue
        pair = correct[[production_id, config_id]].dropna()
        discordant = int((pair[production_id] != pair[config_id]).sum())
        if len(pair) and (worst[1] == 0 or discordant / len(pair) > worst[0] / worst[1]):
            worst = (discordant, len(pair))
    if worst[1] == 0:
        return {"measured_discordance": None, "planning_discordance": None, "questions_needed": None}
    planned = planning_discordance(*worst)
    accuracy = float(correct[production_id].dropna().mean()) if production_id in correct.columns else 0.7
    independent = questions_for_noninferiority(planned, margin, level, power, feasible_accuracy(accuracy, planned),
                                               max_n)  # fmt: skip
    needed, effect = independent, 1.0
    if independent is not None:
        total = n_set or max_n
        for _ in range(20):  # the design effect grows with the size: iterate to the fixed point
            effect = sample_design_effect(set_design_effect, needed, total)
            grown = math.ceil(independent * effect)
            if grown == needed:
                break
            needed = grown
        needed = None if needed > max_n else needed
    return {
        "measured_discordance": worst[0] / worst[1],
        "pilot_questions": worst[1],
        "planning_discordance": planned,
        "questions_independent": independent,
        "design_effect": effect,
        "set_design_effect": set_design_effect,
        "questions_needed": needed,
        "margin": margin,
        "power": power,
    }


def effect_line(config_id: str, effect: Mapping[str, Any] | None) -> str:
    """``answer accuracy -4.0 pts [-15.2, +7.1] on 40 questions (not shown at this size)``: console, gate notes."""
    if effect is None:
        return f"{config_id}: no question answered under both"
    return (
        f"answer accuracy {100 * effect['delta']:+.1f} pts [{100 * effect['low']:+.1f}, {100 * effect['high']:+.1f}]"
        f" on {effect['n']} questions ({effect['verdict']})"
    )
