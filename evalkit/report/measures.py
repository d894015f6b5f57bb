"""The measures the report and the gate compare, and their per-question values.

A measure names a results column, the questions it is defined on and its
direction. Per-question values keep NaN where a measure is undefined (IR
metrics on unanswerable questions, zero-hit-on-answerable for unanswerable
ones), so paired statistics drop those pairs and count them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from evalkit.run import files

Subset = Literal["all", "answerable", "unanswerable"]


@dataclass(frozen=True)
class Measure:
    """One comparable quantity with one value per question."""

    name: str
    """Key used in configs, gate.json and on the command line."""
    label: str
    """Human label, e.g. ``recall@k``."""
    column: str
    """Column of results.parquet."""
    subset: Subset = "answerable"
    """Questions the measure is defined on; the others get NaN."""
    higher_is_better: bool = True
    proportion: bool = True
    """Values in [0, 1], shown as percentages and deltas in points."""


MEASURES: dict[str, Measure] = {
    m.name: m
    for m in (
        Measure("recall", "recall@k", "recall"),
        Measure("hit", "hit@k", "hit"),
        Measure("context_precision", "context precision@k", "context_precision"),
        Measure("precision", "precision@k", "precision"),
        Measure("ndcg", "nDCG@k", "ndcg"),
        Measure("mrr", "MRR", "mrr"),
        Measure("recall_trec", "recall_trec@k", "recall_trec"),
        Measure("zero_hit_answerable", "zero-hit (answerable: misses)", "zero_hit", "answerable", False),
        Measure("zero_hit_unanswerable", "zero-hit (unanswerable: abstentions)", "zero_hit", "unanswerable", True),
        Measure("cost_per_query", "$ per query", files.COST_PER_QUERY, "all", False, False),
        Measure("cost_per_day", "$ per day", files.COST_PER_DAY, "all", False, False),
    )
}

HEADLINE = ("recall", "hit", "context_precision", "ndcg", "mrr", "zero_hit_answerable", "zero_hit_unanswerable")
"""Measures the recommendation-versus-baseline table shows, in order."""


def measure(name: str) -> Measure:
    """Look a measure up by name; ValueError naming the known ones otherwise."""
    try:
        return MEASURES[name]
    except KeyError:
        raise ValueError(f"unknown metric {name!r}; known: {', '.join(MEASURES)}") from None


def available(results: pd.DataFrame, names: tuple[str, ...] = HEADLINE) -> tuple[Measure, ...]:
    """The named measures whose column the results hold."""
    return tuple(MEASURES[n] for n in names if MEASURES[n].column in results.columns)


def _masked(frame: pd.DataFrame, m: Measure) -> pd.Series:
    values = frame[m.column].astype(np.float64)
    if m.subset == "answerable":
        return values.where(frame["answerable"].astype(bool))
    if m.subset == "unanswerable":
        return values.where(~frame["answerable"].astype(bool))
    return values


def per_question(results: pd.DataFrame, m: Measure, config_id: str) -> pd.Series:
    """Values of one config indexed by question_id (NaN where the measure is undefined)."""
    rows = results[results["config_id"] == config_id]
    return pd.Series(_masked(rows, m).to_numpy(), index=rows["question_id"].to_numpy(), name=config_id)


def matrix(results: pd.DataFrame, m: Measure, config_ids: list[str] | None = None) -> pd.DataFrame:
    """question_id x config_id values of one measure (NaN where undefined)."""
    rows = results if config_ids is None else results[results["config_id"].isin(config_ids)]
    frame = pd.DataFrame(
        {
            "question_id": rows["question_id"].to_numpy(),
            "config_id": rows["config_id"].to_numpy(),
            "v": _masked(rows, m),
        }
    )
    wide = frame.drop_duplicates(["question_id", "config_id"]).set_index(["question_id", "config_id"])["v"].unstack()
    return wide if config_ids is None else wide.reindex(columns=config_ids)


def is_binary(values: np.ndarray) -> bool:
    """Whether all non-missing values are 0 or 1."""
    kept = values[~np.isnan(values)]
    return bool(kept.size) and bool(np.isin(kept, (0.0, 1.0)).all())
