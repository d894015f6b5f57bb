"""Optional data later stages add: the position experiment and cost (pure computations).

Each function takes the frame as read from the run folder and returns frozen
records; the report renders them, or a "no data" note when the frame is absent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from evalkit import stats

BUCKET_ORDER = ("head", "mid", "tail")
POSITION_COLUMNS = ("question_id", "arm", "gold_bucket", "correct")


@dataclass(frozen=True)
class PositionSummary:
    """Accuracy by where the gold passage sat in the context, per arm, and answer flips across repeats."""

    buckets: tuple[str, ...]
    accuracy: Mapping[str, tuple[stats.Interval | None, ...]]
    """arm -> one interval per bucket (per-question accuracy averaged over repeats)."""
    flip_rate: Mapping[str, stats.Interval | None]
    """arm -> share of questions whose correctness changed across shuffled repeats."""
    n_rows: int
    config_id: str | None
    """The config the rows were filtered to, when the table names configs."""


def position_summary(
    position: pd.DataFrame, level: float, n_resamples: int, seed: int, config_id: str | None = None
) -> PositionSummary | None:
    """Intervals per (arm, bucket) and flip rates; None when required columns are missing."""
    if not set(POSITION_COLUMNS) <= set(position.columns):
        return None
    rows = position
    chosen = None
    if "config_id" in rows.columns and config_id is not None and (rows["config_id"] == config_id).any():
        rows, chosen = rows[rows["config_id"] == config_id], config_id
    rows = rows.assign(correct=rows["correct"].astype(float))
    present = [str(b) for b in rows["gold_bucket"].dropna().unique()]
    buckets = tuple([b for b in BUCKET_ORDER if b in present] + sorted(b for b in present if b not in BUCKET_ORDER))

    def ci(values: np.ndarray) -> stats.Interval | None:
        values = values[~np.isnan(values)]
        if values.size == 0:
            return None
        return stats.bootstrap_ci(values, level=level, n_resamples=n_resamples, seed=seed)

    accuracy: dict[str, tuple[stats.Interval | None, ...]] = {}
    flips: dict[str, stats.Interval | None] = {}
    for arm, group in rows.groupby("arm", sort=True):
        per_q = group.groupby(["gold_bucket", "question_id"])["correct"].mean()
        accuracy[str(arm)] = tuple(ci(per_q.loc[b].to_numpy()) if b in per_q.index.get_level_values(0) else None
                                   for b in buckets)
        if "repeat" in group.columns:
            spread = group.groupby("question_id")["correct"].agg(["min", "max", "size"])
            repeated = spread[spread["size"] > 1]
            flips[str(arm)] = ci((repeated["max"] > repeated["min"]).astype(float).to_numpy())
        else:
            flips[str(arm)] = None
    return PositionSummary(buckets, accuracy, flips, len(rows), chosen)


def pareto_front(points: pd.DataFrame, cost: str, quality: str) -> tuple[str, ...]:
    """config_ids not dominated by a config that is cheaper-or-equal and better (cheapest first)."""
    ordered = points.dropna(subset=[cost, quality]).sort_values([cost, quality], ascending=[True, False])
    front: list[str] = []
    best = -np.inf
    for row in ordered.itertuples(index=False):
        q = float(getattr(row, quality))
        if q > best:
            front.append(str(row.config_id))
            best = q
    return tuple(front)


def numeric_columns(frame: pd.DataFrame, exclude: Sequence[str]) -> tuple[str, ...]:
    """Numeric columns of a table, for plotting a calibration curve whatever it records."""
    return tuple(c for c in frame.columns if c not in exclude and pd.api.types.is_numeric_dtype(frame[c]))
