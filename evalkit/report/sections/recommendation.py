"""The recommendation card: the chosen config, why it was chosen, and how it compares with production."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalkit.report import fmt
from evalkit.report.html import Markup, section, table, tag
from evalkit.report.model import ReportModel
from evalkit.report.sections.decision import decision_card
from evalkit.run import files
from evalkit.run.review import BaselineComparison, Measure, Paired


def describe_config(row: Mapping[str, Any]) -> str:
    return (
        f"chunk_size {int(row['chunk_size'])} · overlap {int(row['chunk_overlap'])} · "
        f"top_k {int(row['top_k'])} · threshold {fmt.threshold(float(row['threshold']))}"
    )


def verdict(c: Paired | None, m: Measure, alpha: float, adjusted: bool = False) -> Markup:
    """``within noise`` when the CI contains 0, else better/worse (and whether Holm keeps it)."""
    if c is None:
        return tag("span", "n/a", class_="pill neutral")
    if c.delta_low == c.delta_high == 0.0:
        return tag("span", "no difference", class_="pill neutral")
    if c.within_noise:
        return tag("span", "within noise", class_="pill neutral")
    better = (c.delta > 0) == m.higher_is_better
    word = "better" if better else "worse"
    if adjusted and c.p_adjusted is not None and c.p_adjusted >= alpha:
        return tag("span", f"{word}, not after Holm", class_="pill warn")
    return tag("span", word, class_="pill good" if better else "pill bad")


def _k_label(m: Measure, row: Mapping[str, Any]) -> str:
    return m.label.replace("@k", f"@{int(row['top_k'])}")


def _heading(model: ReportModel) -> list[Markup | str]:
    row = model.rec_row
    return [
        tag("p", "Production configuration (no decision in this run)", class_="note"),
        tag("div", describe_config(row), class_="big"),
        tag(
            "p",
            [
                "config ",
                tag("code", model.focus_id),
                f" · {model.run.labelset_name} · "
                f"{fmt.count(row.get('n_questions'))} questions ({fmt.count(row.get('n_answerable'))} answerable)",
            ],
            class_="note",
        ),
    ]


def _no_baseline(model: ReportModel) -> Markup:
    point = model.run.baseline_point()
    return tag(
        "p",
        [
            tag("strong", "No baseline comparison: "),
            (
                f"the production grid point ({point.describe()}) is not in this grid. "
                "Include its values in the sweep, e.g. "
                f"python -m evalkit.sweep chunk_size=[...,{point.chunk_size}] "
                f"chunk_overlap=[...,{point.chunk_overlap}] top_k=[...,{point.top_k}]."
            )
            if point
            else "the manifest has no baseline block.",
        ],
    )


def _headline(model: ReportModel, row: Mapping[str, Any], base_row: Mapping[str, Any], alpha: float) -> list[Markup]:
    """The headline measures, recommended against baseline, with the difference and its verdict."""
    comparison = model.comparison
    assert comparison is not None  # measured() shows the headline only with a production config
    measures = [(h, model.review.measure(h.measure)) for h in comparison.headline]
    if row.get("config_id") == base_row.get("config_id"):  # production kept: its own measures, not a self-diff
        own = [[_k_label(m, row), fmt.interval(h.baseline, m.proportion)] for h, m in measures]
        return [table(["measure", "production [95% CI]"], own, numeric=(1,))]
    same_k = int(base_row["top_k"]) == int(row["top_k"])
    rows = []
    for h, m in measures:
        rows.append(
            [
                _k_label(m, row) if same_k else m.label,
                fmt.interval(h.recommended, m.proportion),
                fmt.interval(h.baseline, m.proportion),
                fmt.delta(h.comparison, m.proportion),
                verdict(h.comparison, m, alpha),
            ]
        )
    parts = [
        table(
            ["measure", "recommended [95% CI]", "baseline [95% CI]", "difference [95% CI]", "verdict"],
            rows,
            numeric=(1, 2, 3),
        )
    ]
    if not same_k:
        parts.append(tag("p", "@k: each config at its own top_k.", class_="note"))
    return parts


def _against_production(model: ReportModel, comparison: BaselineComparison, alpha: float) -> Markup | None:
    """Whether the recommended config's difference from production survives Holm's correction."""
    focus_id = model.focus_id
    if focus_id == comparison.baseline_id:
        return tag("p", [tag("strong", "The recommendation is the production config: keep it.")])
    family = dict(comparison.family)
    own = family.get(focus_id)
    if own is None:
        return None
    label = _k_label(model.review.measure(model.objective.primary), model.rec_row)
    holm = (
        f"Holm-adjusted p = {fmt.p_value(own.p_adjusted)} across the {len(family)} configs of the grid compared "
        "with the baseline"
    )
    if own.within_noise:
        text = (
            f"On {label}, the recommended config differs from production by {fmt.delta(own)}: within noise "
            f"(the 95% CI contains 0; {holm})."
        )
    elif own.p_adjusted is not None and own.p_adjusted < alpha:
        text = f"On {label}, the recommended config differs from production by {fmt.delta(own)} ({holm})."
    else:
        text = (
            f"On {label}, the recommended config differs from production by {fmt.delta(own)}; the CI excludes "
            f"0 but the difference does not survive the correction for picking among many configs ({holm})."
        )
    return tag("p", text)


def _mde_note(comparison: BaselineComparison, m: Measure, alpha: float) -> Markup | None:
    """The smallest difference this many paired questions can tell from noise."""
    mde = comparison.mde
    if mde is None or not mde.n:
        return None
    if mde.value == float("inf"):
        text = (
            f"Minimum detectable effect: not detectable at this size. With {fmt.count(mde.n)} paired questions "
            f"no difference in {m.label} reaches 80% power (two-sided α = {alpha:g}; {mde.how})."
        )
    else:
        points = fmt.signed_points(mde.value).lstrip("+")
        text = (
            f"Minimum detectable effect: with {fmt.count(mde.n)} paired questions, a difference in {m.label} "
            f"smaller than {points} points cannot reliably be told from noise (80% power, two-sided α = {alpha:g}; "
            f"{mde.how})."
        )
    return tag(
        "p",
        text,
        class_="note",
    )


PREDATES = (
    f"This run predates {files.RECOMMENDATION_JSON}: there is no decision to show, and the report makes none "
    "(the sweep decides). Below: the production config's numbers. Re-run the sweep to get the decision."
)


def measured(model: ReportModel) -> list[Markup]:
    """The focus config against production on every headline measure, from results.parquet (paired, with CIs)."""
    comparison = model.comparison
    if comparison is None:
        return []
    row = model.rec_row
    m = model.review.measure(model.objective.primary)
    alpha = 1 - model.statistics.level
    base_row = model.run.config_row(comparison.baseline_id)
    parts: list[Markup] = [*_headline(model, row, base_row, alpha)]
    cost = cost_sentence(row, base_row)
    if cost:
        parts.append(tag("p", cost))
    for part in (_against_production(model, comparison, alpha), _mde_note(comparison, m, alpha)):
        if part is not None:
            parts.append(part)
    return parts


def recommendation(model: ReportModel) -> Markup:
    """The sweep's decision (recommendation.json); a run before the file shows production and says so."""
    if model.decision is not None:
        card = decision_card(model, model.decision, measured(model))
        warning = (model.run.recommendation or {}).get("quality_warning")
        if warning:  # before any recommendation: relative advice on a broken base says little
            banner = tag("p", tag("strong", warning[0].upper() + warning[1:]), class_="warning")
            card = Markup(card.replace("</h2>", f"</h2>{banner}", 1))
        return card
    body: list[Markup | str] = [*_heading(model)]
    comparison = model.comparison
    if comparison is None:
        body.append(_no_baseline(model))
        return section("recommendation", "Recommendation", body, PREDATES)
    base_row = model.run.config_row(comparison.baseline_id)
    body.append(
        tag(
            "p",
            [
                "Production (baseline): ",
                tag("strong", describe_config(base_row)),
                " — ",
                tag("code", comparison.baseline_id),
            ],
        )
    )
    body.extend(measured(model))
    card = section("recommendation", "Recommendation", body, PREDATES)
    return Markup(card.replace('class="card"', 'class="card rec"', 1))


def cost_sentence(rec: Mapping[str, Any], base: Mapping[str, Any]) -> str:
    """$/query and $/day of the recommended against the baseline config, from the summary (point values)."""
    r, b = rec.get(files.COST_PER_QUERY), base.get(files.COST_PER_QUERY)
    if r is None or b is None or not (float(b) > 0):
        return ""
    change = (float(r) / float(b) - 1) * 100
    text = f"Cost per query: {fmt.money(r)} against {fmt.money(b)} ({change:+.0f}%)".replace("-", fmt.MINUS)
    if rec.get(files.COST_PER_DAY) is not None and base.get(files.COST_PER_DAY) is not None:
        text += f"; per day {fmt.money(rec[files.COST_PER_DAY])} against {fmt.money(base[files.COST_PER_DAY])}"
    model = rec.get("cost_model")
    estimated = " (estimated tokens)" if rec.get("cost_estimated") else ""
    return text + (f" on {model}" if model else "") + estimated + "."
