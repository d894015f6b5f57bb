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
    if "same_as" in rows.columns:  # a run before it has none: every grid point then reads as distinct
        summary["same_as"] = grouped["same_as"].first()
    if "lists_key" in rows.columns:
        summary["lists_key"] = grouped["lists_key"].first()
    if "off_grid" in rows.columns:  # a threshold the calibration advises, scored beside the grid (issue 47)
        summary["off_grid"] = grouped["off_grid"].first().astype(bool)
    summary = summary.reset_index()
    keep = ["chunking", "n_chunks", "stored_chars", "indexed_chars", "gold_cut_share", "texts_embedded"]
    info = chunking_info[[c for c in keep if c in chunking_info.columns]]
    return summary.merge(info, on="chunking", how="left")


TWIN_ORDER = ("cost_per_query_usd", "chunk_size", "chunk_overlap", "chunking", "top_k", "threshold")
"""Which of twin grid points is named: the cheapest, then the smallest chunking, k and threshold (the first of
the grid within one chunking, as the sweep's own ``same_as`` keeps it)."""


def with_twins(summary: pd.DataFrame) -> pd.DataFrame:
    """``same_as`` across chunkings: a grid point whose every question gets the same returned lists as another
    (``lists_key``) is that config's twin, named once (e.g. two overlaps of documents shorter than one chunk).

    A new frame; unchanged without ``lists_key`` (runs before it keep their within-chunking ``same_as``).
    """
    if "lists_key" not in summary.columns or summary.empty:
        return summary
    order = [c for c in TWIN_ORDER if c in summary.columns]
    ranked = summary.sort_values([*order, "config_id"], kind="stable", na_position="last")
    kept = ranked.groupby("lists_key", sort=False)["config_id"].transform("first")
    same_as = pd.Series(
        ["" if k == c else str(k) for c, k in zip(ranked["config_id"], kept, strict=True)], index=ranked.index
    )
    return summary.assign(same_as=same_as.reindex(summary.index))


def collapsed(summary: pd.DataFrame) -> dict[str, tuple[str, ...]]:
    """Grid points that return the same lists as an earlier one of their chunking: kept id -> collapsed ids.

    Empty for a run without the ``same_as`` column. A collapsed grid point has every measure of the one it
    collapses into; it is reported so, not as a distinct config (e.g. thresholds below every score a top_k reaches).
    """
    if "same_as" not in summary.columns:
        return {}
    out: dict[str, list[str]] = {}
    for config_id, same_as in zip(summary["config_id"], summary["same_as"].fillna(""), strict=True):
        if same_as:
            out.setdefault(str(same_as), []).append(str(config_id))
    return {kept: tuple(ids) for kept, ids in out.items()}


def collapsed_line(groups: dict[str, tuple[str, ...]], n_configs: int, shown: int = 3) -> str | None:
    """One sentence naming the collapsed grid points (None when every grid point returned its own lists)."""
    n = sum(len(ids) for ids in groups.values())
    if not n:
        return None
    parts = [f"{', '.join(ids)} = {kept}" for kept, ids in list(groups.items())[:shown]]
    more = f"; and {len(groups) - shown} more groups" if len(groups) > shown else ""
    return (
        f"{n} of {n_configs} grid points return exactly the lists of another grid point (collapsed, not distinct "
        f"configs; summary column same_as): {'; '.join(parts)}{more}"
    )
