"""The frontier: the objective's measure against $/query and against prompt tokens, every config a labelled point."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from evalkit.report import plots
from evalkit.report.experiments import pareto_front
from evalkit.report.frontier_plot import FrontierPoint, frontier_figure
from evalkit.report.html import Markup, img, join, section
from evalkit.report.model import ReportModel
from evalkit.run import files

PROMPT_TOKENS = "mean_prompt_tokens"
"""Summary column of prompt tokens per query, when the sweep writes it; else question + context tokens."""


def short_label(row: Mapping[str, object], many_thresholds: bool) -> str:
    """``s512 o64 k5`` (and ``t10`` when the grid has several thresholds)."""
    text = f"s{int(row['chunk_size'])} o{int(row['chunk_overlap'])} k{int(row['top_k'])}"  # type: ignore[call-overload]
    return text + (f" t{float(row['threshold']):g}" if many_thresholds else "")  # type: ignore[arg-type]


def _prompt_tokens(summary: pd.DataFrame) -> tuple[pd.Series | None, str]:
    if PROMPT_TOKENS in summary.columns:
        return summary[PROMPT_TOKENS].astype(float), "prompt tokens per query"
    if {"mean_returned_tokens", "mean_question_tokens"} <= set(summary.columns):
        total = summary["mean_returned_tokens"].astype(float) + summary["mean_question_tokens"].astype(float)
        return total, "question + context tokens per query"
    if "mean_returned_tokens" in summary.columns:
        return summary["mean_returned_tokens"].astype(float), "context tokens per query"
    return None, ""


def _cost(model: ReportModel) -> pd.Series | None:
    summary, results = model.run.summary, model.run.results
    column = files.COST_PER_QUERY
    if column in summary.columns:
        return summary[column].astype(float)
    if column in results.columns:
        means = results.groupby("config_id")[column].mean()
        return summary["config_id"].map(means).astype(float)
    return None


def _points(model: ReportModel, x: pd.Series, quality: str) -> tuple[list[FrontierPoint], tuple[str, ...]]:
    summary = model.run.summary
    frame = pd.DataFrame({"config_id": summary["config_id"], "x": x.to_numpy(), quality: summary[quality]})
    front = pareto_front(frame, "x", quality)
    marks = {model.focus_id: "recommended"}
    if model.baseline_id is not None:
        marks[model.baseline_id] = "production"  # when production is kept, the one point is production
    many = summary["threshold"].nunique() > 1
    points = [
        FrontierPoint(
            config_id=str(row["config_id"]),
            label=short_label(row, many),
            x=float(xv),
            y=float(row[quality]),
            on_front=str(row["config_id"]) in front,
            mark=marks.get(str(row["config_id"])),
        )
        for row, xv in zip(summary.to_dict("records"), x.to_numpy(), strict=True)
        if np.isfinite(xv) and np.isfinite(float(row[quality]))
    ]
    return points, front


def frontier(model: ReportModel) -> Markup:
    quality = model.objective.primary
    label = model.review.measure(quality).label
    images: list[Markup] = []
    notes: list[str] = []
    cost = _cost(model)
    if cost is not None and cost.notna().any():
        points, front = _points(model, cost, quality)
        png = plots.draw(
            lambda: frontier_figure(points, "$ per query", f"{label} (%)", f"{label} against $ per query"), model.font
        )
        images.append(img(png, f"{label} against dollars per query, every config labelled"))
        notes.append(f"{len(front)} configs on the $ front")
    else:
        notes.append(f"no $/query in this run ({files.COST.how_to_get})")
    tokens, token_label = _prompt_tokens(model.run.summary)
    if tokens is not None and tokens.notna().any():
        points, front = _points(model, tokens, quality)
        png = plots.draw(
            lambda: frontier_figure(points, token_label, f"{label} (%)", f"{label} against {token_label}"), model.font
        )
        images.append(img(png, f"{label} against {token_label}, every config labelled"))
        notes.append(f"{len(front)} on the token front")
    note = (
        f"Every config of the grid is a point ({len(model.run.summary)} configs; labels: chunk_size s, overlap o, "
        "top_k k, threshold t). Blue line: the Pareto front (no config is cheaper and at least as good). Red star: "
        "the recommendation; black diamond: production. Labels are printed where they fit; the front and the two "
        "marked configs always carry one; points that coincide share a label (+n: that many more). "
        + "; ".join(notes)
        + ". Values from "
        + files.SUMMARY
        + "."
    )
    body: list[Markup] = [join(images)] if images else []
    return section("frontier", "Frontier: quality against cost", body, note)
