"""Threshold calibration: per question class, the threshold that keeps answers, whether the score separates, and
the former overlap interval beside it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from evalkit.report import fmt, plots
from evalkit.report.html import Markup, img, no_data, section, table
from evalkit.report.model import ReportModel
from evalkit.run import files
from evalkit.run.review import CalibrationAdvice

HEADERS = (
    "chunking",
    "score",
    "class",
    "ans. / unans.",
    "AUC ans. vs unans.",
    "AUC rel. vs irrel.",
    "advice",
    "advised threshold",
    "zero-hit ans. at it",
    "abstention at it",
    "recommended threshold",
    "overlap",
    "overlap edge",
    "zero-hit ans. at edge",
)
NUMERIC = (3, 4, 5, 7, 8, 9, 10, 12, 13)


def _row(r: Mapping[str, Any], cells: CalibrationAdvice) -> list[str]:
    advised = "advice" in r and r.get("advice") is not None
    # Runs written before the advice columns: recommended_threshold was the overlap's upper edge.
    edge = r.get("overlap_threshold") if advised else r.get("recommended_threshold")
    edge_zero = r.get("zero_hit_answerable_at_overlap") if advised else r.get("zero_hit_answerable_at_recommended")
    return [
        str(r.get("chunking")),
        str(r.get("stage")),
        str(r.get("question_class")),
        f"{fmt.count(r.get('n_answerable'))} / {fmt.count(r.get('n_unanswerable'))}",
        fmt.num(r.get("auc_answerable_vs_unanswerable"), 2),
        fmt.num(r.get("auc_relevant_vs_irrelevant"), 2),
        cells.advice,
        cells.advised,
        fmt.pct(r.get("zero_hit_answerable_at_advised")),
        fmt.pct(r.get("abstention_at_advised")),
        cells.recommended,
        f"[{fmt.num(r.get('overlap_low'))}, {fmt.num(r.get('overlap_high'))}]",
        fmt.num(edge),
        fmt.pct(edge_zero),
    ]


def _note(target: float | None, stages: set[str], how_to_get: str, min_auc: float) -> str:
    cap = f"{target:.0%}" if target is not None and np.isfinite(target) else "the target"
    note = (
        f"Per question class: the advised threshold is the highest whose zero-hit on answerable questions (best "
        f"pool score below it) stays within {cap}; abstention is the share of unanswerable questions it leaves "
        f"without context. A threshold is advised only when the set has unanswerable questions and the best score "
        f"separates them from answerable ones (ROC AUC >= {min_auc:g}); otherwise the recommended threshold is the "
        "lowest score (no filtering), and when zero-hit rises without a gain, widen the candidate pool (pool_size) "
        "instead of lowering recall. Shown for continuity: the overlap interval (5th percentile of relevant-best to "
        "95th of irrelevant-best) and its upper edge, the former recommendation, with the zero-hit it costs."
    )
    if stages and "rerank" not in stages:
        note += (
            f" These are the retriever's scores ({', '.join(sorted(stages))}); to calibrate a reranker's score: "
            f"{how_to_get}."
        )
    return note


def calibration(model: ReportModel) -> Markup:
    source = files.RERANK
    table_ = model.run.calibration
    if table_ is None or table_.empty or "chunking" not in table_.columns:
        return section(source.key, source.title, [no_data(source.where, source.how_to_get)])
    chunkings = [str(model.rec_row["chunking"])]
    if model.baseline_id is not None:
        chunkings.append(str(model.run.config_row(model.baseline_id)["chunking"]))
    chunkings = list(dict.fromkeys(chunkings))
    shown = table_["chunking"].isin(chunkings).to_numpy()
    records = table_[shown].to_dict("records")
    cells = [c for c, keep in zip(model.review.calibration, shown, strict=True) if keep]
    body: list[Markup] = [table(HEADERS, [_row(r, c) for r, c in zip(records, cells, strict=True)], numeric=NUMERIC)]
    results = model.run.results
    if {"best_relevant_score", "best_irrelevant_score"} <= set(results.columns):
        mine = results[results["config_id"] == model.focus_id]
        thresholds = sorted(float(t) for t in model.run.summary["threshold"].unique())
        png = plots.draw(
            lambda: plots.score_histograms(
                mine["best_relevant_score"].tolist(),
                mine["best_irrelevant_score"].tolist(),
                thresholds,
                model.calibrated,
            ),
            model.font,
        )
        body.insert(0, img(png, "best relevant and best irrelevant score per question"))
    stages = {str(s) for s in table_["stage"].unique()} if "stage" in table_.columns else set()
    target = float(table_["zero_hit_target"].iloc[0]) if "zero_hit_target" in table_.columns else None
    return section(source.key, source.title, body, _note(target, stages, source.how_to_get, model.review.min_auc))
