"""The powered answer check, stratified and prediction-powered (:mod:`evalkit.scoring.answer_design`).

``answer_check=powered`` with ``design: stratified`` (the default): the check's sample is drawn from every
question of the set with one seeded number per question; a pilot spread over the questions whose contexts
differ from production's sizes a Neyman allocation per candidate, the sample grows to the largest
inclusion any candidate asks (nothing asked twice; identical prompts are one cached answer), and each
candidate's accuracy and F1 differences are the design's estimates. ``answer_check/design.parquet`` keeps
what the estimate needs (per config and question: retrieval features and a context key; per question: its
number, inclusion and document), so the gate computes the same interval from the same rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from evalkit.answers.blocks import ContextItem
from evalkit.answers.check.plan import CheckedConfig, returned_items
from evalkit.records import Question
from evalkit.scoring.answer_check import outcome_table
from evalkit.scoring.answer_design import (
    IDENTICAL,
    context_key,
    design_pair,
    draws,
    effect_record,
    pair_effect,
    pilot_inclusion,
    plan_answers,
    subset,
)
from evalkit.scoring.clusters import labels_for

DESIGN_COLUMNS = ("config_id", "question_id", "cluster", "answerable", "hit", "recall", "mrr", "returned_tokens",
                  "context_key", "draw", "inclusion")  # fmt: skip


@dataclass(frozen=True)
class StratifiedOutcome:
    rows: pd.DataFrame
    questions: tuple[Question, ...]
    design: pd.DataFrame
    effects: dict[str, dict[str, Any]]
    sizing: dict[str, Any]


def design_table(
    configs: Sequence[CheckedConfig],
    asked: Sequence[Question],
    ranked: Mapping[str, Mapping[str, Sequence[ContextItem]]],
    config_frame: Callable[[str], pd.DataFrame],
    clusters: pd.Series | None,
    seed: int,
) -> pd.DataFrame:
    """One row per (config, question of the set): retrieval features and the context's key, with each
    question's seeded draw and document (inclusion filled in by the plan)."""
    ids = [q.id for q in asked]
    labels = labels_for(np.asarray(ids), clusters)
    cluster = np.asarray(ids, dtype=object) if labels is None else np.asarray(labels, dtype=object)
    draw = draws(ids, seed)
    parts = []
    for config in configs:
        frame = config_frame(config.config_id).set_index("question_id").reindex(ids)
        pools = ranked[config.chunking]
        keys = [context_key([i.unit_id for i in returned_items(pools.get(q, ()), config.top_k, config.threshold)])
                for q in ids]  # fmt: skip
        parts.append(pd.DataFrame({
            "config_id": config.config_id, "question_id": ids, "cluster": cluster,
            "answerable": [q.answerable for q in asked],
            **retrieval_features(frame, len(ids)),
            "context_key": keys, "draw": draw, "inclusion": 0.0,
        }))  # fmt: skip
    return pd.concat(parts, ignore_index=True)[list(DESIGN_COLUMNS)]


def retrieval_features(frame: pd.DataFrame, n: int) -> dict[str, np.ndarray]:
    """The design's per-question retrieval columns from a config's results. The sweep holds only the columns
    its objective and gate read: ``hit`` (the gold in the context) falls back on ``recall > 0``, which is the
    same for single-span gold and says "some gold in the context" for multi-span."""

    def column(name: str) -> np.ndarray | None:
        return frame[name].astype(float).to_numpy() if name in frame.columns else None

    recall = column("recall")
    hit = column("hit")
    if hit is None:
        hit = (np.nan_to_num(recall) > 0).astype(float) if recall is not None else np.zeros(n)
    return {
        "hit": hit,
        "recall": recall if recall is not None else hit,
        "mrr": column("mrr") if column("mrr") is not None else np.zeros(n),
        "returned_tokens": column("returned_tokens") if column("returned_tokens") is not None else np.zeros(n),
    }


def pair_values(rows: pd.DataFrame, column: str, ids: Sequence[str], config_id: str) -> np.ndarray:
    table = outcome_table(rows, column)
    if config_id not in table.columns:
        return np.full(len(ids), np.nan)
    return table[config_id].reindex(ids).to_numpy(dtype=float)


def stratified_check(
    configs: Sequence[CheckedConfig],
    asked: Sequence[Question],
    design: pd.DataFrame,
    answer_questions: Callable[[tuple[Question, ...]], pd.DataFrame],
    *,
    pilot: int,
    margin: float,
    f1_margin: float,
    level: float,
    power: float,
    set_design_effect: float,
    max_questions: int | None,
    log: Callable[[str], None],
) -> StratifiedOutcome:
    """Pilot, plan, grow, estimate (module docstring)."""
    production = configs[0].config_id
    candidates = [c.config_id for c in configs[1:]]
    ids = [q.id for q in asked]
    draw = design[design["config_id"] == production]["draw"].to_numpy()
    pairs = {c: design_pair(design, production, c) for c in candidates}
    first = np.zeros(len(ids))
    for pair in pairs.values():
        first = np.maximum(first, pilot_inclusion(pair.strata, pilot))
    chosen = tuple(q for q, u, pi in zip(asked, draw, first, strict=True) if u < pi)
    log(f"answer check: stratified pilot: {len(chosen)} questions (identical contexts never asked)")
    rows = answer_questions(chosen)
    measured = draw < first
    inclusion, planned = first.copy(), {}
    for config_id, pair in pairs.items():
        differences = pair_values(rows, "correct", ids, config_id) - pair_values(rows, "correct", ids, production)
        plan = plan_answers(pair.strata, np.nan_to_num(differences), measured & np.isfinite(differences), first,
                            margin, level, power, set_design_effect)  # fmt: skip
        planned[config_id] = plan.expected_answers
        inclusion = np.maximum(inclusion, plan.inclusion)
    expected = float(inclusion.sum())
    if max_questions is not None and expected > max_questions:  # scaled down: still a valid design, less power
        inclusion = np.maximum(first, inclusion * (max_questions / expected))
    grown = tuple(q for q, u, pi in zip(asked, draw, inclusion, strict=True) if u < pi)
    if len(grown) > len(chosen):
        log(f"answer check: the plan asks about {inclusion.sum():.0f} questions; answering {len(grown)}")
        rows = answer_questions(grown)
    measured = draw < inclusion
    design = design.assign(inclusion=np.tile(inclusion, len(configs)))
    effects = {}
    for config_id, pair in pairs.items():
        effects[config_id] = {
            "accuracy": _effect(rows, "correct", ids, production, config_id, pair, measured, inclusion, margin, level),
            "f1": _effect(rows, "f1", ids, production, config_id, pair, measured, inclusion, f1_margin, level,
                          answerable_only=True),
        }  # fmt: skip
    askable = {c: int(np.sum(p.strata != IDENTICAL)) for c, p in pairs.items()}
    sizing = {"design": "stratified", "pilot_questions": len(chosen), "planned_answers": planned,
              "askable": askable, "questions_needed": round(expected) if expected else None,
              "set_design_effect": set_design_effect, "margin": margin, "power": power,
              "planning_discordance": None}  # fmt: skip
    return StratifiedOutcome(rows, grown, design, effects, sizing)


def _effect(rows: pd.DataFrame, column: str, ids: Sequence[str], production: str, candidate: str, pair: Any,
            measured: np.ndarray, inclusion: np.ndarray, margin: float, level: float,
            answerable_only: bool = False) -> dict[str, Any] | None:  # fmt: skip
    p = pair_values(rows, column, ids, production)
    c = pair_values(rows, column, ids, candidate)
    both = measured & np.isfinite(p) & np.isfinite(c)
    if answerable_only:
        keep = pair.production[:, -1] > 0  # the answerable feature
        pair, p, c, both, inclusion = subset(pair, keep), p[keep], c[keep], both[keep], inclusion[keep]
    if not both.any():
        return None
    estimate = pair_effect(pair, np.where(both, p, np.nan), np.where(both, c, np.nan), both, inclusion, level)
    return effect_record(estimate, margin, p, c, both)


def effects_from_design(rows: pd.DataFrame, design: pd.DataFrame, baseline: str, candidate: str, level: float,
                        margins: Mapping[str, float]) -> dict[str, Any]:  # fmt: skip
    """The gate's view: the same estimates for any two configs of the design (the check's own function)."""
    base = design[design["config_id"] == baseline]
    ids = base["question_id"].tolist()
    inclusion = base["inclusion"].to_numpy(float)
    measured = base["draw"].to_numpy(float) < inclusion
    pair = design_pair(design, baseline, candidate)
    return {
        "accuracy": _effect(rows, "correct", ids, baseline, candidate, pair, measured, inclusion,
                            margins["answer_accuracy"], level),
        "f1": _effect(rows, "f1", ids, baseline, candidate, pair, measured, inclusion, margins["answer_f1"], level,
                      answerable_only=True),
    }  # fmt: skip


def design_estimates(
    rows: pd.DataFrame, design: pd.DataFrame, check: Mapping[str, Any]
) -> Callable[[str, str], dict[str, Any] | None]:
    """The gate's answer evidence for any two configs of a stratified check (None when one is not in it)."""
    level = float(check.get("level") or 0.95)
    margins = {"answer_accuracy": 0.05, "answer_f1": 0.05} | dict(check.get("margins") or {})
    configs = set(design["config_id"])

    def estimates(baseline: str, candidate: str) -> dict[str, Any] | None:
        if baseline not in configs or candidate not in configs:
            return None
        return effects_from_design(rows, design, baseline, candidate, level, margins)

    return estimates
