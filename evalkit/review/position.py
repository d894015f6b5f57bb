"""The position experiment's accuracy by gold bucket, as review.json holds it (pure).

The experiment's own summary (position/summary.parquet, its intervals already bootstrapped) is read as
records; only when it is missing (an interrupted run) are the intervals computed here from its rows, resampling
the run's clusters as every other interval of the review does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from evalkit.review.analysis import as_interval
from evalkit.run.review import Interval, PositionSummary
from evalkit.scoring import compare

BUCKET_ORDER = ("head", "mid", "tail")
ROW_COLUMNS = ("question_id", "arm", "gold_bucket", "correct")
SUMMARY_COLUMNS = ("arm", "placement", "gold_bucket", "accuracy", "accuracy_low", "accuracy_high")
SHUFFLE = "shuffle"


def _interval(row: Mapping[str, object], level: float) -> Interval | None:
    mean = float(row["accuracy"])  # type: ignore[arg-type]
    if np.isnan(mean):
        return None
    n = int(row.get("n_questions", 0) or 0)  # type: ignore[call-overload]
    low, high = float(row["accuracy_low"]), float(row["accuracy_high"])  # type: ignore[arg-type]
    return Interval(mean, low, high, n, level, str(row.get("ci_method") or "percentile"))


def _ordered(present: Sequence[str]) -> tuple[str, ...]:
    kept = [b for b in BUCKET_ORDER if b in present]
    return tuple(kept + sorted(b for b in present if b not in BUCKET_ORDER and b not in ("all", "none")))


def position_from_summary(summary: pd.DataFrame, level: float) -> PositionSummary | None:
    """The experiment's own summary table read as records (its intervals are already bootstrapped)."""
    if not set(SUMMARY_COLUMNS) <= set(summary.columns):
        return None
    shuffled = summary[summary["placement"] == SHUFFLE]
    buckets = _ordered([str(b) for b in shuffled["gold_bucket"].unique()])
    accuracy: dict[str, tuple[Interval | None, ...]] = {}
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


def position_from_rows(rows: pd.DataFrame, settings: compare.Resampling) -> PositionSummary | None:
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

    def ci(frame: pd.DataFrame) -> Interval | None:
        shares = frame.groupby("question_id")["correct"].mean()
        if shares.empty:
            return None
        return as_interval(compare.mean_interval(shares.to_numpy(), settings, shares.index.to_numpy()))

    accuracy: dict[str, tuple[Interval | None, ...]] = {}
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
