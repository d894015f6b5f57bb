"""Per-question values of a measure, taken from result rows (pure: frames in, frames out).

Values keep NaN where a measure is undefined (IR metrics on unanswerable
questions, zero-hit-on-answerable for unanswerable ones), so paired
statistics drop those pairs and count them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from evalkit.records import THRESHOLD_ATOL
from evalkit.scoring.registry import HEADLINE, MEASURES, Measure

__all__ = ["at_threshold", "available", "masked", "matrix", "per_question"]


def at_threshold(thresholds: pd.Series, level: float) -> np.ndarray:
    """bool per row: the row's threshold is the grid level ``level``."""
    return np.isclose(thresholds.astype(float), level, rtol=0, atol=THRESHOLD_ATOL)


def available(results: pd.DataFrame, names: tuple[str, ...] = HEADLINE) -> tuple[Measure, ...]:
    """The named measures whose column the results hold."""
    return tuple(MEASURES[n] for n in names if MEASURES[n].column in results.columns)


def masked(frame: pd.DataFrame, m: Measure) -> pd.Series:
    """The measure's column as floats, NaN on the questions outside its subset."""
    values = frame[m.column].astype(np.float64)
    if m.subset == "answerable":
        return values.where(frame["answerable"].astype(bool))
    if m.subset == "unanswerable":
        return values.where(~frame["answerable"].astype(bool))
    return values


def per_question(results: pd.DataFrame, m: Measure, config_id: str) -> pd.Series:
    """Values of one config indexed by question_id (NaN where the measure is undefined)."""
    rows = results[results["config_id"] == config_id]
    return pd.Series(masked(rows, m).to_numpy(), index=rows["question_id"].to_numpy(), name=config_id)


def matrix(results: pd.DataFrame, m: Measure, config_ids: list[str] | None = None) -> pd.DataFrame:
    """question_id x config_id values of one measure (NaN where undefined)."""
    rows = results if config_ids is None else results[results["config_id"].isin(config_ids)]
    frame = pd.DataFrame(
        {
            "question_id": rows["question_id"].to_numpy(),
            "config_id": rows["config_id"].to_numpy(),
            "v": masked(rows, m),
        }
    )
    wide = frame.drop_duplicates(["question_id", "config_id"]).set_index(["question_id", "config_id"])["v"].unstack()
    return wide if config_ids is None else wide.reindex(columns=config_ids)
