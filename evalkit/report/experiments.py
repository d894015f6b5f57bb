"""Optional data later stages add, read for the page: the cost front and the calibrated threshold.

Each function selects from a frame as read from the run folder (no statistics: those are in review.json).
"""

from __future__ import annotations

import numpy as np
import pandas as pd


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


def calibrated_threshold(calibration: pd.DataFrame | None, chunking: str) -> float | None:
    """The recommended threshold of one chunking for all questions (class ``all``), when calibrated."""
    if calibration is None or not {"chunking", "question_class", "recommended_threshold"} <= set(calibration.columns):
        return None
    rows = calibration[(calibration["chunking"] == chunking) & (calibration["question_class"] == "all")]
    if rows.empty or pd.isna(rows["recommended_threshold"].iloc[0]):
        return None
    return float(rows["recommended_threshold"].iloc[0])
