"""Each fired diagnostic rule with the one-knob move of its knob (recommendation.json's ``one_knob_moves``).

The seed's symptom rules say what to change; the one-knob moves say what changing that one value from
production does, with paired evidence and the gate's verdict. This joins the two for
the report (recall is a proportion: its moves print in points).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, TypeVar

from evalkit.report import fmt

F = TypeVar("F")

RULE_KNOBS = {"overlap": "chunk_overlap", "top_k": "top_k", "threshold": "threshold", "gold_cut": "chunk_overlap"}
"""The knob whose one-knob move each fired rule points at (position: placement and rerank, not a retrieval knob)."""


def _move_text(move: Any) -> str:
    """``one-knob move chunk_overlap 64 → 0: recall +0.6 [−1.7, +3.0] pts, $/query +0.0%, gate PASS``."""
    recall = "n/a" if move.recall is None else fmt.signed_interval("proportion", *_triple(move.recall))
    cost = "n/a" if move.cost_change_pct is None else f"{move.cost_change_pct:+.1f}%".replace("-", fmt.MINUS)
    return (
        f"one-knob move from production: {move.knob} {move.production_value} → {move.value} "
        f"({move.config_id}): recall {recall.replace(' points', '')} pts, $/query {cost}, "
        f"gate {(move.gate_verdict or 'n/a').upper()}"
    )


def _triple(interval: Any) -> tuple[float, float, float]:
    return interval.delta, interval.low, interval.high


def with_moves(findings: tuple[F, ...], moves: tuple[Any, ...]) -> tuple[F, ...]:
    """Each fired rule with the one-knob move of its knob (:data:`RULE_KNOBS`), where the grid swept one."""
    by_knob = {m.knob: m for m in moves if m.swept and m.config_id}
    out = []
    for f in findings:
        move = by_knob.get(RULE_KNOBS.get(f.rule, ""))
        out.append(replace(f, move=_move_text(move)) if f.fired and move is not None else f)  # type: ignore[type-var]
    return tuple(out)
