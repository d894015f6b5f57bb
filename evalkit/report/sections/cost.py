"""Cost against quality: the Pareto front of $/query against the objective, and stuffing against retrieving."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from evalkit.report import fmt
from evalkit.report.experiments import pareto_front
from evalkit.report.html import Markup, join, no_data, section, table, tag
from evalkit.report.model import ReportModel
from evalkit.run import files


def cost(model: ReportModel) -> Markup:
    source = files.COST
    if not model.run.has_cost:
        return section(source.key, source.title, [no_data(source.where, source.how_to_get)])
    quality = model.objective.primary
    column = files.COST_PER_QUERY
    points = model.run.summary
    if column not in points.columns:
        means = model.run.results.groupby("config_id")[column].mean().rename(column)
        points = points.merge(means, left_on="config_id", right_index=True, how="left")
    front = pareto_front(points, column, quality)
    highlight = {model.focus_id: "recommended"}
    if model.baseline_id:
        highlight[model.baseline_id] = "baseline"
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
        table(["config", "role", model.review.measure(quality).label, "$ / query", "$ / day"], rows, numeric=(2, 3, 4)),
    ]
    estimated = bool(points.get("cost_estimated", pd.Series([False])).astype(bool).any())
    model_name = str(points["cost_model"].iloc[0]) if "cost_model" in points.columns else "the target model"
    volume = points["queries_per_day"].iloc[0] if "queries_per_day" in points.columns else None
    note = (
        f"Each config priced as the generation call it feeds on {model_name}: system prompt, question and the chunks "
        f"it returned"
        + (f", at {fmt.count(volume)} queries per day" if volume is not None else "")
        + (" (token counts are local estimates)" if estimated else "")
        + f". {len(front)} configs on the Pareto front: none cheaper is at least as good (plotted, every config "
        "labelled, in the Frontier section)."
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
