"""What the answer check shows (pure): each candidate's answers against production's on the same questions.

- **Accuracy** (``correct``: the gold stated, or a refusal on an unanswerable question): the paired
  difference with Newcombe's hybrid score interval and the exact McNemar p-value, the question as the unit.
- **F1** (SQuAD token F1 on answerable questions): the mean paired difference with a t interval.
- **Words.** "not worse beyond the margin" only when the interval's low end clears ``-margin``; "worse
  beyond the margin" when its high end is below ``-margin``; otherwise "not shown at this size", with the
  size that would show it (:mod:`evalkit.scoring.stats.noninferiority`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import t as student_t

from evalkit.scoring.stats import paired_difference_ci, wilson_ci
from evalkit.scoring.stats.noninferiority import planning_discordance, questions_for_noninferiority
from evalkit.scoring.stats.power import mcnemar_exact_p

NON_INFERIOR, WORSE, NOT_SHOWN = "not worse beyond the margin", "worse beyond the margin", "not shown at this size"
RETRIEVE = "retrieve"


def outcome_table(rows: pd.DataFrame, column: str) -> pd.DataFrame:
    """question x config values of ``column`` on the retrieve arm (NaN where a request was not scored)."""
    mine = rows[rows["arm"] == RETRIEVE]
    values = mine.assign(_v=pd.to_numeric(mine[column].astype("Float64"), errors="coerce").astype(float))
    return values.pivot_table(index="question_id", columns="config_id", values="_v", aggfunc="first", dropna=False)


def paired_accuracy(base: np.ndarray, cand: np.ndarray, level: float, margin: float) -> dict[str, Any] | None:
    """The accuracy difference on the questions both answered (None when there is none)."""
    keep = np.isfinite(base) & np.isfinite(cand)
    if not keep.any():
        return None
    b, c = base[keep], cand[keep]
    wins, losses = int(np.sum((c == 1) & (b == 0))), int(np.sum((c == 0) & (b == 1)))
    interval = paired_difference_ci(b, c, level)
    return {
        "n": int(b.size),
        "production": float(b.mean()),
        "candidate": float(c.mean()),
        "delta": interval.mean,
        "low": interval.low,
        "high": interval.high,
        "method": interval.method,
        "wins": wins,
        "losses": losses,
        "p_value": mcnemar_exact_p(wins, losses),
        "verdict": verdict(interval.low, interval.high, margin),
    }


def paired_f1(base: np.ndarray, cand: np.ndarray, level: float, margin: float) -> dict[str, Any] | None:
    """The mean F1 difference on answerable questions both answered, with a paired t interval."""
    keep = np.isfinite(base) & np.isfinite(cand)
    if keep.sum() < 2:
        return None
    diffs = cand[keep] - base[keep]
    n, delta = int(diffs.size), float(diffs.mean())
    sd = float(np.std(diffs, ddof=1))
    half = float(student_t.isf((1.0 - level) / 2.0, n - 1)) * sd / math.sqrt(n) if sd > 0 else 0.0
    low, high = max(-1.0, delta - half), min(1.0, delta + half)
    return {"n": n, "production": float(base[keep].mean()), "candidate": float(cand[keep].mean()), "delta": delta,
            "low": low, "high": high, "method": "paired t", "verdict": verdict(low, high, margin)}  # fmt: skip


def verdict(low: float, high: float, margin: float) -> str:
    """The words an interval allows against a non-inferiority margin (see the module docstring)."""
    if low > -margin:
        return NON_INFERIOR
    if high < -margin:
        return WORSE
    return NOT_SHOWN


def candidate_effects(
    rows: pd.DataFrame,
    production_id: str,
    candidates: Sequence[str],
    level: float,
    accuracy_margin: float,
    f1_margin: float,
) -> dict[str, dict[str, Any]]:
    """Per candidate: its paired accuracy and F1 differences against production."""
    correct, f1 = outcome_table(rows, "correct"), outcome_table(rows, "f1")
    if production_id not in correct.columns:
        return {}
    out = {}
    for config_id in candidates:
        if config_id == production_id or config_id not in correct.columns:
            continue
        out[config_id] = {
            "accuracy": paired_accuracy(
                correct[production_id].to_numpy(), correct[config_id].to_numpy(), level, accuracy_margin
            ),
            "f1": paired_f1(f1[production_id].to_numpy(), f1[config_id].to_numpy(), level, f1_margin),
        }
    return out


def config_summary(rows: pd.DataFrame, config_id: str, level: float) -> dict[str, Any]:
    """One config's answers: accuracy with its Wilson interval, mean F1, refusals, answered count."""
    mine = rows[(rows["arm"] == RETRIEVE) & (rows["config_id"] == config_id) & rows["correct"].notna()]
    if mine.empty:
        return {"config_id": config_id, "n": 0}
    accuracy = wilson_ci(mine["correct"].astype(float).to_numpy(), level)
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


def sizing(
    rows: pd.DataFrame,
    production_id: str,
    candidates: Sequence[str],
    margin: float,
    level: float,
    power: float,
    max_n: int,
) -> dict[str, Any]:
    """The size that shows every candidate non-inferior at ``margin`` with ``power`` at a true difference of 0.

    Planned at the upper one-sided 80% bound of the largest measured discordance (see
    :func:`planning_discordance`); None when even ``max_n`` questions do not reach it.
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
    needed = questions_for_noninferiority(planned, margin, level, power, min(max(accuracy, planned / 2), 0.99), max_n)
    return {
        "measured_discordance": worst[0] / worst[1],
        "pilot_questions": worst[1],
        "planning_discordance": planned,
        "questions_needed": needed,
        "margin": margin,
        "power": power,
    }


def effect_line(config_id: str, effect: Mapping[str, Any] | None) -> str:
    """``answer accuracy -4.0 pts [-15.2, +7.1] (not shown at this size)`` for the console and gate notes."""
    if effect is None:
        return f"{config_id}: no question answered under both"
    return (
        f"answer accuracy {100 * effect['delta']:+.1f} pts [{100 * effect['low']:+.1f}, {100 * effect['high']:+.1f}]"
        f" on {effect['n']} questions ({effect['verdict']})"
    )
