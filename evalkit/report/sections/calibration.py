"""Threshold calibration: best relevant against best irrelevant score per question class, and the threshold."""

from __future__ import annotations

from evalkit.report import fmt, plots
from evalkit.report.html import Markup, img, no_data, section, table
from evalkit.report.model import ReportModel
from evalkit.run import files


def calibration(model: ReportModel) -> Markup:
    source = files.RERANK
    table_ = model.run.calibration
    if table_ is None or table_.empty or "chunking" not in table_.columns:
        return section(source.key, source.title, [no_data(source.where, source.how_to_get)])
    chunkings = [str(model.rec_row["chunking"])]
    if model.baseline_id is not None:
        chunkings.append(str(model.run.config_row(model.baseline_id)["chunking"]))
    chunkings = list(dict.fromkeys(chunkings))
    rows = []
    for r in table_[table_["chunking"].isin(chunkings)].to_dict("records"):
        rows.append(
            [
                r.get("chunking"),
                r.get("stage"),
                r.get("question_class"),
                f"{fmt.count(r.get('n_relevant_best'))} / {fmt.count(r.get('n_irrelevant_best'))}",
                f"[{fmt.num(r.get('overlap_low'))}, {fmt.num(r.get('overlap_high'))}]",
                "yes" if r.get("separable") else "no",
                fmt.num(r.get("recommended_threshold")),
                fmt.pct(r.get("zero_hit_answerable_at_recommended")),
                fmt.pct(r.get("zero_hit_unanswerable_at_recommended")),
            ]
        )
    headers = [
        "chunking",
        "score",
        "class",
        "rel / irrel",
        "overlap",
        "separable",
        "recommended threshold",
        "zero-hit ans.",
        "zero-hit unans.",
    ]
    body: list[Markup] = [table(headers, rows, numeric=(3, 4, 6, 7, 8))]
    results = model.run.results
    if {"best_relevant_score", "best_irrelevant_score"} <= set(results.columns):
        mine = results[results["config_id"] == model.rec.config_id]
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
    note = (
        "Per question class: the best relevant candidate's score against the best irrelevant one's. Where the two "
        "overlap (5th percentile of relevant-best to 95th of irrelevant-best) no threshold separates them; the "
        "recommended threshold is the overlap's upper edge, and its price is the zero-hit rate shown."
    )
    if stages and "rerank" not in stages:
        note += (
            f" These are the retriever's scores ({', '.join(sorted(stages))}); to calibrate a reranker's score: "
            f"{source.how_to_get}."
        )
    return section(source.key, source.title, body, note)
