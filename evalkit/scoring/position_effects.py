"""The position experiment's findings as numbers a report can state (pure, no I/O).

- **Position effect, paired.** On each controlled arm, gold at head and at
  tail against gold at mid, on the same questions with the same shuffles of
  the other items: the exact McNemar test on the (question, shuffle) pairs
  (discordant pairs only; shuffles of one question are not independent, so
  the paired bootstrap over questions is the interval to read) and a paired
  bootstrap of the per-question accuracy difference, with the smallest effect
  the comparison could detect at its size (80% power, two-sided alpha 0.05).
- **Where the gold ended up** under each controlled placement, by block and
  by character.
- **Arms**: accuracy, prompt tokens and what did not fit, per arm.
- **Refusals** on unanswerable questions (the right answer) and on answerable
  ones (a miss); **citation correctness** of answered answerable rows.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import binomtest

from evalkit.records import DOES_NOT_FIT
from evalkit.scoring import stats
from evalkit.scoring.compare import detectable_effect

HEAD, MID, TAIL = "gold_at:head", "gold_at:mid", "gold_at:tail"
ALPHA, POWER = 0.05, 0.8


def _scored(rows: pd.DataFrame) -> pd.DataFrame:
    scored = rows[rows["correct"].notna()]
    return scored.assign(correct=scored["correct"].astype(bool).astype(float))


def _finite(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def mcnemar_exact(wins: int, losses: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pairs (binomial, p = 1/2); 1.0 with none."""
    n = wins + losses
    return 1.0 if n == 0 else float(binomtest(wins, n, 0.5, alternative="two-sided").pvalue)


def paired_effect(
    arm_rows: pd.DataFrame, candidate: str, baseline: str, n_resamples: int, seed: int
) -> dict[str, Any] | None:
    """``candidate`` placement against ``baseline`` on one arm's scored rows; None when no pair exists."""
    keyed = arm_rows.set_index(["question_id", "repeat", "placement"])["correct"]
    wide = keyed.unstack("placement")
    if candidate not in wide.columns or baseline not in wide.columns:
        return None
    pairs = wide[[baseline, candidate]].dropna()
    if pairs.empty:
        return None
    wins = int(((pairs[candidate] == 1) & (pairs[baseline] == 0)).sum())
    losses = int(((pairs[candidate] == 0) & (pairs[baseline] == 1)).sum())
    shares = pairs.groupby(level="question_id").mean()
    base, cand = shares[baseline].to_numpy(), shares[candidate].to_numpy()
    comparison = stats.paired_bootstrap(base, cand, level=1 - ALPHA, n_resamples=n_resamples, seed=seed)
    mde, how = _mde(base, cand)
    mcnemar_p = mcnemar_exact(wins, losses)
    # Both tests must agree, on at least two questions: a bootstrap over one or two questions is degenerate.
    significant = len(shares) >= 2 and mcnemar_p < ALPHA and not comparison.delta_low <= 0.0 <= comparison.delta_high
    return {
        "candidate": candidate,
        "baseline": baseline,
        "n_questions": len(shares),
        "n_pairs": len(pairs),
        "candidate_accuracy": float(cand.mean()),
        "baseline_accuracy": float(base.mean()),
        "delta": comparison.delta,
        "delta_low": comparison.delta_low,
        "delta_high": comparison.delta_high,
        "bootstrap_p": comparison.p_value,
        "mcnemar_wins": wins,
        "mcnemar_losses": losses,
        "mcnemar_p": mcnemar_p,
        "mde": _finite(mde),
        "mde_unbounded": math.isinf(mde),
        "mde_how": how,
        "within_noise": not significant,
    }


def _mde(base: np.ndarray, cand: np.ndarray) -> tuple[float, str]:
    """MDE of the comparison (inf: no effect could reach significance at this size), and how it was found.

    The observed spread when the two placements ever differ; else, and whenever that gives no positive
    value (one question, or identical answers), the planned paired McNemar MDE at the baseline accuracy.
    """
    observed = detectable_effect(base, cand, 1 - ALPHA)
    if observed is not None and observed.value > 0 and not math.isnan(observed.value) and len(base) >= 2:
        return observed.value, observed.how
    rate = min(max(float(base.mean()), 0.05), 0.95)  # a rate of 0 or 1 would claim no discordance at all
    value = stats.minimum_detectable_effect(len(base), baseline_rate=rate, alpha=ALPHA, power=POWER)
    return value, f"planned paired McNemar at baseline accuracy {rate:.0%}, {len(base)} questions"


def planned_mde(n_questions: int, accuracy: float) -> float | None:
    """MDE of a paired binary comparison of n questions, assuming independent failures at ``accuracy``."""
    if n_questions < 1 or not 0.0 <= accuracy <= 1.0 or math.isnan(accuracy):
        return None
    rate = min(max(accuracy, 0.05), 0.95)  # a rate of 0 or 1 would claim no discordance at all
    return _finite(stats.minimum_detectable_effect(n_questions, baseline_rate=rate, alpha=ALPHA, power=POWER))


def landed(rows: pd.DataFrame) -> list[dict[str, Any]]:
    """Under each controlled placement, how many contexts put the gold in each block and character bucket."""
    controlled = rows[rows["placement"].astype(str).str.startswith("gold_at:") & rows["sent"].astype(bool)]
    counts = controlled.groupby(["arm", "placement", "gold_block_bucket", "gold_bucket"], sort=True).size()
    return [
        {"arm": a, "placement": p, "block_bucket": b, "char_bucket": c, "n": int(n)}
        for (a, p, b, c), n in counts.items()
    ]


def _share(values: pd.Series) -> float | None:
    kept = values.dropna()
    return None if kept.empty else float(kept.astype(bool).mean())


def arm_table(rows: pd.DataFrame) -> list[dict[str, Any]]:
    """Per arm: accuracy (question-weighted), tokens, does-not-fit, refusals and citations."""
    out = []
    for arm, group in rows.groupby("arm", sort=False):
        sent = group[group["sent"].astype(bool)]
        scored = _scored(group)
        answerable = scored[scored["answerable"].astype(bool)]
        unanswerable = scored[~scored["answerable"].astype(bool)]
        unsent = group[group["stop_reason"] == DOES_NOT_FIT]
        shares = answerable.groupby("question_id")["correct"].mean()
        out.append(
            {
                "arm": str(arm),
                "n_rows": len(group),
                "n_answers": len(scored),
                "n_questions": int(scored["question_id"].nunique()),
                "accuracy_answerable": None if shares.empty else float(shares.mean()),
                "accuracy_all": None if scored.empty else float(scored.groupby("question_id")["correct"].mean().mean()),
                "mean_prompt_tokens": None if sent.empty else float(sent["prompt_tokens"].mean()),
                "prompt_tokens": int(sent["prompt_tokens"].sum()),
                "output_tokens": int(sent["output_tokens"].sum()),
                "n_does_not_fit": len(unsent),
                "tokens_needed_does_not_fit": None if unsent.empty else int(unsent["tokens_needed"].median()),
                "refused_unanswerable": _share(unanswerable["refused"]),
                "n_unanswerable": len(unanswerable),
                "refused_answerable": _share(answerable["refused"]),
                "citations_valid": _share(answerable.loc[~answerable["refused"].astype(bool), "citations_valid"]),
            }
        )
    return out


def _flip(group: pd.DataFrame) -> float | None:
    by_question = group.groupby("question_id")["correct"].agg(["min", "max", "size"])
    repeated = by_question[by_question["size"] > 1]
    return None if repeated.empty else float((repeated["max"] > repeated["min"]).mean())


def position_effects(rows: pd.DataFrame, n_resamples: int = 2000, seed: int = 0) -> dict[str, Any]:
    """Everything the report states about position, arms, refusals and citations, from ``position/rows``."""
    scored = _scored(rows)
    controlled = sorted(set(scored.loc[scored["placement"].astype(str).str.startswith("gold_at:"), "arm"]))
    effects: list[dict[str, Any]] = []
    flips: list[dict[str, Any]] = []
    for arm in controlled:
        arm_rows = scored[(scored["arm"] == arm) & scored["answerable"].astype(bool)]
        for candidate in (HEAD, TAIL):
            effect = paired_effect(arm_rows, candidate, MID, n_resamples, seed)
            if effect is not None:
                effects.append({"arm": arm} | effect)
        mid = arm_rows[arm_rows["placement"] == MID]
        n = int(mid["question_id"].nunique())
        accuracy = float(mid.groupby("question_id")["correct"].mean().mean()) if n else math.nan
        flips += [{"arm": arm, "placement": "planned", "mde_planned": planned_mde(n, accuracy), "n_questions": n}]
    for (arm, placement), group in scored.groupby(["arm", "placement"], sort=False):
        flips.append({"arm": str(arm), "placement": str(placement), "flip_rate": _flip(group)})
    # The experiment detects an effect when every comparison it reports could: the largest MDE is its MDE.
    mdes = [math.inf if e["mde_unbounded"] or e["mde"] is None else e["mde"] for e in effects]
    return {
        "alpha": ALPHA,
        "power": POWER,
        "effects": effects,
        "mde": _finite(max(mdes)) if mdes else None,
        "mde_unbounded": bool(mdes) and math.isinf(max(mdes)),
        "mde_note": "null with mde_unbounded: at this size no position effect, however large, could be detected",
        "planned": [f for f in flips if f["placement"] == "planned"],
        "flip_rates": [f for f in flips if f["placement"] != "planned"],
        "landed": landed(rows),
        "arms": arm_table(rows),
        "n_questions": int(rows["question_id"].nunique()),
        "n_answerable": int(rows.loc[rows["answerable"].astype(bool), "question_id"].nunique()),
        "n_answers": len(scored),
    }
