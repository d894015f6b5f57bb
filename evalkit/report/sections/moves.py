"""The "what to change" blocks: one knob at a time from production, the cheaper pick (the first screen), and
every config the gate accepts.

Rendered from recommendation.json (:mod:`evalkit.report.moves`); nothing is recomputed here.
"""

from __future__ import annotations

import re

from evalkit.report import fmt
from evalkit.report.html import Cell, Markup, table, tag
from evalkit.report.moves import CheaperPick, GatePassing, Interval, KnobMove
from evalkit.report.tier import Tier

KNOB_LABELS = {
    "chunk_size": "chunk_size",
    "chunk_overlap": "chunk_overlap",
    "top_k": "top_k",
    "threshold": "threshold",
    "reranker": "reranker",
}

BREAK_LABELS = {
    "prompt_tokens": "prompt-token cap",
    "zero_hit_answerable": "zero-hit cap",
    "abstention": "abstention floor",
    "gain": "gain not shown",
}
"""What an accepted config breaks of the objective, in words (the names are recommendation.json's)."""


def _interval(unit: str, i: Interval | None) -> str:
    """``+2.7 [+0.6, +5.1]`` (points: the column header says so)."""
    if i is None:
        return "n/a"
    if i.low == i.high:  # every question moved alike: no interval to draw, and none is claimed
        return fmt.signed_quantity(unit, i.delta).replace(" points", "") + " (same on every question)"
    return fmt.signed_interval(unit, i.delta, i.low, i.high).replace(" points", "")


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.1f}%".replace("-", fmt.MINUS)


def _verdict(verdict: str | None) -> Markup:
    if verdict is None:
        return tag("span", "n/a", class_="pill neutral")
    return tag("span", verdict.upper(), class_="pill good" if verdict == "pass" else "pill bad")


def _short(reason: str) -> str:
    """``$ per query: not shown within rise ≤ 10%`` -> ``$ per query``; ``prompt tokens / query 2,6 (limit ..)``
    -> ``prompt tokens / query``."""
    head = reason.split(": not shown", 1)[0].split(" (limit", 1)[0]
    return re.sub(r"\s[-+−]?[\d.,]+%?$", "", head).strip() or reason


def _move_row(m: KnobMove) -> list[Cell]:
    if not m.swept:
        shown = "production's own chunking" if m.own_chunking else f"{m.production_value} (not swept)"
        if m.collapsed:
            shown = f"{m.production_value} (every other value returns the same lists)"
        return [KNOB_LABELS.get(m.knob, m.knob), shown, "", "", "", "", "", "", ""]
    value = f"{m.production_value} → {m.value}" + ("" if m.beats_production else " (no better)")
    # the names of what it breaks; the full "not shown within ..." detail sits in the cell's tooltip
    reasons = [_short(x) for x in m.gate_failed] + [f"cap: {_short(x)}" for x in m.caps_broken]
    why = ", ".join(dict.fromkeys(reasons))
    detail = "; ".join((*m.gate_failed, *m.caps_broken)) or None
    return [
        KNOB_LABELS.get(m.knob, m.knob),
        value,
        _interval("proportion", m.recall),
        _interval("proportion", m.context_precision),
        _pct(m.cost_change_pct),
        _pct(m.prompt_tokens_change_pct),
        _pct(m.index_chunks_change_pct),
        _verdict(m.gate_verdict),
        tag("small", why, title=detail) if why else "",
    ]


def moves_table(moves: tuple[KnobMove, ...]) -> list[Markup]:
    """One row per knob: production's value, the best other value with the rest at production, and its effect."""
    if not moves:
        return []
    # points, with paired 95% intervals; $/query, prompt tokens and index chunks as % change from production
    headers = ["knob", "production → best", "recall, pts", "ctx precision, pts", "$/query", "tokens", "chunks",
               "gate", "breaks"]  # fmt: skip
    return [
        tag("h3", "One knob at a time (the others held at production)", id="one-knob"),
        table(headers, [_move_row(m) for m in moves], numeric=(2, 3, 4, 5, 6)),
    ]


def cheaper_block(pick: CheaperPick | None, run_dir: str) -> list[Markup]:
    """The cheapest config the gate accepts against production, with the command that checks it; or none."""
    if pick is None:
        return []
    heading = tag("h3", "Cheaper pick: the cheapest config the gate accepts", id="cheaper-pick")
    if pick.config_id is None:
        rows: list[list[Cell]] = [
            [tag("code", n.config_id), _pct(None if n.saving_pct is None else -n.saving_pct), "; ".join(n.breaks)]
            for n in pick.nearest
        ]
        body: list[Markup] = [tag("p", [tag("strong", "None"), f": {pick.why}."])]
        if rows:
            body.append(table(["nearest", "$/query", "what it breaks"], rows, numeric=(1,)))
        return [heading, *body]
    command = f"python -m evalkit.gate --run {run_dir} --candidate-config '{pick.config_id}'"
    return [
        heading,
        tag(
            "p",
            [
                tag("code", pick.config_id),
                ": ",
                tag("span", pick.label, class_="pill good" if pick.same_quality else "pill neutral"),
                f" · recall {_interval('proportion', pick.recall)}",
                f" · context precision {_interval('proportion', pick.context_precision)}",
                f" · prompt tokens {_pct(pick.prompt_tokens_change_pct)}",
            ],
        ),
        tag("p", ["The gate accepts it against production: ", tag("code", command)], class_="note"),
    ]


def gate_passing_table(passing: GatePassing | None, primary_unit: str, primary_label: str) -> list[Markup]:
    """Every config the gate accepts against production: quality against the bill, and what it breaks."""
    if passing is None:
        return []
    heading = tag("h3", "Every config the gate accepts against production", id="gate-passing")
    checked = (
        f"{passing.checked} of {passing.candidates} configs bootstrapped (the limit, objective.max_candidates, "
        "was reached: the rest were not checked)"
        if passing.limit_reached
        else f"{passing.candidates} configs checked; those whose point estimate misses a gate margin cannot pass"
    )
    if not passing.configs:
        return [heading, tag("p", f"None. {checked}.", class_="note")]
    rows: list[list[Cell]] = [
        [
            tag("code", a.config_id),
            fmt.quantity(primary_unit, a.primary),
            _interval(primary_unit, a.gain),
            "n/a" if a.cost_per_query is None else f"${a.cost_per_query:.5f}",
            "n/a" if a.prompt_tokens is None else f"{a.prompt_tokens:,.0f}",
            "yes" if a.on_frontier else "",
            tag("small", ", ".join(BREAK_LABELS.get(b, b) for b in a.breaks), title=a.detail or None)
            if a.breaks
            else "meets it",
        ]
        for a in passing.configs
    ]
    headers = ["config", primary_label, "gain, pts", "$/query", "prompt tokens", "frontier", "objective"]
    note = (
        f"{checked}. Frontier: no other accepted config (or production) is at least as good on {primary_label}, "
        "$/query and prompt tokens at once and better on one. 'objective': what of the objective each breaks."
    )
    return [heading, table(headers, rows, numeric=(1, 2, 3, 4)), tag("p", note, class_="note")]


def tier_block(tier: Tier | None, primary_label: str) -> list[Markup]:
    """The significance tier in one paragraph: how many configs tie with the best, and the cheapest of them."""
    if tier is None:
        return []
    cheapest: list[Markup | str] = ["; the cheapest of them (", tier.cost_kind, "): ", tag("code", tier.cheapest)]
    return [
        tag("h3", "Top tier: the configs not shown worse than the best", id="tier"),
        tag(
            "p",
            [
                f"{len(tier.members)} of {len(tier.entries)} configs"
                + (
                    f" ({tier.distinct} distinct: the rest are collapsed grid points)"
                    if tier.distinct is not None and tier.distinct != len(tier.members)
                    else ""
                )
                + (
                    f" (distinct configs: {tier.grid_points} scored, grid points and advised thresholds; twins named "
                    "once)"
                    if tier.grid_points is not None and tier.grid_points != len(tier.entries)
                    else ""
                )
                + f" are not shown worse than the best on {primary_label} (",
                tag("code", tier.best),
                f"; one-sided paired test at {tier.alpha_one_sided:g}, Holm over every config): they are ties, "
                "not a ranking",
                *(cheapest if tier.cheapest else []),
                ".",
            ],
        ),
    ]
