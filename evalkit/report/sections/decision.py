"""The recommendation card as the sweep decided it: recommendation.json rendered, nothing recomputed.

The decision in words ("keep production" when so, with the near-misses and the
constraint each breaks), the pick against production, every constraint with its
value for both sides and pass/fail, the gain in and out of sample side by side,
the top_k of each side, the gate verdict and the flags.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from evalkit.report import fmt
from evalkit.report.decision import KEEP, NO_PRODUCTION, Constraint, Decision, Gain, Pick
from evalkit.report.html import Markup, section, table, tag
from evalkit.report.model import ReportModel
from evalkit.report.sections.moves import cheaper_block, gate_passing_table, moves_table, tier_block
from evalkit.run import files

Unit = Callable[[str], str]
"""A named quantity -> its unit (review.json's table: :meth:`evalkit.run.review.Review.unit`)."""

CONSTRAINT_LABELS = {
    "cost_per_query": "$/query",
    "prompt_tokens": "prompt tokens",
    "zero_hit_answerable": "zero-hit (answerable)",
    "abstention": "abstention (unanswerable)",
}
"""Labels of the constraints a near-miss breaks when the file carries no constraint list (keep production)."""


def _pass(ok: bool | None) -> Markup:
    if ok is None:
        return tag("span", "n/a", class_="pill neutral")
    return tag("span", "pass" if ok else "fail", class_="pill good" if ok else "pill bad")


def describe(row: Mapping[str, Any] | None) -> str:
    if row is None:
        return "(not in this run's summary)"
    return (
        f"chunk_size {int(row['chunk_size'])} · overlap {int(row['chunk_overlap'])} · "
        f"top_k {int(row['top_k'])} · threshold {fmt.threshold(float(row['threshold']))}"
    )


def _row(model: ReportModel, config_id: str | None) -> Mapping[str, Any] | None:
    if config_id is None or config_id not in set(model.run.summary["config_id"]):
        return None
    return model.run.config_row(config_id)


def _k_label(label: str, k: int | None) -> str:
    return label.replace("@k", f"@{k}") if k is not None else label


def primary_labels(d: Decision) -> tuple[str, str, bool]:
    """The primary measure's label for the pick and for production, and whether both use the same k."""
    label = d.objective.primary_label
    top = d.recommended.top_k if d.recommended else None
    if top is None:
        return label, label, True
    return _k_label(label, top.recommended), _k_label(label, top.production), top.same_k


def _headline(model: ReportModel, d: Decision) -> list[Markup]:
    prod = _row(model, d.production_id)
    if d.decision == KEEP:
        return [
            tag("p", "Decision", class_="note"),
            tag("div", "Keep production", class_="big"),
            tag(
                "p",
                [
                    "No config beats production within the constraints. Production: ",
                    tag("strong", describe(prod)),
                    " — ",
                    tag("code", d.production_id or "n/a"),
                ],
            ),
        ]
    pick = d.recommended
    parts = [
        tag("p", "Recommended configuration", class_="note"),
        tag("div", describe(_row(model, pick.config_id) if pick else None), class_="big"),
        tag("p", ["config ", tag("code", pick.config_id if pick else "n/a")], class_="note"),
    ]
    if d.decision == NO_PRODUCTION:
        parts.append(tag("p", "No production config in this grid: the pick is not compared with production."))
    else:
        parts.append(
            tag("p", ["Production: ", tag("strong", describe(prod)), " — ", tag("code", d.production_id or "n/a")])
        )
    return parts


def _constraint_row(c: Constraint, unit: Unit) -> list[Any]:
    return [
        c.label,
        c.kind,
        c.limit,
        fmt.quantity(unit(c.name), c.value),
        fmt.quantity(unit(c.name), c.production),
        fmt.signed_interval(unit(c.name), c.delta, c.delta_low, c.delta_high),
        _pass(c.passed),
    ]


def _side_by_side(d: Decision, pick: Pick, unit: Unit) -> Markup:
    """Every value the file gives for the pick and for production."""
    # "primary" repeats the primary measure's own entry under a generic key.
    names = [n for n in dict.fromkeys([d.objective.primary, *pick.values, *d.production_values]) if n != "primary"]
    rec_label, prod_label, _ = primary_labels(d)
    rows = []
    for name in names:
        label = f"{rec_label} / {prod_label}" if name == d.objective.primary and rec_label != prod_label else name
        if name == d.objective.primary and rec_label == prod_label:
            label = rec_label
        values = (
            fmt.quantity(unit(name), pick.values.get(name)),
            fmt.quantity(unit(name), d.production_values.get(name)),
        )
        rows.append([label, *values])
    return table(["quantity", "recommended", "production"], rows, numeric=(1, 2))


def _gain_row(what: str, g: Gain | None, primary: str, unit: Unit, cluster_by: str = "document") -> list[Any]:
    if g is None:
        return [what, "n/a", "n/a", ""]
    interval = fmt.signed_interval(unit(g.measure or primary), g.delta, g.low, g.high)
    within = g.low is not None and g.high is not None and g.low <= 0.0 <= g.high
    verdict = (
        tag("span", "within noise", class_="pill neutral")
        if within
        else (tag("span", "gain", class_="pill good") if (g.delta or 0) > 0 else tag("span", "loss", class_="pill bad"))
    )
    detail = []
    if g.p_value is not None:
        detail.append(f"p = {fmt.p_value(g.p_value)}")
    if g.splits is not None:
        detail.append(f"{g.splits} splits")
    if g.median is not None and g.p05 is not None and g.p95 is not None:
        spread = fmt.signed_interval(unit(g.measure or primary), g.median, g.p05, g.p95)
        detail.append(f"median over splits and 5-95% range {spread}")
    if g.holds_share is not None:
        clusters = "documents" if cluster_by == "document" else f"clusters of the tag {cluster_by!r}"
        halves = f"halves of the {clusters}" if g.unit == "clusters" else "halves of the questions"
        if g.positive_share is None:  # a record before issue 47: the share counted any positive gain
            detail.append(
                f"positive on {fmt.pct(g.holds_share, 0)} of held-back halves (the selection repeated on {halves})"
            )
        else:
            detail.append(
                f"gain shown (interval above 0) on {fmt.pct(g.holds_share, 0)} of held-back halves, positive on "
                f"{fmt.pct(g.positive_share, 0)} (the selection repeated on {halves})"
            )
    if g.same_pick_share is not None:
        detail.append(f"same pick in {fmt.pct(g.same_pick_share, 0)} of splits")
    if g.mde is not None:
        detail.append(f"smallest detectable gain {fmt.signed_points(g.mde).removeprefix('+')} pts")
    return [what, interval, verdict, "; ".join(detail)]


def _gains(d: Decision, pick: Pick, unit: Unit, cluster_by: str = "document") -> list[Markup]:
    rec_label, prod_label, same = primary_labels(d)
    k = pick.top_k
    words = (
        f"{rec_label} against {prod_label}"
        if same
        else f"different k: {rec_label} (recommended, top_k {k.recommended if k else '?'}) against "
        f"{prod_label} (production, top_k {k.production if k else '?'})"
    )
    primary = d.objective.primary
    rows = [
        _gain_row("in sample (the questions that chose it)", pick.gain_in_sample, primary, unit),
        _gain_row(
            "out of sample (chosen on one half, measured on the other)",
            pick.gain_out_of_sample,
            primary,
            unit,
            cluster_by,
        ),
    ]
    level = fmt.pct(d.objective.confidence, 0) if d.objective.confidence else "95%"
    return [
        tag("h3", [f"Gain over production on {d.objective.primary_label}: ", tag("span", words, class_="kside")]),
        table(["estimate", f"difference [{level} CI]", "verdict", "detail"], rows, numeric=(1,)),
    ]


def _gate(d: Decision, unit: Unit) -> list[Markup]:
    verdict = d.gate_verdict
    pill = (
        tag("span", "not run", class_="pill neutral")
        if verdict is None
        else tag("span", verdict.upper(), class_="pill good" if verdict == "pass" else "pill bad")
    )
    parts = [tag("h3", ["Gate verdict: ", pill])]
    if d.gate_checks:
        rows = []
        for c in d.gate_checks:
            difference = fmt.signed_interval(unit(c.metric), c.delta, c.delta_low, c.delta_high)
            rows.append([c.metric, difference, c.margin_text, _pass(c.passed)])
        parts.append(table(["metric", "difference [CI]", "margin", "result"], rows, numeric=(1,)))
    return parts


def _near_misses(d: Decision, labels: Mapping[str, str], unit: Unit) -> list[Markup]:
    if not d.near_misses:
        return []
    rows = [
        [
            tag("code", n.config_id),
            fmt.quantity(unit(d.objective.primary), n.primary),
            ", ".join(labels.get(b, b) for b in n.breaks),
            n.detail,
        ]
        for n in d.near_misses
    ]
    return [
        tag("h3", "Near-misses: better on the objective, but breaking a constraint"),
        table(["config", d.objective.primary_label, "breaks", "detail"], rows, numeric=(1,)),
    ]


def _flags(d: Decision) -> list[Markup]:
    if not d.flags:
        return []
    items = [tag("li", [tag("strong", f.kind), " ", tag("code", f.config_id), ": ", f.message]) for f in d.flags]
    return [tag("h3", "Flags"), tag("ul", items, class_="findings")]


def _objective(d: Decision, unit: Unit) -> str:
    o = d.objective
    limits = []
    if o.zero_hit_answerable_max is not None:
        limits.append(f"zero-hit on answerable questions at most {fmt.pct(o.zero_hit_answerable_max)}")
    if o.prompt_tokens_max is not None:
        limits.append(f"prompt tokens per query at most {fmt.quantity(unit('prompt_tokens'), o.prompt_tokens_max)}")
    if o.abstention_min is not None:
        limits.append(f"abstention on unanswerable questions at least {fmt.pct(o.abstention_min)}")
    for m in o.gate_margins:
        limits.append(f"gate margin {m.get('metric')} {m.get('kind')} {m.get('amount')}")
    return f"Objective: maximise {o.primary_label}" + (", subject to " + "; ".join(limits) if limits else "") + "."


def _measured_block(model: ReportModel, d: Decision, measured: Sequence[Markup]) -> list[Markup]:
    """The report's own paired comparison on results.parquet, below the decision (every headline measure)."""
    if not measured or model.comparison is None:
        return []
    who = "Production's measures (kept)" if d.decision == KEEP else "Recommended against production"
    source = f"{who}, every headline measure from {files.RESULTS}: "
    heading = tag("h3", [source, tag("code", model.comparison.baseline_id)])
    return [heading, *measured]


def decision_card(model: ReportModel, d: Decision, measured: Sequence[Markup] = ()) -> Markup:
    """The card; ``measured``: the paired comparison on the result rows, shown after the decision's own numbers."""
    body: list[Markup | str] = [*_headline(model, d)]
    unit = model.review.unit
    # the first screen: what to change one knob at a time, the cheaper pick, and (when production is kept)
    # why the better-looking configs were not chosen, before any table of detail
    body.extend(moves_table(d.moves))
    body.extend(cheaper_block(d.cheaper, str(model.run.root)))
    body.extend(tier_block(d.tier, d.objective.primary_label))
    body.append(tag("p", _objective(d, unit), class_="note"))
    pick = d.recommended
    labels = {**CONSTRAINT_LABELS, **{c.name: c.label for c in (pick.constraints if pick else ())}}
    if d.decision == KEEP:
        body.extend(_near_misses(d, labels, unit))
    if pick is not None and d.decision != KEEP:
        body.append(_side_by_side(d, pick, unit))
        if pick.constraints:
            body.append(tag("h3", "Constraints"))
            body.append(
                table(
                    ["constraint", "kind", "limit", "recommended", "production", "difference [CI]", "result"],
                    [_constraint_row(c, unit) for c in pick.constraints],
                    numeric=(3, 4, 5),
                )
            )
        if d.decision != NO_PRODUCTION:
            body.extend(_gains(d, pick, unit, model.statistics.cluster_by))
    body.extend(_gate(d, unit))
    body.extend(_measured_block(model, d, measured))
    if d.decision != KEEP:
        body.extend(_near_misses(d, labels, unit))
    body.extend(_flags(d))
    body.extend(gate_passing_table(d.gate_passing, unit(d.objective.primary), d.objective.primary_label))
    note = f"From {files.RECOMMENDATION_JSON} in this folder (written by the sweep; nothing here is recomputed)."
    card = section("recommendation", "Recommendation", body, note)
    return Markup(card.replace('class="card"', 'class="card rec"', 1))
