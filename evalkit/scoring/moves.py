"""Decisions about the bill, one change at a time (pure): the one-knob moves and the cheaper pick.

The seed's rule is to change one value and re-test on the same labelled set, and
its four values decide retrieval quality *and* the bill. So beside the
objective's pick the recommendation says, for each knob, what the best value is
with every other knob held at production (and what it does to recall, context
precision, $/query, prompt tokens and the index), and which config is the
cheapest one the gate accepts against production, labelled "same quality, N% cheaper" only where
equivalence is shown (:func:`cheaper_label`), else with its differences and the margins they stay within.
Both are judged by the gate's own code (:func:`gatecheck.evaluate`), so
``python -m evalkit.gate --candidate-config <id>`` agrees with them by construction.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from evalkit.records import EXTERNAL_CHUNKING
from evalkit.scoring import compare
from evalkit.scoring.gatecheck import ConfigData, GateConfig, evaluate, paired_series
from evalkit.scoring.objective import ConfigTable, ObjectiveSettings
from evalkit.scoring.out_of_sample import point_constraints
from evalkit.scoring.per_config import Results, config_rows, result_columns
from evalkit.scoring.registry import MEASURES

KNOBS = ("chunk_size", "chunk_overlap", "top_k", "threshold", "reranker")
CHUNKING_KNOBS = ("chunk_size", "chunk_overlap")
"""Knobs of evalkit's own chunking: with retriever=external production chunked, and they are not moves."""
"""The values a team changes one at a time (the seed's four and the reranker)."""
IDENTITY = ("chunker", "chunk_size", "chunk_overlap", "retriever", "reranker", "top_k", "threshold")
"""The summary columns that make a config: a one-knob neighbour equals production on all but one."""
EVIDENCE = ("recall", "context_precision")
"""The paired intervals every move shows, whatever the objective's primary measure."""
COST = "cost_per_query_usd"
CHEAPER_LABEL = "same quality, {pct:.0f}% cheaper"
"""Only where equivalence is shown and no difference is: every gated measure's interval lies inside (-margin,
+margin) (two one-sided tests, at the gate's two-sided level: stricter than TOST's usual 90% interval) and holds 0."""


@dataclass(frozen=True)
class Sweep:
    """What every move is judged on: the run's frames, production, the objective and the gate's margins."""

    results: Results
    summary: pd.DataFrame
    production_id: str
    table: ConfigTable
    objective: ObjectiveSettings
    gate: GateConfig
    prompt_budget: float

    def row(self, config_id: str) -> Mapping[str, Any]:
        return self.summary.set_index("config_id").loc[config_id].to_dict()


def one_knob_moves(sweep: Sweep) -> list[dict[str, Any]]:
    """Per knob: the best value with the others at production, its evidence and the gate's verdict."""
    return [_knob_move(sweep, knob) for knob in KNOBS]


def _same(column: str, a: Any, b: Any) -> bool:
    if column == "threshold":
        return bool(np.isclose(float(a), float(b)))
    return bool(a == b)


def neighbours(summary: pd.DataFrame, production_id: str, knob: str) -> pd.DataFrame:
    """Configs equal to production on every identity column but ``knob``, and different on it."""
    production = summary.set_index("config_id").loc[production_id]
    keep = np.ones(len(summary), dtype=bool)
    for column in IDENTITY:
        if column not in summary.columns:
            continue
        same = np.array([_same(column, v, production[column]) for v in summary[column]], dtype=bool)
        keep &= ~same if column == knob else same
    return summary[keep]


def _knob_move(sweep: Sweep, knob: str) -> dict[str, Any]:
    production = sweep.row(sweep.production_id)
    if knob not in sweep.summary.columns:
        return {"knob": knob, "production_value": None, "swept": False, "config_id": None, "detail": "not a column"}
    found = neighbours(sweep.summary, sweep.production_id, knob)
    record: dict[str, Any] = {"knob": knob, "production_value": _plain(production[knob])}
    if knob in CHUNKING_KNOBS and production.get("chunker") == EXTERNAL_CHUNKING:
        detail = "production's own chunking (retriever=external): not a knob of this sweep"
        return record | {"swept": False, "config_id": None, "detail": detail, "own_chunking": True}
    if found.empty:
        return record | {"swept": False, "config_id": None, "detail": f"only production's {knob} was swept"}
    own = group_of(sweep.summary)
    found = found[[own.get(str(c)) != own.get(sweep.production_id) for c in found["config_id"]]]
    if found.empty:  # e.g. hybrid thresholds below every cosine the top_k reaches
        detail = f"every other {knob} swept returns exactly production's lists (collapsed grid points)"
        return record | {"swept": False, "config_id": None, "detail": detail, "collapsed": True}
    primary = MEASURES[sweep.objective.primary].column
    best = found.assign(_p=found[primary], _c=found.get(COST, 0.0)).sort_values(
        ["_p", "_c", "config_id"], ascending=[False, True, True], kind="stable"
    )
    config_id = str(best.iloc[0]["config_id"])
    values = [
        {"value": _plain(row[knob]), "config_id": str(row["config_id"]), "primary": float(row[primary])}
        for _, row in found.sort_values(knob, kind="stable").iterrows()
    ]
    beats = float(best.iloc[0][primary]) > float(production[primary])
    chosen = {"swept": True, "value": _plain(best.iloc[0][knob]), "beats_production": beats, "tried": values}
    return record | chosen | evidence(sweep, config_id)


def group_of(summary: pd.DataFrame) -> dict[str, str]:
    """Each config's collapse group: the grid point whose lists it returns (``same_as``), else itself."""
    ids = summary["config_id"].astype(str)
    if "same_as" not in summary.columns:
        return dict(zip(ids, ids, strict=True))
    same = summary["same_as"].fillna("").astype(str)
    return {c: s or c for c, s in zip(ids, same, strict=True)}


def evidence(sweep: Sweep, config_id: str) -> dict[str, Any]:
    """A candidate against production: paired recall and context precision, the bill, the index, the verdicts."""
    production, candidate = sweep.row(sweep.production_id), sweep.row(config_id)
    base, cand = (
        ConfigData(config_rows(sweep.results, sweep.production_id), sweep.summary, sweep.production_id),
        ConfigData(config_rows(sweep.results, config_id), sweep.summary, config_id),
    )
    intervals = {}
    for name in EVIDENCE:
        if MEASURES[name].column not in result_columns(sweep.results):
            continue
        questions, base_values, cand_values = paired_series(base, cand, MEASURES[name])
        c = compare.paired(base_values, cand_values, sweep.gate.resampling, name, questions)
        intervals[name] = None if c is None else {"delta": c.delta, "low": c.delta_low, "high": c.delta_high}
    checks, skipped = evaluate(base, cand, sweep.gate)
    caps = point_constraints(
        sweep.table, None, config_id, sweep.production_id, sweep.objective, sweep.gate, sweep.prompt_budget
    )
    cap_breaks = [str(c["detail"]) for c in caps if c["kind"] == "cap" and not c["passed"]]
    failed = [f"{c.label}: not shown within {c.margin_text}" for c in checks if not c.passed]
    return {
        "config_id": config_id,
        "intervals": intervals,
        "cost_per_query": _change(production.get(COST), candidate.get(COST)),
        "prompt_tokens": _change(_prompt_tokens(production), _prompt_tokens(candidate)),
        "index_chunks": _change(production.get("n_chunks"), candidate.get("n_chunks")),
        "index_chars": _change(production.get("stored_chars"), candidate.get("stored_chars")),
        "gate": {
            "verdict": "fail" if failed else "pass",
            "failed": failed,
            "skipped": [s["metric"] for s in skipped],
        },
        "caps_broken": cap_breaks,
    }


def cheaper_pick(sweep: Sweep) -> dict[str, Any]:
    """The cheapest config the gate accepts against production with the zero-hit (and abstention) caps kept.

    Candidates are tried cheapest first; a sure miss on a point margin or a cap costs no bootstrap, and at
    most ``objective.max_candidates`` are bootstrapped. "none" comes with the nearest candidates tried.
    """
    summary = sweep.summary
    if COST not in summary.columns or not _finite(sweep.row(sweep.production_id).get(COST)):
        return {"config_id": None, "label": "none", "why": "no $/query in this run (pricing not configured)"}
    own = float(sweep.row(sweep.production_id)[COST])
    cheaper = summary[(summary[COST] < own) & (summary["config_id"] != sweep.production_id)]
    if "same_as" in cheaper.columns:  # a collapsed grid point is its group's first: tried (and listed) once
        cheaper = cheaper[cheaper["same_as"].fillna("").astype(str) == ""]
    order = cheaper.sort_values([COST, "config_id"], kind="stable")["config_id"].astype(str)
    nearest: list[dict[str, Any]] = []
    tried = 0
    for config_id in order:
        caps = point_constraints(
            sweep.table, None, config_id, sweep.production_id, sweep.objective, sweep.gate, sweep.prompt_budget
        )
        broken = [c for c in caps if not c["passed"] and c["name"] != "prompt_tokens"]
        if broken:
            nearest.append(_miss(config_id, own, sweep, [str(c["detail"]) for c in broken]))
            continue
        found = evidence(sweep, config_id)
        tried += 1
        if found["gate"]["verdict"] == "pass":
            saving = 100 * (1 - float(sweep.row(config_id)[COST]) / own) if own > 0 else 0.0
            label, same = cheaper_label(found["intervals"], _margins(sweep), saving)
            return found | {"label": label, "same_quality": same, "saving_pct": saving, "tried": tried}
        nearest.append(_miss(config_id, own, sweep, found["gate"]["failed"]))
        if tried >= sweep.objective.max_candidates:
            break
    why = "no config cheaper than production" if order.empty else "no cheaper config passes the gate"
    closest = sorted(nearest, key=lambda m: (len(m["breaks"]), -m["saving_pct"], m["config_id"]))[:3]
    return {"config_id": None, "label": "none", "why": why, "nearest": closest, "tried": tried}


def _margins(sweep: Sweep) -> dict[str, float]:
    """Absolute margin (in the measure's units, at production's value) of each gated evidence measure."""
    out = {}
    production = sweep.row(sweep.production_id)
    for margin in sweep.gate.margins:
        if margin.metric in EVIDENCE and MEASURES[margin.metric].higher_is_better:
            out[margin.metric] = margin.absolute(float(production.get(MEASURES[margin.metric].column, 0.0) or 0.0))
    return out


def cheaper_label(intervals: Mapping[str, Any], margins: Mapping[str, float], saving: float) -> tuple[str, bool]:
    """The cheaper pick's words, as strong as its intervals allow (issue 37: non-inferior is not the same quality).

    "same quality" only when every gated measure's interval lies inside ``(-margin, +margin)`` (equivalence)
    and holds zero (no difference shown: a difference inside the margin is still a difference);
    otherwise each measure's direction and the margin it stays within, e.g. "recall worse (within the 2-point
    margin); 29% cheaper" (the intervals are shown beside the label wherever it is shown).
    """
    shown = [(name, intervals.get(name), margins[name]) for name in margins if intervals.get(name)]
    if shown and all(-m < i["low"] <= 0 <= i["high"] < m for _, i, m in shown):
        return CHEAPER_LABEL.format(pct=saving), True
    parts = []
    for name, i, m in shown:
        word = "worse" if i["high"] < 0 else ("better" if i["low"] > 0 else "not shown different")
        # Words only: every place that shows the label shows the measure's interval beside it, in its own style
        # (a figure printed twice on one line in two styles read as two different numbers).
        parts.append(f"{MEASURES[name].label} {word} (within the {100 * m:g}-point margin)")
    return f"{'; '.join(parts) or 'within the gate margins'}; {saving:.0f}% cheaper", False


def _miss(config_id: str, own: float, sweep: Sweep, breaks: list[str]) -> dict[str, Any]:
    cost = float(sweep.row(config_id)[COST])
    return {"config_id": config_id, "saving_pct": 100 * (1 - cost / own) if own > 0 else 0.0, "breaks": breaks}


def _prompt_tokens(row: Mapping[str, Any]) -> float | None:
    returned, question = row.get("mean_returned_tokens"), row.get("mean_question_tokens")
    return None if not (_finite(returned) and _finite(question)) else float(returned) + float(question)


def _change(before: Any, after: Any) -> dict[str, float | None]:
    """Production's value, the candidate's, and the change in percent (None where undefined)."""
    if not (_finite(before) and _finite(after)):
        return {"production": None, "candidate": None, "change_pct": None}
    b, a = float(before), float(after)
    return {"production": b, "candidate": a, "change_pct": None if b == 0 else 100 * (a / b - 1)}


def _finite(value: Any) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and math.isfinite(float(value))


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value
