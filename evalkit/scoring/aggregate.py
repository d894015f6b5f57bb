"""Per-question rows to one summary row per config (pure).

IR metrics are averaged over answerable questions only (they are undefined
without gold); zero-hit is split: on answerable questions it is a miss, on
unanswerable ones a correct abstention.
"""

from __future__ import annotations

import pandas as pd

from evalkit.scoring.registry import CHAR_COLUMNS, RANKING_COLUMNS

METRIC_COLUMNS = (*RANKING_COLUMNS, *CHAR_COLUMNS)
"""IR metric columns averaged over answerable questions (names and meaning in :mod:`evalkit.scoring.registry`)."""
CONFIG_COLUMNS = (
    "config_id",
    "chunking",
    "chunker",
    "chunk_size",
    "chunk_overlap",
    "retriever",
    "reranker",
    "top_k",
    "threshold",
)


def summarise(rows: pd.DataFrame, chunking_info: pd.DataFrame) -> pd.DataFrame:
    """One row per config: metric means, zero-hit split, counts, and the chunking's index size."""
    grouped = rows.groupby(list(CONFIG_COLUMNS), sort=False)
    summary = grouped[list(METRIC_COLUMNS)].mean()  # NaN (unanswerable) rows are skipped
    summary["n_questions"] = grouped.size()
    summary["n_answerable"] = grouped["answerable"].sum()
    answerable = rows[rows["answerable"]].groupby(list(CONFIG_COLUMNS), sort=False)["zero_hit"].mean()
    unanswerable = rows[~rows["answerable"]].groupby(list(CONFIG_COLUMNS), sort=False)["zero_hit"].mean()
    summary["zero_hit_answerable"] = answerable
    summary["zero_hit_unanswerable"] = unanswerable
    summary["zero_hit"] = grouped["zero_hit"].mean()
    summary["mean_returned"] = grouped["n_returned"].mean()
    summary["mean_returned_tokens"] = grouped["returned_tokens"].mean()
    # Leakage: returned chunks the question's role may not see, or from versions not in effect at its date.
    summary["leaked_units"] = grouped["leaked_units"].sum()
    summary["leaked_questions"] = grouped["leaked_units"].apply(lambda s: float((s > 0).mean()))
    summary["outdated_units"] = grouped["outdated_units"].sum()
    summary["outdated_questions"] = grouped["outdated_units"].apply(lambda s: float((s > 0).mean()))
    summary["mean_question_tokens"] = grouped["question_tokens"].mean()
    summary = summary.reset_index()
    keep = ["chunking", "n_chunks", "stored_chars", "indexed_chars", "gold_cut_share", "texts_embedded"]
    info = chunking_info[[c for c in keep if c in chunking_info.columns]]
    return summary.merge(info, on="chunking", how="left")
