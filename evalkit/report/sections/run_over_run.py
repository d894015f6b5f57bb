"""Run over run: this run against an earlier one (metric deltas, largest recall changes, flipped questions)."""

from __future__ import annotations

from typing import Any

import numpy as np

from evalkit.report import fmt
from evalkit.report.html import Markup, section, table, tag
from evalkit.report.model import ReportModel
from evalkit.run.comparison import RunDelta

MOST_FLIPS = 200
"""Rows of the flipped-questions table (the heading counts them all)."""
INTERVAL_NOTE = (
    "Δ in percentage points, now minus earlier. [low, high]: the paired 95% bootstrap interval of the "
    "difference over the questions both runs scored (n paired), {unit}; an interval that spans 0 is within noise."
)


def _not_compared(model: ReportModel) -> Markup:
    return section(
        "compare",
        "Run over run",
        [
            tag(
                "p",
                [
                    "Not compared with an earlier run. To see per-metric deltas and flipped questions: ",
                    tag("code", f"python -m evalkit.report {model.run.root} --compare reports/<earlier_run_id>"),
                ],
                class_="nodata",
            )
        ],
    )


def _matching(delta: RunDelta) -> Markup:
    return tag(
        "p",
        (
            f"Against {delta.earlier_id}: {delta.n_matching} matching configs ({delta.only_now} only in this run, "
            f"{delta.only_earlier} only in the earlier one)."
            + (
                ""
                if delta.same_labelset
                else " The labelled set differs (fingerprint changed): questions were matched "
                "by id; numbers move with the set as well as the config."
            )
        ),
    )


def _deltas(model: ReportModel, delta: RunDelta) -> list[Markup]:
    """Every metric of the recommended and baseline configs, then the configs whose recall moved most."""
    focus = [c for c in (model.focus_id, model.baseline_id) if c]
    frame = delta.deltas
    if frame.empty:
        return []
    pick = frame[frame["config_id"].isin(focus)]
    movers = (
        frame[frame["metric"] == "recall"]
        .assign(size=lambda f: f["delta"].abs())
        .sort_values("size", ascending=False)
        .head(10)
    )
    shown = [c for c in focus if c in set(pick["config_id"])]
    cells = {(r.config_id, r.metric): r for r in pick.itertuples(index=False)}
    rows = []
    for metric in dict.fromkeys(pick["metric"]):
        row: list[str] = [metric]
        for cid in shown:
            r = cells.get((cid, metric))
            row.append(f"{fmt.pct(r.earlier)} → {fmt.pct(r.now)} ({_change(r)})" if r else "n/a")
        rows.append(row)
    labels = {model.focus_id: "recommended", model.baseline_id: "baseline"}
    headers = ["metric", *[f"{labels.get(c, c)}: earlier → now (Δ points [paired 95% CI])" for c in shown]]
    moved = [
        [tag("code", r.config_id), fmt.pct(r.earlier), fmt.pct(r.now), fmt.signed_points(r.delta)]
        for r in movers.itertuples(index=False)
    ]
    return [
        tag("h3", "Recommended and baseline configs"),
        tag("p", " · ".join(f"{labels.get(c, c)} = {c}" for c in shown), class_="note"),
        table(headers, rows, numeric=tuple(range(1, len(headers)))),
        tag("p", INTERVAL_NOTE.format(unit=fmt.resampled(model.statistics.cluster_by)), class_="note"),
        tag("h3", "Largest recall changes"),
        table(["config", "earlier", "now", "Δ points"], moved, numeric=(1, 2, 3)),
    ]


def _change(r: Any) -> str:
    """``+3.0 [−1.0, +7.0], 40 paired``; the paired delta named apart when the runs scored other questions too."""
    change = fmt.signed_points(r.delta)
    if not r.n_paired or not np.isfinite(r.delta_low):
        return change
    bounds = f"[{fmt.signed_points(r.delta_low)}, {fmt.signed_points(r.delta_high)}]"
    if np.isclose(r.delta_paired, r.delta, rtol=0.0, atol=1e-12):
        return f"{change} {bounds}, {int(r.n_paired)} paired"
    return f"{change}; paired {fmt.signed_points(r.delta_paired)} {bounds} over {int(r.n_paired)} shared questions"


def _flips(model: ReportModel, delta: RunDelta) -> list[Markup]:
    questions = model.labelset.questions if model.labelset else {}
    flips = [
        [
            tag("code", f.config_id),
            tag("code", f.question_id),
            questions[f.question_id].question if f.question_id in questions else "",
            "miss → hit" if f.after > f.before else "hit → miss",
        ]
        for f in delta.flips[:MOST_FLIPS]
    ]
    return [
        tag("h3", f"Questions that flipped (hit@k changed): {len(delta.flips)}"),
        table(["config", "question", "text", "change"], flips) if flips else tag("p", "None.", class_="note"),
    ]


def run_over_run(model: ReportModel) -> Markup:
    delta = model.run_delta
    if delta is None:
        return _not_compared(model)
    if delta.note is not None:  # nothing to compare: say so, never "0 flipped" (which reads as "no change")
        return section("compare", "Run over run", [_matching(delta), tag("p", delta.note, class_="nodata")])
    body = [_matching(delta), *_deltas(model, delta), *_flips(model, delta)]
    return section("compare", "Run over run", body)
