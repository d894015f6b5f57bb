"""Recall at a prompt-token budget: each chunking compared at equal cost, not at equal k (pure).

For one budget B (prompt tokens of returned chunks per question, default production's mean), each
question of a chunking takes the largest top_k of the grid whose returned tokens fit B, so a long
chunk costs what it costs; a question where even the smallest k does not fit gets nothing (recall 0).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from evalkit.scoring.per_config import PerConfig, Results

GROUP = ["chunking", "retriever", "reranker", "threshold"]


def recall_at_budget(results: Results, budget: float, measure: str = "recall") -> pd.DataFrame:
    """One row per (chunking, retriever, reranker, threshold): mean recall at the budget and the k it used."""
    if isinstance(results, PerConfig):
        # Each group's choices from its own configs' rows (its every top_k), in the order the groups first
        # appear in a results table: the same per-question frame as from the whole table, so the same means.
        groups = results.identity.groupby(GROUP, sort=False)["config_id"]
        parts = [budget_choices(results.rows(list(ids)), budget, measure) for _, ids in groups]
        return budget_means(pd.concat(parts, ignore_index=True), budget, measure)
    return budget_means(budget_choices(results, budget, measure), budget, measure)


def budget_choices(results: pd.DataFrame, budget: float, measure: str = "recall") -> pd.DataFrame:
    """Per group and answerable question: the largest top_k that fits the budget and its value (NaN k, 0: none)."""
    rows = results[results["answerable"].astype(bool)]
    fits = rows[rows["returned_tokens"] <= budget]
    # The largest fitting k per question and chunking; a question with no fitting k scores 0.
    best = fits.sort_values("top_k").groupby([*GROUP, "question_id"], sort=False).tail(1)
    per_question = rows[[*GROUP, "question_id"]].drop_duplicates()
    merged = per_question.merge(best[[*GROUP, "question_id", "top_k", measure]], on=[*GROUP, "question_id"], how="left")
    merged[measure] = merged[measure].fillna(0.0)
    return merged


def budget_means(merged: pd.DataFrame, budget: float, measure: str = "recall") -> pd.DataFrame:
    """The per-group means of :func:`budget_choices` (pandas' group means depend on the whole frame's group
    order, so they are taken once over every group's choices)."""
    grouped = merged.groupby(GROUP, sort=True)
    out = grouped[measure].mean().rename(f"{measure}_at_budget").to_frame()
    out["mean_k_at_budget"] = grouped["top_k"].mean()
    out["share_nothing_fits"] = grouped["top_k"].apply(lambda k: float(k.isna().mean()))
    out["budget_tokens"] = float(budget)
    return out.reset_index()


def production_budget(results: pd.DataFrame, production_id: str) -> float:
    """Production's mean returned tokens per answerable question: the budget both sides are held to."""
    rows = results[(results["config_id"] == production_id) & results["answerable"].astype(bool)]
    return float(np.mean(rows["returned_tokens"])) if len(rows) else float("nan")
