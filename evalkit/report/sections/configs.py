"""The configs-versus-baseline table: the best eligible configs, each paired with production, Holm-adjusted."""

from __future__ import annotations

from evalkit.report import fmt
from evalkit.report.html import Markup, join, section, table, tag
from evalkit.report.model import ReportModel
from evalkit.report.sections.recommendation import verdict

TOP_CONFIGS = 15
"""Rows of the configs-versus-baseline table (the Holm family is always every config of the grid)."""


def family_table(model: ReportModel) -> Markup:
    comparison = model.comparison
    metric, statistics = model.objective.primary, model.statistics
    m = model.review.measure(metric)
    if comparison is None:
        return section(
            "configs",
            "Configs against the baseline",
            [tag("p", "No baseline config in this grid, so no paired comparisons.", class_="note")],
        )
    summary = model.run.summary.set_index("config_id")
    family = dict(comparison.family)
    ordered = sorted(family, key=lambda c: -float(summary.loc[c, metric]))
    shown = ordered[:TOP_CONFIGS]
    for extra in (model.focus_id, comparison.baseline_id):
        if extra not in shown:
            shown.append(extra)
    rows = []
    for cid in shown:
        row = summary.loc[cid]
        c = family.get(cid)
        name = [tag("code", cid)]
        if cid == model.focus_id and cid != comparison.baseline_id:
            name.append(tag("span", " recommended", class_="pill good"))
        if cid == comparison.baseline_id:
            name.append(tag("span", " baseline", class_="pill neutral"))
        rows.append(
            [
                join(name),
                fmt.pct(row[metric]),
                fmt.pct(row.get("zero_hit_answerable")),
                fmt.count(row.get("stored_chars")),
                fmt.delta(c) if c else "—",
                fmt.p_value(c.p_value) if c else "—",
                fmt.p_value(c.p_adjusted) if c else "—",
                verdict(c, m, 1 - statistics.level, adjusted=True) if c else "",
            ]
        )
    note = (
        f"{len(shown)} of {len(family)} configs shown, best {m.label} first. Differences are paired, "
        f"{fmt.resampled(statistics.cluster_by)} (bootstrap, {statistics.n_resamples} resamples, seed "
        f"{statistics.seed}: the smallest p it can "
        f"show is {fmt.p_value(2 / (statistics.n_resamples + 1))}); Holm's correction runs over all {len(family)} "
        "comparisons with the baseline."
    )
    headers = [
        "config",
        m.label,
        "zero-hit (answerable)",
        "index chars",
        "Δ vs baseline [95% CI]",
        "p",
        "Holm p",
        "verdict",
    ]
    return section("configs", "Configs against the baseline", [table(headers, rows, numeric=(1, 2, 3, 4, 5, 6))], note)
