"""Accuracy by arm, placement and gold bucket, with intervals and flip rates (pure)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from evalkit.records import DOES_NOT_FIT, PROMPT_TOO_LONG
from evalkit.scoring.answers import flip_rate
from evalkit.scoring.clusters import labels_for
from evalkit.scoring.stats import clustered_share_ci
from evalkit.scoring.stats.cluster_intervals import cluster_mean_ci

POSITION_BUCKETS: tuple[str, ...] = ("only", "head", "mid", "tail", "none")
"""Where the gold sat (``only``: a single-block context; ``none``: no gold in it); ``all`` follows in the summary."""
BUCKET_COLUMNS = {"chars": "gold_bucket", "blocks": "gold_block_bucket"}
"""``bucket_by`` -> the rows column: the gold block's character midpoint, or its index among the blocks."""


def _question_answers(cell: pd.DataFrame) -> tuple[list[str], list[np.ndarray]]:
    """The cell's question ids and each one's scored answers (0/1), one array per question."""
    scored = cell[cell["correct"].notna()]
    groups = list(scored.groupby("question_id", sort=True))
    return [str(q) for q, _ in groups], [g["correct"].astype(float).to_numpy() for _, g in groups]


def answer_accuracy(
    rows: pd.DataFrame, n_resamples: int, seed: int, clusters: pd.Series | None = None
) -> dict[str, Any]:
    """Accuracy on the answerable questions of some answer rows: the one computation of an accuracy and its interval.

    Question-weighted (each question's share of correct answers, averaged), with a question-clustered interval
    never of width zero (:func:`evalkit.scoring.stats.clustered_share_ci`). Unanswerable questions are left out:
    their ``correct`` is a refusal, counted in ``refused_share`` and the arms' refusals, never in accuracy (rows
    without an ``answerable`` column are all answerable). The summary's cells and effects.json's arms both call
    this, so one arm's accuracy is one number wherever it is written.

    ``clusters`` (question_id -> cluster, the sweep's: :mod:`evalkit.scoring.clusters`): the interval is
    widened to the cluster bootstrap's over the question shares
    (:func:`evalkit.scoring.stats.cluster_intervals.cluster_mean_ci`), so questions of one document count as
    one draw; the method then names both.
    """
    answerable = rows[rows["answerable"].astype(bool)] if "answerable" in rows.columns else rows
    ids, answers = _question_answers(answerable)
    if not answers:
        nan = math.nan
        return {"accuracy": nan, "accuracy_low": nan, "accuracy_high": nan, "ci_method": "", "n_questions": 0}
    interval = clustered_share_ci(answers, n_resamples=n_resamples, seed=seed)
    low, high, method = interval.low, interval.high, interval.method
    labels = labels_for(ids, clusters)
    shares = np.array([a.mean() for a in answers])
    if labels is not None and np.ptp(shares) > 0:
        outer = cluster_mean_ci(shares, labels, n_resamples=n_resamples, seed=seed)
        low, high, method = min(low, outer.low), max(high, outer.high), f"{method} and {outer.method}"
    return {"accuracy": interval.mean, "accuracy_low": low, "accuracy_high": high,
            "ci_method": method, "n_questions": len(answers)}  # fmt: skip


def _cell(cell: pd.DataFrame, n_resamples: int, seed: int, clusters: pd.Series | None) -> dict[str, Any]:
    """Accuracy (:func:`answer_accuracy`) and counts of one cell."""
    scored = cell[cell["correct"].notna()]
    accuracy = answer_accuracy(cell, n_resamples, seed, clusters)
    n_questions = accuracy.pop("n_questions")
    sent = cell[cell["sent"].astype(bool)]
    priced = sent["cost_usd"].notna()
    return {
        "n_rows": len(cell),
        "n_answers": len(scored),
        "n_questions": n_questions,
        **accuracy,
        "exact": float(scored["exact"].astype(float).mean()) if len(scored) else math.nan,
        "f1": float(scored["f1"].mean()) if len(scored) else math.nan,
        "refused_share": float(scored["refused"].astype(float).mean()) if len(scored) else math.nan,
        "n_does_not_fit": int((cell["stop_reason"] == DOES_NOT_FIT).sum()),
        "n_prompt_too_long": int((cell["stop_reason"] == PROMPT_TOO_LONG).sum()),
        "n_overflow": int((cell["stop_reason"] == "overflow").sum()),
        "n_over_budget": int((sent["n_dropped"] > 0).sum()),
        "n_truncated": int(cell["truncated"].astype(bool).sum()),
        "n_errors": int((cell["stop_reason"] == "error").sum()),
        "n_cached": int(sent["cached"].astype(bool).sum()),
        "mean_prompt_tokens": float(sent["prompt_tokens"].mean()) if len(sent) else math.nan,
        "input_tokens": int(sent["input_tokens"].sum()),
        "output_tokens": int(sent["output_tokens"].sum()),
        "cache_creation_input_tokens": int(sent["cache_creation_input_tokens"].sum()),
        "cache_read_input_tokens": int(sent["cache_read_input_tokens"].sum()),
        "usage_estimated": bool(sent["usage_estimated"].astype(bool).any()),
        "cost_usd": float(sent.loc[priced, "cost_usd"].sum()) if priced.any() else math.nan,
        "cost_per_answer_usd": float(sent.loc[priced, "cost_usd"].mean()) if priced.any() else math.nan,
    }


def _flips(group: pd.DataFrame) -> tuple[float, int]:
    """Flip rate over the group's repeats and the number of questions with at least two scored repeats."""
    scored = group[group["correct"].notna()].sort_values(["question_id", "repeat"])
    by_question = {qid: [bool(c) for c in g["correct"]] for qid, g in scored.groupby("question_id", sort=True)}
    repeated = sum(1 for outcomes in by_question.values() if len(outcomes) >= 2)
    return flip_rate(by_question), repeated


def summarise_position(
    rows: pd.DataFrame,
    n_resamples: int = 2000,
    seed: int = 0,
    bucket_by: str = "chars",
    clusters: pd.Series | None = None,
) -> pd.DataFrame:
    """One row per (arm, placement, gold bucket), buckets only/head/mid/tail/none then ``all``.

    ``bucket_by`` picks the bucket: ``chars`` (the gold block's character
    midpoint, ``gold_bucket``) or ``blocks`` (its index among the blocks,
    ``gold_block_bucket``); the ``bucket_by`` column says which.

    ``accuracy``: mean over the cell's answerable questions of each question's share of correct
    answers in the cell (:func:`answer_accuracy`; ``n_questions`` counts them), with a 95% interval over questions
    (:func:`evalkit.scoring.stats.clustered_share_ci`: the expanded percentile bootstrap over
    questions, Wilson on the question count where every question agrees; never of width zero; with
    ``clusters``, widened to the cluster bootstrap's, see :func:`answer_accuracy`);
    rows not sent (does not fit) and overflow/error answers are not scored and not in it. ``flip_rate`` (on the
    ``all`` row; NaN for a single repeat) is the share of questions whose
    correctness changes across repeats. Counts and tokens are per cell:
    ``n_does_not_fit`` stuffed contexts over the budget and ``n_prompt_too_long``
    prompts whose fixed parts alone are (neither sent); ``n_overflow`` requests
    the model's window refused (pre-count or the provider); ``n_over_budget``
    sent contexts that left whole items out; ``n_truncated`` answers cut short.
    """
    column = BUCKET_COLUMNS[bucket_by]
    out: list[dict[str, Any]] = []
    arm_order = list(dict.fromkeys(rows["arm"]))
    placement_order = list(dict.fromkeys(rows["placement"]))
    for arm in arm_order:
        for placement in placement_order:
            group = rows[(rows["arm"] == arm) & (rows["placement"] == placement)]
            if group.empty:
                continue
            repeats = int(group["repeat"].max()) + 1
            for bucket in (*POSITION_BUCKETS, "all"):
                cell = group if bucket == "all" else group[group[column] == bucket]
                if cell.empty and bucket != "all":
                    continue
                flips, repeated = _flips(group) if bucket == "all" and repeats > 1 else (math.nan, 0)
                out.append(
                    {"arm": arm, "placement": placement, "gold_bucket": bucket, "bucket_by": bucket_by}
                    | {"repeats": repeats}
                    | _cell(cell, n_resamples, seed, clusters)
                    | {"flip_rate": flips, "flip_questions": repeated}
                )
    return pd.DataFrame(out)
