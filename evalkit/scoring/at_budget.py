"""Recall at a prompt-token budget: each chunking compared at equal cost, not at equal k (pure).

For one budget B (prompt tokens of returned chunks per question, default production's mean), each
question of a chunking takes the largest top_k of the grid whose returned tokens fit B, so a long
chunk costs what it costs; a question where even the smallest k does not fit gets nothing (recall 0).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

GROUP = ["chunking", "retriever", "reranker", "threshold"]


def recall_at_budget(results: pd.DataFrame, budget: float, measure: str = "recall") -> pd.DataFrame:
    """One row per (chunking, retriever, reranker, threshold): mean recall at the budget and the k it used."""
    rows = results[results["answerable"].astype(bool)]
    fits = rows[rows["returned_tokens"] <= budget]
    # The largest fitting k per question and chunking; a question with no fitting k scores 0.
    best = fits.sort_values("top_k").groupby([*GROUP, "question_id"], sort=False).tail(1)
    per_question = rows[[*GROUP, "question_id"]].drop_duplicates()
    merged = per_question.merge(best[[*GROUP, "question_id", "top_k", measure]], on=[*GROUP, "question_id"], how="left")
    merged[measure] = merged[measure].fillna(0.0)
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
