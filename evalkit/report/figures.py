"""Sections built around a plot: the grid, top_k, zero-hit, index size, labelled set and optional data."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from evalkit.report import fmt, plots
from evalkit.report.experiments import pareto_front
from evalkit.report.html import Markup, img, join, no_data, section, table, tag
from evalkit.report.measures import measure
from evalkit.report.model import ReportModel
from evalkit.report.sections import labelset_tables
from evalkit.run import files

HEATMAP_MEASURES = ("recall", "context_precision", "ndcg", "mrr", "precision", "zero_hit_answerable")


def _label(name: str, k: int) -> str:
    return measure(name).label.replace("@k", f"@{k}")


def grid(model: ReportModel) -> Markup:
    summary, row = model.run.summary, model.rec_row
    k, t = int(row["top_k"]), float(row["threshold"])
    at = summary[(summary["top_k"] == k) & np.isclose(summary["threshold"].astype(float), t, rtol=0, atol=1e-9)]
    grids = {}
    lower = set()
    for name in HEATMAP_MEASURES:
        if name not in at.columns:
            continue
        title = _label(name, k)
        grids[title] = at.pivot_table(index="chunk_size", columns="chunk_overlap", values=name, aggfunc="first")
        if not measure(name).higher_is_better:
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
    png = plots.draw(lambda: plots.heatmaps(grids, marks, lower), model.font)
    alt = "Heatmaps of " + ", ".join(grids) + " by chunk_size and chunk_overlap"
    return section("grid", "The grid: chunk_size × overlap", [img(png, alt)], note)


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
            if c.intervals is not None:
                series.append(plots.series_from_intervals(f"{c.chunking} (95% CI)", c.x, c.intervals))
            else:
                series.append(plots.Series("other chunkings", c.x, c.means, emphasis=False))
        title = measure(name).label
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
                    measure(name).label,
                    f"{s.frm:g} → {s.to:g}",
                    fmt.delta(s.comparison),
                    "within noise" if s.comparison.delta_low <= 0 else "gain",
                    "← plateau" if plateau is not None and abs(s.frm - plateau) < 1e-9 else "",
                ]
            )
    words = []
    for name, plateau in model.plateaus.items():
        label = measure(name).label
        words.append(
            f"{label}: plateau at top_k {plateau:g}"
            if plateau is not None
            else f"{label}: still gaining at the largest top_k of the grid"
        )
    note = (
        f"Chunking {chunking} at threshold {fmt.threshold(float(row['threshold']))}; other chunkings in grey. "
        "Plateau: the smallest k after which the next k adds less than the noise (the paired 95% CI of the gain "
        "reaches 0). " + "; ".join(words) + "."
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
        "unanswerable ones the right outcome. Bands: 95% bootstrap CIs."
    )
    if model.calibrated is not None:
        note += f" Marked: the calibrated threshold {model.calibrated:.3g} ({files.CALIBRATION_TABLE})."
    return section("zero-hit", "Zero-hit rate against threshold", [img(png, "zero-hit rate against threshold")], note)


def index_size(model: ReportModel) -> Markup:
    info = model.run.chunkings.merge(
        model.run.summary.drop_duplicates("chunking")[["chunking", "chunk_size", "chunk_overlap"]],
        on="chunking",
        how="left",
        suffixes=("", "_s"),
    )
    body: list[Markup] = []
    if {"n_chunks", "stored_chars"} <= set(info.columns):
        panels = {}
        for column, title in (("n_chunks", "chunks"), ("stored_chars", "stored characters")):
            series = []
            for size, group in info.sort_values("chunk_overlap").groupby("chunk_size"):
                series.append(
                    plots.Series(
                        f"chunk_size {size}",
                        tuple(group["chunk_overlap"].astype(float)),
                        tuple(group[column].astype(float)),
                    )
                )
            panels[title] = series
        png = plots.draw(lambda: plots.lines(panels, "chunk_overlap", percent=False), model.font)
        body.append(img(png, "chunk count and index size against overlap"))
    columns = [
        c
        for c in ("chunking", "n_chunks", "stored_chars", "indexed_chars", "gold_cut_share", "texts_embedded")
        if c in info.columns
    ]
    rows = []
    for r in info.sort_values(["chunk_size", "chunk_overlap"]).to_dict("records"):
        rows.append(
            [r["chunking"]] + [fmt.pct(r[c]) if c == "gold_cut_share" else fmt.count(r[c]) for c in columns[1:]]
        )
    body.append(table(columns, rows, numeric=tuple(range(1, len(columns)))))
    note = "Index cost by chunking. gold_cut_share: answerable questions whose answer span no single chunk holds whole."
    return section("index", "Chunk count and index size against overlap", body, note)


def labelset(model: ReportModel) -> Markup:
    one = model.run.results[model.run.results["config_id"] == model.rec.config_id]
    panels: dict[str, dict[str, float]] = {}
    for column in ("lang", "answerable", "evidence_mode"):
        if column in one.columns:
            panels[column] = {str(k): float(v) for k, v in one[column].astype(str).value_counts().items()}
    if model.labelset is not None:
        for key in _plottable_tags(model):
            counter = Counter(str(q.tags[key]) for q in model.labelset.questions.values() if key in q.tags)
            panels[f"tag: {key}"] = {k: float(v) for k, v in counter.most_common(10)}
    body: list[Markup] = []
    if panels:
        png = plots.draw(lambda: plots.bars(panels), model.font)
        body.append(img(png, "questions by " + ", ".join(panels)))
    body.append(Markup('<div class="grid2">') + Markup("".join(labelset_tables(model))) + Markup("</div>"))
    note = f"{model.run.labelset_name}: {fmt.count(len(one))} questions scored."
    if model.font.warning:
        note += f" Warning: {model.font.warning}."
    return section("labelset", "The labelled set", body, note)


def _plottable_tags(model: ReportModel, most: int = 2) -> list[str]:
    """Tags with 2 to 12 distinct scalar values (other than lang), most widely used first."""
    assert model.labelset is not None
    values: dict[str, set[str]] = {}
    uses: Counter[str] = Counter()
    for q in model.labelset.questions.values():
        for key, value in q.tags.items():
            if key == "lang" or isinstance(value, list | dict):
                continue
            values.setdefault(key, set()).add(str(value))
            uses[key] += 1
    keep = [k for k, _ in uses.most_common() if 2 <= len(values[k]) <= 12]
    return keep[:most]


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


def position(model: ReportModel) -> Markup:
    source = files.POSITION
    if not model.run.has_position:
        return section(source.key, source.title, [no_data(source.where, source.how_to_get)])
    summary = model.position
    if summary is None:
        return section(
            source.key,
            source.title,
            [
                tag(
                    "p",
                    f"{source.where}: columns missing (arm, placement, gold_bucket, accuracy / correct).",
                    class_="nodata",
                )
            ],
        )
    body: list[Markup] = []
    if summary.accuracy and summary.buckets:
        png = plots.draw(lambda: plots.grouped_bars(summary.buckets, summary.accuracy), model.font)
        body.append(img(png, "accuracy by gold position per arm"))
    rows = [
        [arm, *[fmt.interval(c) for c in cis], fmt.pct(summary.flip_rate.get(arm))]
        for arm, cis in summary.accuracy.items()
    ]
    body.append(
        table(
            ["arm (shuffled order)", *summary.buckets, "flip rate across repeats"],
            rows,
            numeric=tuple(range(1, 2 + len(summary.buckets))),
        )
    )
    if summary.controlled:
        rows = [[arm, placement, fmt.interval(ci)] for arm, placement, ci in summary.controlled]
        body.append(tag("h3", "Gold placed deliberately"))
        body.append(table(["arm", "placement", "accuracy [95% CI]"], rows, numeric=(2,)))
    note = (
        f"From {files.POSITION_SUMMARY if summary.source == 'summary' else files.POSITION_ROWS}. Accuracy: each "
        "question's share of correct answers, averaged over questions, with a 95% bootstrap CI over questions; "
        "head/mid/tail is the third of the context the gold sat in. Flip rate: share of questions whose "
        "correctness changed across shuffled repeats."
    )
    return section(source.key, source.title, body, note)


def cost(model: ReportModel) -> Markup:
    source = files.COST
    if not model.run.has_cost:
        return section(source.key, source.title, [no_data(source.where, source.how_to_get)])
    quality = model.rec.objective.metric
    column = files.COST_PER_QUERY
    points = model.run.summary
    if column not in points.columns:
        means = model.run.results.groupby("config_id")[column].mean().rename(column)
        points = points.merge(means, left_on="config_id", right_index=True, how="left")
    front = pareto_front(points, column, quality)
    highlight = {model.rec.config_id: "recommended"}
    if model.baseline_id:
        highlight[model.baseline_id] = "baseline"
    png = plots.draw(lambda: plots.pareto(points, front, column, quality, highlight), model.font)
    by_id = points.set_index("config_id")
    rows = []
    for cid in dict.fromkeys([*front, *highlight]):
        r = by_id.loc[cid]
        label = " ".join(v for k, v in highlight.items() if k == cid)
        rows.append(
            [
                tag("code", cid),
                label + (" (on the front)" if cid in front and label else "" if cid in front else " (off the front)"),
                fmt.pct(r[quality]),
                fmt.money(r[column]),
                fmt.money(r.get(files.COST_PER_DAY)) if files.COST_PER_DAY in by_id.columns else "n/a",
            ]
        )
    body: list[Markup] = [
        img(png, "cost against quality with the Pareto front"),
        table(["config", "role", measure(quality).label, "$ / query", "$ / day"], rows, numeric=(2, 3, 4)),
    ]
    estimated = bool(points.get("cost_estimated", pd.Series([False])).astype(bool).any())
    model_name = str(points["cost_model"].iloc[0]) if "cost_model" in points.columns else "the target model"
    volume = points["queries_per_day"].iloc[0] if "queries_per_day" in points.columns else None
    note = (
        f"Each config priced as the generation call it feeds on {model_name}: system prompt, question and the chunks "
        f"it returned"
        + (f", at {fmt.count(volume)} queries per day" if volume is not None else "")
        + (" (token counts are local estimates)" if estimated else "")
        + f". {len(front)} configs on the Pareto front: none cheaper is at least as good."
    )
    decision = (model.run.costs or {}).get("decision")
    if isinstance(decision, dict):
        body.append(tag("h3", "Stuff the whole corpus, or retrieve?"))
        body.append(stuffing_table(model.run.costs or {}, decision))
    return section(source.key, source.title, body, note)


def stuffing_table(costs: Mapping[str, Any], decision: Mapping[str, Any]) -> Markup:
    """costs.json's decision: per query and per day for retrieval and for stuffing (uncached / cached)."""

    def usd(key: str) -> str:
        value = decision.get(key)
        return fmt.money(value.get("usd")) if isinstance(value, dict) else "n/a"

    rows = [
        ["retrieve top_k " + str(costs.get("k", "")), usd("retrieve_per_query"), usd("retrieve_daily")],
        ["stuff the corpus, uncached", usd("stuff_uncached_per_query"), usd("stuff_uncached_daily")],
        ["stuff the corpus, prompt-cached (hit)", usd("stuff_cache_hit_per_query"), usd("stuff_cached_daily")],
    ]
    words = (
        f"Corpus {fmt.count(costs.get('corpus_tokens'))} tokens ({decision.get('stuffing', 'n/a')} the window); "
        f"cheapest: {decision.get('cheapest', 'n/a')}."
    )
    return join([table(["arm", "$ / query", "$ / day"], rows, numeric=(1, 2)), tag("p", words, class_="note")])


def chunk_health(model: ReportModel) -> Markup:
    source = files.CHUNK_HEALTH
    report = model.run.chunk_health
    if report is None:
        return section(source.key, source.title, [no_data(source.where, source.how_to_get)])
    rows = []
    for f in report.get("findings", []) if isinstance(report.get("findings"), list) else []:
        examples = [e.get("detail", e) if isinstance(e, dict) else e for e in f.get("examples") or []]
        rows.append(
            [
                f.get("chunking", ""),
                f.get("rule", ""),
                fmt.count(f.get("count")),
                fmt.pct(f.get("share")) if f.get("share") is not None else "",
                f.get("message", ""),
                " · ".join(str(e) for e in examples[:3]),
            ]
        )
    body = [
        table(["chunking", "rule", "count", "share", "finding", "examples"], rows, numeric=(2, 3))
        if rows
        else tag("p", "No findings.", class_="note")
    ]
    return section(source.key, source.title, body, f"From {source.where}.")
