"""The threshold the calibration advises, as the report phrases it (pure given the run's frames; in review.json).

Reads the advice columns of calibration.parquet (evalkit/scoring/calibration.py): "threshold" with
the highest value whose zero-hit on answerable questions stays within the target, or "no threshold
for this score" and why. The former calibrated value (the upper edge of the overlap interval) is
never advised: on real sets it leaves 45-87% of answerable questions without context.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from evalkit.report import fmt
from evalkit.report.decision import Objective
from evalkit.review.advice_gate import GateWord
from evalkit.run import files
from evalkit.run.review import CalibrationAdvice
from evalkit.scoring.thresholds import (
    DEFAULT_ZERO_HIT_TARGET,
    MIN_AUC,
    WIDEN_POOL,
    advise,
    floor_significant,
    no_filter_threshold,
    zero_hit_at,
)

WIDEN = WIDEN_POOL
"""The seed's maintenance rule, one wording for the scoring, the report and the replay."""


@dataclass(frozen=True)
class ThresholdAdvice:
    """The calibration's advice for the recommended chunking's score (class ``all``), as the report phrases it."""

    threshold: float | None
    """The value to set (rounded down, so it keeps the zero-hit target); None: no threshold."""
    fix: str
    """"set threshold to X: ..." or "no threshold for this score (why): keep 0; ..."."""
    arithmetic: str


def calibration_rows(calibration: pd.DataFrame | None, chunkings: pd.DataFrame) -> pd.DataFrame | None:
    """Calibration rows with the advice columns: calibration.parquet, else the per-chunking info files."""
    if calibration is not None and "advice" in calibration.columns:
        return calibration
    if "calibration" in chunkings.columns:
        rows = [dict(r) for cell in chunkings["calibration"] if isinstance(cell, list | tuple) for r in cell]
        if rows and "advice" in rows[0]:
            return pd.DataFrame(rows)
    return None


def why_not(row: Mapping[str, Any]) -> str:
    auc = float(row.get("auc_answerable_vs_unanswerable", np.nan))
    if not row.get("n_unanswerable"):
        return "no unanswerable questions"
    if not auc >= MIN_AUC:
        return f"AUC {auc:.2f} < {MIN_AUC:g}" if np.isfinite(auc) else "no AUC"
    return str(row.get("advice_reason", "")).split(";")[0]


def threshold_advice(
    calibration: pd.DataFrame | None, results: pd.DataFrame, rec: Mapping[str, Any], objective: Objective
) -> ThresholdAdvice | None:
    """What the calibration advises for the recommended chunking; None without advice columns.

    The target is the objective's zero-hit cap (recommendation.json's); when it is stricter than the one the sweep
    calibrated with, the advice is recomputed from the results' best scores with the stricter cap.
    """
    if calibration is None or "advice" not in calibration.columns:
        return None
    mine = calibration[(calibration["chunking"] == rec["chunking"]) & (calibration["question_class"] == "all")]
    if mine.empty:
        return None
    row = mine.iloc[0].to_dict()
    cap = objective.zero_hit_answerable_max
    target = float(row.get("zero_hit_target", DEFAULT_ZERO_HIT_TARGET))
    own = results[results["config_id"] == rec["config_id"]]
    best = own["best_score"].to_numpy(dtype=float) if "best_score" in own.columns else None
    ans = own["answerable"].to_numpy(dtype=bool)
    floor = calibration_floor(calibration, str(rec["chunking"]), best)
    if cap is not None and cap < target and best is not None:
        redo = advise(best[ans], best[~ans], floor, cap, MIN_AUC)
        row = {**row, "advice": redo.advice, "advised_threshold": redo.advised_threshold, "advice_reason": redo.reason}
        target = cap
    auc = fmt.num(row.get("auc_answerable_vs_unanswerable"), 2)
    arithmetic = (
        f"{row['stage']} score, chunking {row['chunking']}, all questions: AUC answerable vs unanswerable {auc}, "
        f"best relevant vs best irrelevant {fmt.num(row.get('auc_relevant_vs_irrelevant'), 2)}; "
        f"{fmt.count(row.get('n_answerable'))} answerable, {fmt.count(row.get('n_unanswerable'))} unanswerable; "
        f"zero-hit target {target:.0%} ({files.CALIBRATION_TABLE})"
    )
    if row["advice"] != "threshold":
        keep = f"{floor:g}"
        return ThresholdAdvice(None, f"no threshold for this score ({why_not(row)}): keep {keep}; {WIDEN}", arithmetic)
    shown = floor_significant(float(row["advised_threshold"]))
    if best is not None:  # the numbers at the value shown, not at the unrounded one
        zero, abstain = zero_hit_at(best[ans], shown), zero_hit_at(best[~ans], shown)
    else:
        zero, abstain = float(row["zero_hit_answerable_at_advised"]), float(row["abstention_at_advised"])
    fix = (
        f"set threshold to {shown:g}: zero-hit on answerable {fmt.pct(zero)} <= {target:.0%}, "
        f"abstains on {fmt.pct(abstain)} of unanswerable"
    )
    return ThresholdAdvice(shown, fix, arithmetic)


def calibration_floor(calibration: pd.DataFrame | None, chunking: str, best: np.ndarray | None = None) -> float:
    """The no-filtering threshold of a chunking: as a "no threshold" row recorded it, else from best scores, else 0."""
    if calibration is not None and "advice" in calibration.columns:
        rows = calibration[(calibration["chunking"] == chunking) & (calibration["advice"] != "threshold")]
        if not rows.empty:
            return float(rows["recommended_threshold"].iloc[0])
    return no_filter_threshold(best) if best is not None else 0.0


def _shown(value: Any) -> str:
    """A threshold rounded down, so the value shown keeps the zero-hit its row states."""
    x = float(value) if value is not None else np.nan
    return f"{floor_significant(x):g}" if np.isfinite(x) else "n/a"


AdviceVerdict = Callable[[str, float], GateWord | None]
"""(chunking, advised threshold) -> the gate's word on setting it at the recommended top_k (None: no gate)."""


def advice_cells(
    calibration: pd.DataFrame | None, verdict: AdviceVerdict | None = None
) -> tuple[CalibrationAdvice, ...]:
    """The advice, advised-threshold and recommended-threshold cells of every calibration.parquet row, in order.

    With ``verdict`` (the page's gate), a threshold is "advised" in the table only where the gate passes it (issue
    47: the table must not advise what a finding beside it refuses); one the gate fails says so, and a per-class
    threshold (the sweep scores one threshold for all questions) says it is not gated.
    """
    if calibration is None:
        return ()
    cells = []
    for r in calibration.to_dict("records"):
        advised = "advice" in r and r.get("advice") is not None
        advice = "n/a (older run)"  # runs written before the advice columns
        if advised:
            advice = "threshold" if r.get("advice") == "threshold" else f"no threshold ({why_not(r)})"
        if advice == "threshold" and verdict is not None:
            advice = _gated_cell(r, verdict)
        recommended = _shown(r.get("recommended_threshold")) if advised else "n/a"
        cells.append(CalibrationAdvice(advice, _shown(r.get("advised_threshold")), recommended))
    return tuple(cells)


def _gated_cell(row: Mapping[str, Any], verdict: AdviceVerdict) -> str:
    """The advice cell of a row advising a threshold, with the gate's word on it."""
    if str(row.get("question_class")) != "all":
        return "threshold for this class (not gated: the sweep scores one threshold for all questions)"
    value = float(row.get("advised_threshold", np.nan))
    word = verdict(str(row.get("chunking")), floor_significant(value)) if np.isfinite(value) else None
    if word is None or word.passed is None:
        return "threshold (not gated: not scored in this run)"
    return "threshold (gate PASS)" if word.passed else "not advised: fails the gate"
