"""Optional data later stages add: the position experiment, cost, calibration (pure computations).

Each function takes the frame as read from the run folder and returns frozen
records; the report renders them, or a "no data" note when the frame is absent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from evalkit.scoring import stats

BUCKET_ORDER = ("head", "mid", "tail")
ROW_COLUMNS = ("question_id", "arm", "gold_bucket", "correct")
SUMMARY_COLUMNS = ("arm", "placement", "gold_bucket", "accuracy", "accuracy_low", "accuracy_high")
SHUFFLE = "shuffle"


@dataclass(frozen=True)
class PositionSummary:
    """Accuracy by where the gold sat in the context, per arm, and answer flips across shuffled repeats."""

    buckets: tuple[str, ...]
    accuracy: Mapping[str, tuple[stats.Interval | None, ...]]
    """arm -> one interval per bucket, shuffled placements (question-weighted, CI over questions)."""
    flip_rate: Mapping[str, float]
    """arm -> share of questions whose correctness changed across repeats (NaN with one repeat)."""
    controlled: tuple[tuple[str, str, stats.Interval | None], ...]
    """(arm, placement, accuracy) for deterministic placements such as ``gold_at:mid``."""
    source: str
    """Which file the numbers come from."""


def _interval(row: Mapping[str, object], level: float) -> stats.Interval | None:
    mean = float(row["accuracy"])  # type: ignore[arg-type]
    if np.isnan(mean):
        return None
    n = int(row.get("n_questions", 0) or 0)  # type: ignore[call-overload]
    low, high = float(row["accuracy_low"]), float(row["accuracy_high"])  # type: ignore[arg-type]
    return stats.Interval(mean, low, high, n, level, str(row.get("ci_method") or "percentile"))


def _ordered(present: Sequence[str]) -> tuple[str, ...]:
    kept = [b for b in BUCKET_ORDER if b in present]
    return tuple(kept + sorted(b for b in present if b not in BUCKET_ORDER and b not in ("all", "none")))


def position_from_summary(summary: pd.DataFrame, level: float) -> PositionSummary | None:
    """The experiment's own summary table read as records (its intervals are already bootstrapped)."""
    if not set(SUMMARY_COLUMNS) <= set(summary.columns):
        return None
    shuffled = summary[summary["placement"] == SHUFFLE]
    buckets = _ordered([str(b) for b in shuffled["gold_bucket"].unique()])
    accuracy: dict[str, tuple[stats.Interval | None, ...]] = {}
    flips: dict[str, float] = {}
    for arm, group in shuffled.groupby("arm", sort=False):
        cells = {str(r["gold_bucket"]): r for r in group.to_dict("records")}
        accuracy[str(arm)] = tuple(_interval(cells[b], level) if b in cells else None for b in buckets)
        overall = cells.get("all", {})
        flips[str(arm)] = float(overall.get("flip_rate", np.nan)) if overall else float("nan")
    controlled = tuple(
        (str(r["arm"]), str(r["placement"]), _interval(r, level))
        for r in summary[(summary["placement"] != SHUFFLE) & (summary["gold_bucket"] == "all")].to_dict("records")
    )
    return PositionSummary(buckets, accuracy, flips, controlled, "summary")


def position_from_rows(rows: pd.DataFrame, level: float, n_resamples: int, seed: int) -> PositionSummary | None:
    """The same records computed from the answers (when the summary is missing, e.g. an interrupted run)."""
    if not set(ROW_COLUMNS) <= set(rows.columns):
        return None
    scored = rows[rows["correct"].notna()]
    scored = scored.assign(correct=scored["correct"].astype(bool).astype(float))
    if "placement" in scored.columns:
        controlled_rows = scored[scored["placement"] != SHUFFLE]
        scored = scored[scored["placement"] == SHUFFLE]
    else:
        controlled_rows = scored.iloc[0:0]
    buckets = _ordered([str(b) for b in scored["gold_bucket"].dropna().unique()])

    def ci(frame: pd.DataFrame) -> stats.Interval | None:
        shares = frame.groupby("question_id")["correct"].mean().to_numpy()
        if shares.size == 0:
            return None
        return stats.bootstrap_ci(shares, level=level, n_resamples=n_resamples, seed=seed)

    accuracy: dict[str, tuple[stats.Interval | None, ...]] = {}
    flips: dict[str, float] = {}
    for arm, group in scored.groupby("arm", sort=False):
        accuracy[str(arm)] = tuple(ci(group[group["gold_bucket"] == b]) for b in buckets)
        spread = group.groupby("question_id")["correct"].agg(["min", "max", "size"])
        repeated = spread[spread["size"] > 1]
        flips[str(arm)] = float((repeated["max"] > repeated["min"]).mean()) if len(repeated) else float("nan")
    controlled = tuple(
        (str(arm), str(placement), ci(group))
        for (arm, placement), group in controlled_rows.groupby(["arm", "placement"], sort=False)
    )
    return PositionSummary(buckets, accuracy, flips, controlled, "rows")


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
