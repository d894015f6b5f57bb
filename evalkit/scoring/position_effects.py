"""The position experiment's findings as numbers a report can state (pure, no I/O).

- **Position effect, paired, the question as the unit.** On each controlled
  arm, gold at head and at tail against gold at mid, on the same questions with
  the same other chunks. Shuffles are collapsed within a question first (its
  share of correct answers per placement), so a question counts once however
  often it was asked. A question is a win when its candidate share beats its
  baseline share, a loss when the reverse: the exact McNemar (sign) test on the
  questions (:func:`evalkit.scoring.stats.mcnemar_exact_p`), the paired
  difference with :func:`evalkit.scoring.stats.paired_difference_ci` (Newcombe
  for 0/1, a question bootstrap for shares; never of width zero), and the
  smallest effect the exact McNemar test detects at 80% power at this size and
  the measured discordance (:func:`evalkit.scoring.stats.paired_binary_mde`):
  ``None`` with ``mde_status`` "not detectable at this size" whenever exact
  power at delta = psi is below 0.8 (no finite MDE above the discordance).
- **Clusters.** With ``clusters`` (question_id -> cluster, the sweep's: the question's
  source document by default, :mod:`evalkit.scoring.clusters`) the interval is widened
  to the cluster bootstrap's (:func:`evalkit.scoring.stats.cluster_intervals.cluster_difference`,
  the gate's small-cluster method), the p-value is the larger of McNemar's and the
  cluster bootstrap's, and the MDE is computed at ``n / design effect`` questions (the
  design effect measured on the paired differences, ``design_effect``).
- **The gold answer's log-likelihood**, where the generator scores it: the
  paired per-question difference (candidate - baseline, natural log), its
  interval (:func:`evalkit.scoring.stats.cluster_paired.cluster_paired_bootstrap`: the
  expanded percentile bootstrap and the cluster-robust t interval with G - 1 degrees of
  freedom, over the clusters, else over questions: then the plain paired t interval
  widened to the bootstrap's), and the t-based MDE (:func:`evalkit.scoring.stats.paired_mean_mde`).
- **Flip rate** per arm and placement: the share of questions whose correctness
  changes with the order, with a Wilson interval (:func:`evalkit.scoring.stats.flip_rate_ci`; with
  clusters, widened to the cluster bootstrap's).
- **Where the gold ended up** under each controlled placement, by block and
  by character; **arms** (with the closed-book control beside them, nothing
  subtracted); **refusals** and **citation correctness**.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from evalkit.records import DOES_NOT_FIT
from evalkit.scoring import stats
from evalkit.scoring.clusters import OWN, labels_for
from evalkit.scoring.position import answer_accuracy
from evalkit.scoring.stats.cluster_intervals import cluster_difference, cluster_mean_ci, measured_design_effect
from evalkit.scoring.stats.cluster_paired import cluster_paired_bootstrap

HEAD, MID, TAIL = "gold_at:head", "gold_at:mid", "gold_at:tail"
ALPHA, POWER = 0.05, 0.8
NOT_DETECTABLE = "not detectable at this size"
"""``mde_status`` when exact power at delta = psi is below 0.8: no effect of any size reaches 80% power."""


def _scored(rows: pd.DataFrame) -> pd.DataFrame:
    scored = rows[rows["correct"].notna()]
    return scored.assign(correct=scored["correct"].astype(bool).astype(float))


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _interval(interval: stats.Interval) -> dict[str, Any]:
    return {"low": interval.low, "high": interval.high, "method": interval.method}


def _wide(arm_rows: pd.DataFrame, column: str, candidate: str, baseline: str) -> pd.DataFrame | None:
    """Per question, the mean of ``column`` over its shuffles at each of the two placements (both present)."""
    kept = arm_rows[arm_rows["placement"].isin((candidate, baseline)) & arm_rows[column].notna()]
    if kept.empty:
        return None
    wide = kept.groupby(["question_id", "placement"])[column].mean().unstack("placement")
    if candidate not in wide.columns or baseline not in wide.columns:
        return None
    paired = wide[[baseline, candidate]].dropna()
    return None if paired.empty else paired


def paired_effect(
    arm_rows: pd.DataFrame,
    candidate: str,
    baseline: str,
    n_resamples: int,
    seed: int,
    clusters: pd.Series | None = None,
) -> dict[str, Any] | None:
    """``candidate`` placement against ``baseline`` on one arm's scored rows; None when no question has both.

    ``clusters``: question_id -> cluster; whole clusters are resampled (module docstring); None: questions.
    """
    pairs = _wide(arm_rows, "correct", candidate, baseline)
    if pairs is None:
        return None
    base, cand = pairs[baseline].to_numpy(), pairs[candidate].to_numpy()
    wins, losses = int((cand > base).sum()), int((cand < base).sum())
    n = len(pairs)
    discordance = (wins + losses) / n
    mcnemar_p = stats.mcnemar_exact_p(wins, losses)
    labels = labels_for(pairs.index.to_numpy(), clusters)
    if labels is None:
        interval = stats.paired_difference_ci(base, cand, level=1 - ALPHA, seed=seed, n_resamples=n_resamples)
        low, high, method, p_value, effect = interval.low, interval.high, interval.method, mcnemar_p, 1.0
    else:
        found = cluster_difference(base, cand, labels, 1 - ALPHA, n_resamples, seed)
        low, high, method = found.delta_low, found.delta_high, found.test
        p_value, effect = max(mcnemar_p, found.p_value), measured_design_effect(cand - base, labels)
    # Clustered questions are worth n / design effect independent ones: the MDE is stated at that size.
    n_effective = max(2, int(n / effect))
    mde = stats.paired_binary_mde(n_effective, discordance, alpha=ALPHA, power=POWER)
    significant = p_value < ALPHA and not low <= 0.0 <= high
    return {
        "candidate": candidate,
        "baseline": baseline,
        "n_questions": n,
        "n_pairs": int(arm_rows["placement"].isin((candidate, baseline)).sum()),
        "candidate_accuracy": float(cand.mean()),
        "baseline_accuracy": float(base.mean()),
        "delta": float(cand.mean() - base.mean()),
        "delta_low": low,
        "delta_high": high,
        "delta_method": method,
        "mcnemar_wins": wins,
        "mcnemar_losses": losses,
        "mcnemar_p": mcnemar_p,
        "p_value": p_value,
        "design_effect": effect,
        "discordance": discordance,
        "power_at_discordance": (
            stats.mcnemar_power(n_effective, discordance, discordance, ALPHA) if discordance else 0.0
        ),
        "mde": _finite(mde),
        "mde_status": "exact McNemar, 80% power" if mde is not None else NOT_DETECTABLE,
        "within_noise": not significant,
        **_loglik_effect(arm_rows, candidate, baseline, n_resamples, seed, clusters),
    }


def _loglik_effect(
    arm_rows: pd.DataFrame, candidate: str, baseline: str, n_resamples: int, seed: int, clusters: pd.Series | None
) -> dict:
    """The gold answer's log-likelihood, candidate - baseline per question: mean, interval, t-based MDE."""
    empty = {"loglik_questions": 0, "loglik_delta": None, "loglik_low": None, "loglik_high": None}
    if "gold_loglik" not in arm_rows:
        return empty | {"loglik_mde": None}
    pairs = _wide(arm_rows, "gold_loglik", candidate, baseline)
    if pairs is None:
        return empty | {"loglik_mde": None}
    diffs = (pairs[candidate] - pairs[baseline]).to_numpy()
    ids = pairs.index.to_numpy()
    labels = labels_for(ids, clusters)
    by_question = labels is None
    labels = np.array([OWN + str(q) for q in ids], dtype=object) if labels is None else labels
    sd = float(np.std(diffs, ddof=1)) if diffs.size >= 2 else math.nan
    n_effective = diffs.size / measured_design_effect(diffs, labels)
    usable = math.isfinite(sd) and sd > 0 and n_effective >= 2
    mde = stats.paired_mean_mde(int(n_effective), sd, alpha=ALPHA, power=POWER) if usable else None
    if by_question:  # few independent values: the t and studentised bootstrap's outer bounds (covers at n = 10)
        interval = stats.studentised_ci(diffs, level=1 - ALPHA, n_resamples=n_resamples, seed=seed)
        low, high, method = interval.low, interval.high, interval.method
    else:
        found = cluster_paired_bootstrap(np.zeros_like(diffs), diffs, labels, 1 - ALPHA, n_resamples, seed)
        low, high, method = found.delta_low, found.delta_high, found.test
    spread = math.isfinite(low) and high > low
    return {
        "loglik_questions": int(diffs.size),
        "loglik_delta": float(diffs.mean()),
        "loglik_low": low if spread else None,
        "loglik_high": high if spread else None,
        "loglik_method": method,
        "loglik_sd": _finite(sd),
        "loglik_mde": _finite(mde),
    }


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


def arm_table(
    rows: pd.DataFrame, n_resamples: int = 2000, seed: int = 0, clusters: pd.Series | None = None
) -> list[dict[str, Any]]:
    """Per arm: accuracy on answerable questions (:func:`evalkit.scoring.position.answer_accuracy`, the summary's
    own computation), tokens, does-not-fit, refusals and citations."""
    out = []
    for arm, group in rows.groupby("arm", sort=False):
        sent = group[group["sent"].astype(bool)]
        scored = _scored(group)
        answerable = scored[scored["answerable"].astype(bool)]
        unanswerable = scored[~scored["answerable"].astype(bool)]
        unsent = group[group["stop_reason"] == DOES_NOT_FIT]
        accuracy = answer_accuracy(group, n_resamples, seed, clusters)
        empty = accuracy["n_questions"] == 0
        out.append(
            {
                "arm": str(arm),
                "accuracy_low": None if empty else accuracy["accuracy_low"],
                "accuracy_high": None if empty else accuracy["accuracy_high"],
                "n_rows": len(group),
                "n_answers": len(scored),
                "n_questions": int(scored["question_id"].nunique()),
                "accuracy_answerable": None if empty else float(accuracy["accuracy"]),
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


def flip_rate(group: pd.DataFrame, clusters: pd.Series | None = None) -> dict[str, Any] | None:
    """Share of questions (asked at least twice) whose correctness changes with the order, Wilson interval
    (widened to the cluster bootstrap's with ``clusters``)."""
    by_question = group.groupby("question_id")["correct"].agg(["min", "max", "size"])
    repeated = by_question[by_question["size"] > 1]
    if repeated.empty:
        return None
    flipped = (repeated["max"] > repeated["min"]).to_numpy()
    interval = stats.flip_rate_ci(flipped, level=1 - ALPHA)
    low, high = interval.low, interval.high
    labels = labels_for(repeated.index.to_numpy(), clusters)
    if labels is not None:
        outer = cluster_mean_ci(flipped.astype(float), labels, 1 - ALPHA)
        low, high = min(low, outer.low), max(high, outer.high)
    return {"flip_rate": interval.mean, "flip_low": low, "flip_high": high, "n": len(repeated)}


def position_effects(
    rows: pd.DataFrame, n_resamples: int = 2000, seed: int = 0, clusters: pd.Series | None = None
) -> dict[str, Any]:
    """Everything the report states about position, arms, refusals and citations, from ``position/rows``.

    ``clusters``: question_id -> cluster (the sweep's); every interval and test resamples them; None: questions.
    """
    scored = _scored(rows)
    controlled = sorted(set(scored.loc[scored["placement"].astype(str).str.startswith("gold_at:"), "arm"]))
    effects: list[dict[str, Any]] = []
    for arm in controlled:
        arm_rows = scored[(scored["arm"] == arm) & scored["answerable"].astype(bool)]
        for candidate in (HEAD, TAIL):
            effect = paired_effect(arm_rows, candidate, MID, n_resamples, seed, clusters)
            if effect is not None:
                effects.append({"arm": arm} | effect)
    flips = []
    for (arm, placement), group in scored.groupby(["arm", "placement"], sort=False):
        flipped = flip_rate(group, clusters)
        if flipped is not None:
            flips.append({"arm": str(arm), "placement": str(placement)} | flipped)
    # The experiment detects an effect when every comparison it reports could: the largest MDE is its MDE.
    detectable = bool(effects) and all(e["mde"] is not None for e in effects)
    return {
        "alpha": ALPHA,
        "power": POWER,
        "effects": effects,
        "mde": max(e["mde"] for e in effects) if detectable else None,
        "mde_status": "exact McNemar, 80% power" if detectable else NOT_DETECTABLE,
        "flip_rates": flips,
        "landed": landed(rows),
        "arms": arm_table(rows, n_resamples, seed, clusters),
        "n_questions": int(rows["question_id"].nunique()),
        "n_answerable": int(rows.loc[rows["answerable"].astype(bool), "question_id"].nunique()),
        "n_answers": len(scored),
    }
