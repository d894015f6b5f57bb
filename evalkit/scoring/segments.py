"""Segments (pure): does advice that wins overall lose on a language, a role, multi-hop questions, a user's tag?

For every config the run names (the pick, the cheaper pick, each one-knob move, the near-misses, the
gate-passing set, the tier's cheapest), every gated
measure (the objective's primary and each margin of the gate: recall, context precision, zero-hit, ...) and
every tag value held by at least :data:`MIN_QUESTIONS` questions (tags with a single value over the whole set
are not segments; ``evidence_mode`` is one, so multi-hop questions are always checked), the paired difference
against production with its interval. A segment where the config loses beyond the measure's margin, shown
after Benjamini-Hochberg false-discovery control across every segment checked for that config (so that
checking many tags and measures does not flag one by chance), becomes one flag per segment on the decision.
Tags that select the same questions (``evidence_mode=all`` and ``multi_hop=True``) are one segment, one line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from evalkit.records import Question
from evalkit.scoring import compare
from evalkit.scoring.compare import Resampling

MIN_QUESTIONS = 30
"""A segment smaller than this is not checked: its interval would say little and its flag less."""
ALPHA = 0.05


def segment_frame(questions: Iterable[Question]) -> pd.DataFrame:
    """question_id x tag: every scalar tag with more than one value over the set (lists and mappings are not
    segments; a tag constant over the whole set would only repeat the overall comparison), and ``evidence_mode``
    (``all``: multi-hop)."""
    rows = [
        {"question_id": q.id, "evidence_mode": q.evidence_mode}
        | {str(k): str(v) for k, v in q.tags.items() if isinstance(v, str | bool | int) and str(v) != ""}
        for q in questions
    ]
    if not rows:
        return pd.DataFrame()
    frame = pd.DataFrame(rows).set_index("question_id")
    return frame[[c for c in frame.columns if frame[c].nunique(dropna=True) > 1]]


@dataclass(frozen=True)
class SegmentMeasure:
    """One gated measure's per-question values (question x config) and what counts as losing on it."""

    frame: pd.DataFrame
    higher_is_better: bool
    margin: float
    """A loss larger than this (in the measure's units) is "beyond the margin"."""
    label: str


def named_configs(record: Mapping[str, Any]) -> dict[str, list[str]]:
    """Every config the run names, with its roles: the pick, the cheaper pick, each swept one-knob move, the
    near-misses, the gate-passing set and the tier's cheapest (config_id -> roles, in that order)."""
    out: dict[str, list[str]] = {}

    def add(config_id: Any, role: str) -> None:
        if config_id:
            out.setdefault(str(config_id), []).append(role)

    add((record.get("recommended") or {}).get("config_id"), "recommended")
    add((record.get("cheaper_pick") or {}).get("config_id"), "cheaper pick")
    for move in record.get("one_knob_moves") or []:
        if move.get("swept"):
            add(move.get("config_id"), f"{move['knob']} move")
    for i, miss in enumerate(record.get("near_misses") or [], start=1):
        add(miss.get("config_id"), f"near-miss #{i}")
    for entry in (record.get("gate_passing") or {}).get("configs") or []:
        add(entry.get("config_id"), "gate-passing")
    add((record.get("tier") or {}).get("cheapest"), "tier's cheapest")
    production = (record.get("production") or {}).get("config_id")
    out.pop(str(production), None)  # production against itself has no segment to lose
    return out


def segment_gains(
    measures: Mapping[str, SegmentMeasure],
    segments: pd.DataFrame,
    production_id: str,
    candidates: Mapping[str, Sequence[str]],
    resampling: Resampling,
) -> list[dict[str, Any]]:
    """Per (named config, measure, segment): the paired difference against production, BH-adjusted p.

    ``candidates`` maps each config the run names to its roles ("recommended", "near-miss #1", ...): a config
    named twice is checked once. Tags that select the same questions are one segment (:func:`segment_groups`).
    """
    out: list[dict[str, Any]] = []
    if segments.empty:
        return out
    for config_id, roles in candidates.items():
        mine: list[dict[str, Any]] = []
        for name, m in measures.items():
            if production_id not in m.frame.columns or config_id not in m.frame.columns:
                continue
            # Keyed on the questions the measure is defined on for both: multi_hop=False and evidence_mode=any
            # select the same answerable questions even where unanswerable ones tell them apart.
            defined = m.frame[[production_id, config_id]].notna().all(axis=1)
            groups = segment_groups(segments.reindex(m.frame.index).loc[defined])
            mine += _measure_segments(list(roles), config_id, name, m, groups, production_id, resampling)
        for s, adjusted in zip(mine, benjamini_hochberg([s["p_value"] for s in mine]), strict=True):
            loss = -s["delta"] if s["higher_is_better"] else s["delta"]
            s["p_adjusted"] = adjusted
            s["worse"] = bool(adjusted < ALPHA and loss > s["margin"] and _bad_side_clear(s))
        out += mine
    return out


def segment_groups(aligned: pd.DataFrame) -> list[tuple[list[tuple[str, str]], pd.Index]]:
    """Every (tag, value) with its questions, tags selecting exactly the same questions merged into one segment
    (e.g. ``evidence_mode=all`` and ``multi_hop=True``): [(the (tag, value) pairs, sorted), questions], in order."""
    groups: dict[tuple[Any, ...], tuple[list[tuple[str, str]], pd.Index]] = {}
    for tag in sorted(aligned.columns):
        for value, rows in sorted(aligned.groupby(tag).groups.items(), key=lambda kv: str(kv[0])):
            index = pd.Index(rows)
            key = tuple(sorted(map(str, index)))
            groups.setdefault(key, ([], index))[0].append((str(tag), str(value)))
    return list(groups.values())


def _bad_side_clear(s: Mapping[str, Any]) -> bool:
    """The interval lies wholly on the losing side of zero."""
    return bool(s["high"] < 0) if s["higher_is_better"] else bool(s["low"] > 0)


def _measure_segments(
    roles: list[str],
    config_id: str,
    name: str,
    m: SegmentMeasure,
    groups: list[tuple[list[tuple[str, str]], pd.Index]],
    production_id: str,
    resampling: Resampling,
) -> list[dict[str, Any]]:
    out = []
    for pairs, rows in groups:
        base = m.frame.loc[rows, production_id].to_numpy(dtype=float)
        cand = m.frame.loc[rows, config_id].to_numpy(dtype=float)
        defined = int((~(np.isnan(base) | np.isnan(cand))).sum())
        if defined < MIN_QUESTIONS:
            continue
        (tag, value), same = pairs[0], [f"{t}={v}" for t, v in pairs[1:]]
        c = compare.paired(base, cand, resampling, f"{tag}={value}", np.asarray(rows))
        if c is None:
            continue
        out.append(
            {"role": " and ".join(roles), "roles": roles, "config_id": config_id, "measure": name,
             "label": m.label, "tag": tag, "value": value, "same_questions": same, "n": defined, "delta": c.delta,
             "low": c.delta_low, "high": c.delta_high, "p_value": c.p_value, "higher_is_better": m.higher_is_better,
             "margin": m.margin}
        )  # fmt: skip
    return out


def benjamini_hochberg(p_values: list[float]) -> list[float]:
    """BH-adjusted p-values (step-up, monotone, capped at 1), in the input order; NaN stays NaN."""
    p = np.asarray(p_values, dtype=float)
    adjusted = np.full(p.size, np.nan)
    finite = np.flatnonzero(np.isfinite(p))
    if finite.size == 0:
        return adjusted.tolist()
    order = finite[np.argsort(p[finite], kind="stable")]
    ranked = p[order] * finite.size / np.arange(1, finite.size + 1)
    adjusted[order] = np.minimum(1.0, np.minimum.accumulate(ranked[::-1])[::-1])
    return adjusted.tolist()


def segment_flags(gains: list[dict[str, Any]]) -> list[dict[str, str]]:
    """One flag per (advised config, segment) that loses beyond a margin, naming every measure it loses on."""
    grouped: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for s in gains:
        if s["worse"]:
            grouped.setdefault((s["config_id"], s["tag"], s["value"]), []).append(s)
    flags = []
    for (config_id, tag, value), losses in grouped.items():
        role, same = losses[0]["role"], losses[0].get("same_questions") or []
        also = f" (= {', '.join(same)})" if same else ""
        what = "; ".join(
            f"{s['label']} {100 * s['delta']:+.1f} pts [{100 * s['low']:+.1f}, {100 * s['high']:+.1f}] (margin "
            f"{100 * s['margin']:g}, BH p {s['p_adjusted']:.3g})"
            for s in losses
        )
        message = f"the {role} {config_id} is worse on {tag}={value}{also} ({losses[0]['n']} questions): {what}"
        flags.append({"config_id": config_id, "kind": "worse on a segment", "role": role,
                      "roles": list(losses[0]["roles"]), "message": message})  # fmt: skip
    return flags
