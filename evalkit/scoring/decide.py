"""The recommendation: the config that maximises the objective under its constraints, or "keep production" (pure).

Candidates are tried best primary first. A candidate is recommended when it
meets every cap (zero-hit, prompt tokens, abstention), passes every check of
the gate's margins file with the gate's own code (:func:`gatecheck.evaluate`,
so ``python -m evalkit.gate`` passes it by construction), beats production
with a paired interval above zero, and keeps a positive gain out of sample
(:mod:`evalkit.scoring.out_of_sample`). Otherwise the decision is "keep
production", with the best near-misses and what each breaks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

import pandas as pd

from evalkit.scoring import compare
from evalkit.scoring.accepted import gate_passing, near_misses
from evalkit.scoring.aggregate import collapsed
from evalkit.scoring.gatecheck import ConfigData, GateConfig, evaluate
from evalkit.scoring.moves import COST, Sweep, cheaper_pick, one_knob_moves
from evalkit.scoring.objective import ConfigTable, ObjectiveSettings, column_means, config_table
from evalkit.scoring.out_of_sample import out_of_sample_gain, point_constraints, selection_flags
from evalkit.scoring.per_config import Results, config_rows, result_columns
from evalkit.scoring.registry import MEASURES
from evalkit.scoring.segments import SegmentMeasure, named_configs, segment_flags, segment_gains
from evalkit.scoring.tier import significance_tier
from evalkit.scoring.values import at_threshold

KEEP = "keep production"
RECOMMEND = "recommend"
NO_PRODUCTION = "no production config"


def decide(
    results: Results,
    summary: pd.DataFrame,
    production_id: str | None,
    objective: ObjectiveSettings,
    gate: GateConfig,
    segments: pd.DataFrame | None = None,
    vetoed: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """recommendation.json's content for one sweep; ``segments``: question_id x tag (:func:`segment_frame`).

    ``vetoed``: configs the answers removed (config_id -> why, e.g. first-token p95 above the cap measured on
    production's generator). Only evidence removes: a config nobody answered is decided on retrieval alone
    (answer measures *not shown* are skipped by the gate's checks, :func:`evalkit.scoring.gatecheck.evaluate`).
    """
    record = _decide(results, summary, production_id, objective, gate, vetoed)
    production_id = (record.get("production") or {}).get("config_id")
    record["tier"] = tier_of(results, summary, objective, gate, production_id)
    if record["decision"] == NO_PRODUCTION or segments is None:
        return record
    candidates = named_configs(record)
    gains = segment_gains(
        segment_measures(results, objective, gate, record["production"]["values"]),
        segments,
        record["production"]["config_id"],
        candidates,
        gate.resampling,
    )
    new_flags = segment_flags(gains)
    flags = record.get("flags", []) + new_flags
    record = record | {"cheaper_pick": _without_same_quality(record["cheaper_pick"], new_flags)}
    return record | {"segments": gains, "flags": flags}


def twins(summary: pd.DataFrame, production_id: str | None = None) -> dict[str, tuple[str, ...]]:
    """Configs that return the same lists to every question, whatever their chunking, threshold or k: the one
    named -> its twins (:func:`evalkit.scoring.aggregate.collapsed`). Production is named for its own group."""
    groups = collapsed(summary)
    if production_id is None:
        return groups
    for kept, ids in groups.items():
        if production_id in ids:
            rest = tuple(sorted({kept, *ids} - {production_id}))
            return {k: v for k, v in groups.items() if k != kept} | {production_id: rest}
    return groups


def collapsed_ids(summary: pd.DataFrame, production_id: str | None = None) -> set[str]:
    """Grid points that are twins of a config named in their place (:func:`twins`)."""
    return {c for ids in twins(summary, production_id).values() for c in ids}


def tier_of(
    results: Results,
    summary: pd.DataFrame,
    objective: ObjectiveSettings,
    gate: GateConfig,
    production_id: str | None = None,
) -> dict[str, Any]:
    """The configs not shown worse than the best on the primary measure, and the cheapest (:mod:`.tier`).

    Distinct configs only: a twin (the same lists as another config) is no other tie; it is listed beside the
    config named for it (``twins``), and ``grid_points`` counts every grid point.
    """
    table = config_table(results, objective.primary, ())
    if COST in summary.columns and summary[COST].notna().any():
        costs, kind = dict(zip(summary["config_id"].astype(str), summary[COST], strict=True)), "$/query"
    else:
        costs, kind = column_means(table.prompt_tokens).to_dict(), "prompt tokens per query"
    measure = MEASURES[objective.primary]
    named = twins(summary, production_id)
    duplicates = {c for ids in named.values() for c in ids}
    primary = table.primary[[c for c in table.primary.columns if c not in duplicates]]
    tier = significance_tier(primary, costs, gate.resampling, measure.higher_is_better, objective.primary, kind)
    configs = [e | {"twins": list(named.get(e["config_id"], ()))} for e in tier["configs"]]  # type: ignore[attr-defined]
    return tier | {"configs": configs, "distinct": tier.get("size"), "grid_points": len(table.primary.columns)}


def segment_measures(
    results: Results, objective: ObjectiveSettings, gate: GateConfig, production: Mapping[str, Any]
) -> dict[str, SegmentMeasure]:
    """The objective's primary and every per-question margin of the gate, with the margin each may lose."""
    names = [m.metric for m in gate.margins if MEASURES[m.metric].column in result_columns(results)]
    table = config_table(results, objective.primary, tuple(names))
    margins = {m.metric: m for m in gate.margins}
    out = {}
    for name, frame in {objective.primary: table.primary, **table.margins}.items():
        measure = MEASURES[name]
        if not measure.proportion:
            continue  # $ and seconds: a segment's bill is the config's bill
        base = production.get(name) if name in production else None
        margin = margins[name].absolute(float(base or 0.0)) if name in margins else 0.0
        out[name] = SegmentMeasure(frame, measure.higher_is_better, margin, measure.label)
    return out


def _without_same_quality(pick: Mapping[str, Any] | None, flags: list[dict[str, str]]) -> Mapping[str, Any] | None:
    """A cheaper pick that loses beyond a margin on a segment is not "the same quality": its label says where."""
    if not pick or not pick.get("config_id"):
        return pick
    losses = [f["message"] for f in flags if "cheaper pick" in f.get("roles", [f.get("role")])]
    if not losses:
        return pick
    label = str(pick.get("label", "")).replace("same quality, ", "not the same quality on every segment, ")
    return {**pick, "label": label, "same_quality": False, "segment_losses": losses}


def _decide(
    results: Results,
    summary: pd.DataFrame,
    production_id: str | None,
    objective: ObjectiveSettings,
    gate: GateConfig,
    vetoed: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    record: dict[str, Any] = {"version": 1, "objective": _objective_record(objective, gate)}
    if production_id is None or production_id not in set(summary["config_id"]):
        return record | {
            "decision": NO_PRODUCTION,
            "production": None,
            "recommended": None,
            "near_misses": [],
            "gate_passing": None,
            "one_knob_moves": [],
            "cheaper_pick": None,
        }
    table = config_table(results, objective.primary, tuple(m.metric for m in gate.margins))
    means = _means(table)
    budget = objective.prompt_tokens_max
    budget = float(means[PROMPT][production_id]) if budget is None else budget
    record["objective"] |= {
        "prompt_tokens_max": None if math.isinf(budget) else budget,
        "abstention_min": float(means[ABSTAIN][production_id]) if _abstention_applies(objective, table) else None,
    }
    record["production"] = {"config_id": production_id, "values": _values(means, production_id)}
    sweep = Sweep(results, summary, production_id, table, objective, gate, budget)
    record["one_knob_moves"] = one_knob_moves(sweep)
    record["cheaper_pick"] = cheaper_pick(sweep)
    order = summary.assign(_p=summary[MEASURES[objective.primary].column]).sort_values(
        ["_p", "config_id"], ascending=[False, True], kind="stable"
    )
    production_primary = float(means[PRIMARY][production_id])
    misses: list[dict[str, Any]] = []
    tried = 0
    duplicates = collapsed_ids(summary, production_id)  # a twin's lists are another's: one near-miss, not four
    for config_id in order["config_id"]:
        if config_id == production_id or config_id in duplicates:
            continue
        if not float(means[PRIMARY][config_id]) > production_primary:
            continue
        verdict = _try(config_id, production_id, results, summary, table, means, objective, gate, budget)
        why_not = (vetoed or {}).get(config_id)
        if verdict["decision"] == RECOMMEND and why_not:  # it wins on retrieval; measured answers remove it
            primary = float(means[PRIMARY][config_id])
            verdict = {"decision": KEEP, "bootstrapped": 1,
                       "miss": {"config_id": config_id, "primary": primary, "stage": 4, "breaks": ["answers"],
                                "detail": why_not}}  # fmt: skip
        if verdict["decision"] == RECOMMEND:
            picked = verdict["recommended"]["config_id"]
            return (
                record
                | _with_accepted(sweep, production_primary, picked, misses)
                | {
                    "decision": RECOMMEND,
                    "recommended": verdict["recommended"],
                    "gate": verdict["gate"],
                    "flags": verdict["flags"],
                }
            )
        misses.append(verdict["miss"])
        tried += verdict["bootstrapped"]
        if tried >= objective.max_candidates:
            break
    return (
        record
        | _with_accepted(sweep, production_primary, None, misses)
        | {
            "decision": KEEP,
            "recommended": None,
            "gate": None,
            "flags": [],
        }
    )


def _with_accepted(sweep: Sweep, production_primary: float, picked: str | None, misses: list) -> dict[str, Any]:
    """The gate-passing set, and the near-misses drawn from it (those that fail the gate only when none passes)."""
    accepted = gate_passing(sweep, twins(sweep.summary, sweep.production_id))
    drawn = near_misses(accepted, production_primary, picked)
    return {"gate_passing": accepted, "near_misses": drawn or _nearest(misses)}


def _nearest(misses: list[dict[str, Any]], n: int = 5) -> list[dict[str, Any]]:
    """The misses that got furthest (past the caps, past the gate, ...) first, then by primary value."""
    ranked = sorted(misses, key=lambda m: (-m["stage"], -m["primary"], m["config_id"]))
    return [{k: v for k, v in m.items() if k != "stage"} for m in ranked[:n]]


def find_production(
    summary: pd.DataFrame, chunk_size: int, chunk_overlap: int, top_k: int, threshold: float | None
) -> str | None:
    """The production config's id in the grid; a null threshold means the lowest of the grid (not of a threshold
    the calibration advised off the grid). None if absent."""
    grid = summary[~summary["off_grid"].fillna(False).astype(bool)] if "off_grid" in summary.columns else summary
    level = float(grid["threshold"].min()) if threshold is None else float(threshold)
    match = summary[
        (summary["chunk_size"] == chunk_size)
        & (summary["chunk_overlap"] == chunk_overlap)
        & (summary["top_k"] == top_k)
        & at_threshold(summary["threshold"], level)
    ]
    return None if match.empty else str(match.iloc[0]["config_id"])


PRIMARY, ZERO_HIT, ABSTAIN, PROMPT = "primary", "zero_hit_answerable", "abstention", "prompt_tokens"


def _means(table: ConfigTable) -> dict[str, pd.Series]:
    out = {
        PRIMARY: column_means(table.primary),
        ZERO_HIT: column_means(table.zero_hit_answerable),
        ABSTAIN: column_means(table.abstention),
        PROMPT: column_means(table.prompt_tokens),
    }
    return out | {f"margin:{name}": column_means(frame) for name, frame in table.margins.items()}


def _values(means: Mapping[str, pd.Series], config_id: str) -> dict[str, float | None]:
    out = {}
    for key, series in means.items():
        value = float(series.get(config_id, math.nan))
        out[key.removeprefix("margin:")] = value if math.isfinite(value) else None
    return out


def _abstention_applies(objective: ObjectiveSettings, table: ConfigTable) -> bool:
    return objective.abstention_no_worse and table.has_unanswerable


def _try(
    config_id: str,
    production_id: str,
    results: Results,
    summary: pd.DataFrame,
    table: ConfigTable,
    means: Mapping[str, pd.Series],
    objective: ObjectiveSettings,
    gate: GateConfig,
    budget: float,
) -> dict[str, Any]:
    """Recommend ``config_id``, or say what it breaks (caps and point margins first: no bootstrap for a sure miss)."""
    caps = point_constraints(table, None, config_id, production_id, objective, gate, budget)
    broken = [c for c in caps if not c["passed"]]
    miss = {"config_id": config_id, "primary": float(means[PRIMARY][config_id])}
    if broken:
        return {"decision": KEEP, "bootstrapped": 0, "miss": miss | _breaks(broken) | {"stage": 0}}
    base, cand = (ConfigData(config_rows(results, c), summary, c) for c in (production_id, config_id))
    checks, _ = evaluate(base, cand, gate)
    failed = [c for c in checks if not c.passed]
    gain = compare.paired(
        table.primary[production_id].to_numpy(),
        table.primary[config_id].to_numpy(),
        gate.resampling,
        objective.primary,
        table.primary.index.to_numpy(),
    )
    gate_record = {"verdict": "fail" if failed else "pass", "checks": [_finite(asdict(c)) for c in checks]}
    if failed:
        detail = [{"name": c.metric, "detail": f"{c.label}: not shown within {c.margin_text}"} for c in failed]
        return {"decision": KEEP, "bootstrapped": 1, "miss": miss | _breaks(detail) | {"stage": 1}}
    if gain is None or not gain.delta_low > 0:
        low = "n/a" if gain is None else f"{gain.delta_low:+.4f}"
        detail = [{"name": "gain", "detail": f"gain over production not shown (interval low {low})"}]
        return {"decision": KEEP, "bootstrapped": 1, "miss": miss | _breaks(detail) | {"stage": 2}}
    held_out = out_of_sample_gain(table, config_id, production_id, objective, gate, budget)
    mde = compare.detectable_effect(
        table.primary[production_id].to_numpy(),
        table.primary[config_id].to_numpy(),
        gate.resampling.level,
        gate.resampling.codes(table.primary.index.to_numpy()),
    )
    held_out["mde"] = None if mde is None or not mde.detectable else mde.value
    if not held_out["delta"] > 0:
        detail = [{"name": "out of sample", "detail": f"gain {held_out['delta']:+.4f} out of sample vanishes"}]
        return {"decision": KEEP, "bootstrapped": 1, "miss": miss | _breaks(detail) | {"stage": 3}}
    recommended = {
        "config_id": config_id,
        "values": _values(means, config_id),
        "constraints": [c for c in caps if c["kind"] == "cap"] + [_check_constraint(c) for c in checks],
        "gain_in_sample": {
            "measure": objective.primary,
            "delta": gain.delta,
            "low": gain.delta_low,
            "high": gain.delta_high,
            "p_value": gain.p_value,
        },
        "gain_out_of_sample": held_out,
        "top_k": _top_k(summary, config_id, production_id),
    }
    flags = selection_flags(
        config_id, gain.delta, held_out, None if mde is None else mde.value, MEASURES[objective.primary].label
    )
    return {"decision": RECOMMEND, "recommended": recommended, "gate": gate_record, "bootstrapped": 1, "flags": flags}


def _breaks(broken: list[dict[str, Any]]) -> dict[str, Any]:
    return {"breaks": [c["name"] for c in broken], "detail": "; ".join(str(c["detail"]) for c in broken)}


def _check_constraint(check: Any) -> dict[str, Any]:
    return {
        "name": check.metric,
        "label": check.label,
        "kind": "gate",
        "value": check.candidate,
        "production": check.baseline,
        "limit": check.margin_text,
        "passed": check.passed,
        "delta": check.delta,
        "delta_low": check.delta_low,
        "delta_high": check.delta_high,
        "detail": f"{check.label}: within {check.margin_text}",
    }


def _top_k(summary: pd.DataFrame, config_id: str, production_id: str) -> dict[str, Any]:
    ks = summary.set_index("config_id")["top_k"]
    pick, prod = int(ks[config_id]), int(ks[production_id])
    return {"recommended": pick, "production": prod, "same_k": pick == prod}


def _objective_record(objective: ObjectiveSettings, gate: GateConfig) -> dict[str, Any]:
    return {
        "primary": objective.primary,
        "primary_label": MEASURES[objective.primary].label,
        "zero_hit_answerable_max": objective.zero_hit_answerable_max,
        "gate_margins": [{"metric": m.metric, "kind": m.kind, "amount": m.amount} for m in gate.margins],
        "margins_file": gate.source,
        "confidence": gate.confidence,
        "out_of_sample": asdict(objective.out_of_sample),
    }


def _finite(record: dict[str, Any]) -> dict[str, Any]:
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in record.items()}
