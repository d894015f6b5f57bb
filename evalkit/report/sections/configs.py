"""The configs-versus-baseline table: the top tier (configs not shown worse than the best, as ties, cheapest
first) then the rest, each paired with production, Holm-adjusted. No strict ranking: most adjacent configs of
a grid are not separable, so the order within the tier is the bill, not the measure."""

from __future__ import annotations

from evalkit.report import fmt
from evalkit.report.html import Markup, join, section, table, tag
from evalkit.report.model import ReportModel
from evalkit.report.sections.recommendation import verdict
from evalkit.report.tier import Tier

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
    tier = model.decision.tier if model.decision is not None else None
    if tier is not None:  # ties first (cheapest first, as the tier lists them), then the configs shown worse
        listed = [e.config_id for e in tier.entries if e.config_id in family or e.config_id == tier.best]
        ordered = listed + [c for c in family if c not in listed]
    else:  # a run before the tier: by the measure, the order the file gives no test for
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
                *([_tier_cell(tier, cid)] if tier is not None else []),
            ]
        )
    order = "best " + m.label + " first (a run without the tier)"
    if tier is not None:
        order = (
            f"the top tier first ({len(tier.members)} configs not shown worse than the best, {tier.best}, on "
            f"{m.label}: one-sided paired test at {tier.alpha_one_sided:g}, Holm over every config; ties, listed "
            f"cheapest first by {tier.cost_kind}" + (f"; cheapest: {tier.cheapest}" if tier.cheapest else "") + ")"
        )
    note = (
        f"{len(shown)} of {len(family)} configs shown, {order}. Differences are paired, "
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
        *(["vs the best"] if tier is not None else []),
    ]
    return section("configs", "Configs against the baseline", [table(headers, rows, numeric=(1, 2, 3, 4, 5, 6))], note)


def _tier_cell(tier: Tier, config_id: str) -> Markup:
    """Tier membership instead of a rank: a tie with the best, or shown worse (with its Holm p)."""
    entry = tier.entry(config_id)
    if entry is None:
        return tag("span", "n/a", class_="pill neutral")
    cheapest = " · cheapest" if config_id == tier.cheapest else ""
    if config_id == tier.best:
        return tag("span", f"top tier (best point estimate){cheapest}", class_="pill good")
    if entry.in_tier:
        return tag("span", f"top tier (tie){cheapest}", class_="pill good")
    return tag("span", f"shown worse (Holm p {fmt.p_value(entry.p_holm)})", class_="pill bad")
