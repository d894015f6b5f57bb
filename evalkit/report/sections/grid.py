"""The grid read along its axes: metric heatmaps over chunk_size × overlap, curves against top_k and threshold."""

from __future__ import annotations

import numpy as np
import pandas as pd

from evalkit.records import THRESHOLD_ATOL
from evalkit.report import fmt, plots
from evalkit.report.html import Markup, img, section, table, tag
from evalkit.report.model import ReportModel
from evalkit.run import files
from evalkit.run.review import Review

FALLBACK_MEASURES = ("recall", "context_precision", "ndcg", "mrr", "precision", "zero_hit_answerable")
"""The grid's measures for a review.json written before it named them (the registry's ``REPORTED`` since)."""


def heatmap_measures(review: Review) -> tuple[str, ...]:
    """The measures review.json says the report shows, without the unanswerable-only ones (a grid of misses)."""
    named = review.reported or FALLBACK_MEASURES
    return tuple(n for n in named if n not in ("zero_hit_unanswerable", "hit"))


def _label(review: Review, name: str, k: int) -> str:
    return review.measure(name).label.replace("@k", f"@{k}")


def grid(model: ReportModel) -> Markup:
    summary, row = model.run.summary, model.rec_row
    k, t = int(row["top_k"]), float(row["threshold"])
    at_t = np.isclose(summary["threshold"].astype(float), t, rtol=0, atol=THRESHOLD_ATOL)
    at = summary[(summary["top_k"] == k) & at_t]
    grids = {}
    lower = set()
    for name in heatmap_measures(model.review):
        if name not in at.columns:
            continue
        title = _label(model.review, name, k)
        grids[title] = at.pivot_table(index="chunk_size", columns="chunk_overlap", values=name, aggfunc="first")
        if not model.review.measure(name).higher_is_better:
            lower.add(title)
    marks = {"recommended": (int(row["chunk_size"]), int(row["chunk_overlap"]))}
    note = f"Means over answerable questions at top_k {k} and threshold {fmt.threshold(t)} (the recommended slice)."
    if model.baseline_id is not None:
        base = model.run.config_row(model.baseline_id)
        if int(base["top_k"]) == k and abs(float(base["threshold"]) - t) < 1e-9:
            marks["baseline"] = (int(base["chunk_size"]), int(base["chunk_overlap"]))
        else:
            where = f"top_k {int(base['top_k'])}, threshold {fmt.threshold(float(base['threshold']))}"
            note += f" The baseline sits at {where}."
    if model.review.collapsed_text:  # the grid's duplicates, named: they are not distinct configs
        note += f" {model.review.collapsed_text[0].upper()}{model.review.collapsed_text[1:]}."
    if _degenerate(grids):
        return section("grid", "The grid: chunk_size × overlap", [_grid_table(model.review, at, k, marks)], note)
    png = plots.draw(lambda: plots.heatmaps(grids, marks, lower), model.font)
    alt = "Heatmaps of " + ", ".join(grids) + " by chunk_size and chunk_overlap"
    return section("grid", "The grid: chunk_size × overlap", [img(png, alt)], note)


def _degenerate(grids: dict) -> bool:
    """A heatmap with one chunk_size or one overlap is a strip of cells whose colour scale means nothing."""
    return not grids or any(g.shape[0] < 2 or g.shape[1] < 2 for g in grids.values())


def _grid_table(review: Review, at: pd.DataFrame, k: int, marks: dict[str, tuple[int, int]]) -> Markup:
    """The slice as a table: one row per (chunk_size, overlap), one column per measure, the marked configs named."""
    names = [n for n in heatmap_measures(review) if n in at.columns]
    rows = []
    for _, r in (
        at.sort_values(["chunk_size", "chunk_overlap"]).drop_duplicates(["chunk_size", "chunk_overlap"]).iterrows()
    ):
        cell = (int(r["chunk_size"]), int(r["chunk_overlap"]))
        which = ", ".join(label for label, at_cell in marks.items() if at_cell == cell)
        rows.append([str(cell[0]), str(cell[1]), *(fmt.pct(r[n]) for n in names), which])
    headers = ["chunk_size", "overlap", *(_label(review, n, k) for n in names), ""]
    return table(headers, rows, numeric=tuple(range(2, 2 + len(names))))


def top_k(model: ReportModel) -> Markup:
    row = model.rec_row
    chunking = str(row["chunking"])
    ks = sorted(int(k) for k in model.run.summary["top_k"].unique())
    if len(ks) < 2:
        return section(
            "top-k",
            "recall and context precision against top_k",
            [
                tag(
                    "p",
                    f"The grid has one top_k ({ks[0]}): no curve to read. Sweep several, e.g. top_k=[1,3,5,10].",
                    class_="note",
                )
            ],
        )
    panels = {}
    vlines = {}
    for name, curves in model.k_curves.items():
        series = []
        for c in curves:
            # One coloured, labelled line per chunking (a legend entry each); the band only on the focus one.
            if c.intervals is not None:
                series.append(plots.series_from_intervals(f"{c.chunking} (95% CI)", c.x, c.intervals))
            else:
                series.append(plots.Series(c.chunking, c.x, c.means))
        title = model.review.measure(name).label
        panels[title] = series
        if model.plateaus.get(name) is not None:
            vlines[title] = (float(model.plateaus[name]), f"plateau k={model.plateaus[name]:g}")
    png = plots.draw(lambda: plots.lines(panels, "top_k", vlines=vlines, log_x=True), model.font)
    rows = []
    for name, steps in model.k_steps.items():
        for s in steps:
            plateau = model.plateaus.get(name)
            rows.append(
                [
                    model.review.measure(name).label,
                    f"{s.frm:g} → {s.to:g}",
                    fmt.delta(s.comparison),
                    "within noise" if s.comparison.delta_low <= 0 else "gain",
                    "← plateau" if plateau is not None and abs(s.frm - plateau) < 1e-9 else "",
                ]
            )
    words = []
    for name, plateau in model.plateaus.items():
        label = model.review.measure(name).label
        words.append(
            f"{label}: plateau at top_k {plateau:g}"
            if plateau is not None
            else f"{label}: still gaining at the largest top_k of the grid"
        )
    note = (
        f"Chunking {chunking} (with its 95% band) at threshold {fmt.threshold(float(row['threshold']))}; every "
        "other chunking its own labelled line. "
        "Plateau: the smallest k after which the next k adds less than the noise (the paired 95% CI of the gain "
        f"reaches 0). Bands and intervals {fmt.resampled(model.statistics.cluster_by)}. " + "; ".join(words) + "."
    )
    body = [
        img(png, "recall@k and context precision@k against top_k"),
        table(["measure", "top_k step", "gain [95% CI]", "verdict", "plateau"], rows, numeric=(2,)),
    ]
    return section("top-k", "recall and context precision against top_k", body, note)


def zero_hit(model: ReportModel) -> Markup:
    answerable, unanswerable = model.zero_curves
    if len(answerable.x) < 2:
        return section(
            "zero-hit",
            "Zero-hit rate against threshold",
            [
                tag(
                    "p",
                    "The grid has one threshold: no curve to read. Sweep several (the retriever's own grid: "
                    "threshold=null).",
                    class_="note",
                )
            ],
        )
    series = []
    for label, c in (("answerable: misses", answerable), ("unanswerable: correct abstentions", unanswerable)):
        if c.intervals is not None and any(i is not None for i in c.intervals):
            series.append(plots.series_from_intervals(label, c.x, c.intervals))
    if not series:
        return section("zero-hit", "Zero-hit rate against threshold", [tag("p", "No zero-hit values.", class_="note")])
    calibrated = {}
    if model.calibrated is not None:
        calibrated["zero-hit rate"] = (model.calibrated, f"calibrated {model.calibrated:.3g}")
    png = plots.draw(lambda: plots.lines({"zero-hit rate": series}, "threshold", vlines=calibrated), model.font)
    note = (
        f"Chunking {model.rec_row['chunking']}, top_k {int(model.rec_row['top_k'])}: share of questions with no "
        "candidate at or above the threshold (nothing returned). On answerable questions that is a miss; on "
        "unanswerable ones the right outcome. Bands: 95% bootstrap CIs, "
        f"{fmt.resampled(model.statistics.cluster_by)}."
    )
    if model.calibrated is not None:
        note += f" Marked: the calibrated threshold {model.calibrated:.3g} ({files.CALIBRATION_TABLE})."
    return section("zero-hit", "Zero-hit rate against threshold", [img(png, "zero-hit rate against threshold")], note)
