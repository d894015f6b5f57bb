"""recommendation.json read into frozen records (the sweep decides; the report only renders).

The file is the sweep's decision (:data:`evalkit.run.files.RECOMMENDATION_JSON`):
the recommended config or "keep production", the objective, each constraint for
the pick and for production, the gains in and out of sample, near-misses, flags
and the gate verdict. Reading is strict about the shape the report relies on
(a malformed file is a one-line :class:`~evalkit.run.folder.RunError`) and
lenient about optional fields, which stay None and render as "n/a".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalkit.report.fields import as_bool as _bool
from evalkit.report.fields import as_int as _int
from evalkit.report.fields import as_list as _list
from evalkit.report.fields import as_mapping as _mapping
from evalkit.report.fields import as_number as _number
from evalkit.report.moves import CheaperPick, GatePassing, KnobMove, read_cheaper, read_gate_passing, read_moves
from evalkit.report.tier import Tier, read_tier
from evalkit.run import files
from evalkit.run.folder import RunError

KEEP = "keep production"
RECOMMEND = "recommend"
NO_PRODUCTION = "no production config"
DECISIONS = (RECOMMEND, KEEP, NO_PRODUCTION)


@dataclass(frozen=True)
class Constraint:
    """One constraint of the objective, evaluated for the pick and for production."""

    name: str
    label: str
    kind: str
    """``gate`` (one of the gate's margins) or ``cap`` (an absolute limit)."""
    value: float | None
    production: float | None
    limit: str
    passed: bool | None
    delta: float | None
    delta_low: float | None
    delta_high: float | None


@dataclass(frozen=True)
class Gain:
    """The pick's gain on the primary measure over production, with its interval."""

    measure: str
    delta: float | None
    low: float | None
    high: float | None
    p_value: float | None = None
    splits: int | None = None
    """Out of sample only: how many select-on-one-half, estimate-on-the-other splits."""
    same_pick_share: float | None = None
    """Out of sample only: share of splits whose selection half chose the same config."""
    median: float | None = None
    """Out of sample only: the median held-out gain over the splits."""
    p05: float | None = None
    """Out of sample only: the 5th percentile of the held-out gain over the splits."""
    p95: float | None = None
    """Out of sample only: the 95th percentile of the held-out gain over the splits."""
    mde: float | None = None
    """Out of sample only: the smallest gain the set detects at 80% power (None: not detectable at this size)."""
    holds_share: float | None = None
    """Out of sample only: share of splits whose selection (repeated on one half) shows a gain on the held-back
    half (its interval above 0; in records before issue 47, any positive gain)."""
    positive_share: float | None = None
    """Out of sample only: share of splits whose held-back gain's point estimate is > 0 (None: older record)."""
    unit: str | None = None
    """Out of sample only: what the halves split, ``clusters`` (documents by default) or ``questions``."""


@dataclass(frozen=True)
class TopK:
    recommended: int | None
    production: int | None
    same_k: bool


@dataclass(frozen=True)
class Pick:
    """The recommended config with its constraints and gains."""

    config_id: str
    values: Mapping[str, float | None]
    constraints: tuple[Constraint, ...]
    gain_in_sample: Gain | None
    gain_out_of_sample: Gain | None
    top_k: TopK | None


@dataclass(frozen=True)
class NearMiss:
    config_id: str
    primary: float | None
    breaks: tuple[str, ...]
    detail: str


@dataclass(frozen=True)
class Flag:
    config_id: str
    kind: str
    message: str


@dataclass(frozen=True)
class GateCheck:
    metric: str
    passed: bool | None
    delta: float | None
    delta_low: float | None
    delta_high: float | None
    margin_text: str


@dataclass(frozen=True)
class Objective:
    """What the sweep maximised and under which limits."""

    primary: str
    primary_label: str
    zero_hit_answerable_max: float | None
    prompt_tokens_max: float | None
    abstention_min: float | None
    gate_margins: tuple[Mapping[str, Any], ...]
    confidence: float | None


@dataclass(frozen=True)
class Decision:
    """recommendation.json as a record."""

    version: int
    decision: str
    """One of :data:`DECISIONS`."""
    objective: Objective
    production_id: str | None
    production_values: Mapping[str, float | None]
    recommended: Pick | None
    near_misses: tuple[NearMiss, ...]
    flags: tuple[Flag, ...]
    gate_verdict: str | None
    """``pass``, ``fail`` or None (no gate run)."""
    gate_checks: tuple[GateCheck, ...]
    moves: tuple[KnobMove, ...] = ()
    """One knob at a time from production (empty for a run from before they existed)."""
    cheaper: CheaperPick | None = None
    gate_passing: GatePassing | None = None
    """Every config the gate accepts against production (None: a run before this was recorded)."""
    tier: Tier | None = None
    """The configs not shown worse than the best, and the cheapest of them (None: a run before it)."""

    @property
    def focus_id(self) -> str | None:
        """The config the report centres on: the pick, else production (keep production)."""
        if self.recommended is not None:
            return self.recommended.config_id
        return self.production_id

    @property
    def keeps_production(self) -> bool:
        return self.decision == KEEP


def _values(block: Mapping[str, Any]) -> dict[str, float | None]:
    return {str(k): _number(v) for k, v in (block.get("values") or {}).items()}


def _constraint(c: Mapping[str, Any]) -> Constraint:
    return Constraint(
        name=str(c.get("name", "")),
        label=str(c.get("label") or c.get("name", "")),
        kind=str(c.get("kind", "")),
        value=_number(c.get("value")),
        production=_number(c.get("production")),
        limit=str(c.get("limit") or ""),
        passed=_bool(c.get("passed")),
        delta=_number(c.get("delta")),
        delta_low=_number(c.get("delta_low")),
        delta_high=_number(c.get("delta_high")),
    )


def _gain(block: Any) -> Gain | None:
    if not isinstance(block, Mapping):
        return None
    return Gain(
        measure=str(block.get("measure", "")),
        delta=_number(block.get("delta")),
        low=_number(block.get("low")),
        high=_number(block.get("high")),
        p_value=_number(block.get("p_value")),
        splits=_int(block.get("splits")),
        same_pick_share=_number(block.get("same_pick_share")),
        median=_number(block.get("median")),
        p05=_number(block.get("p05")),
        p95=_number(block.get("p95")),
        mde=_number(block.get("mde")),
        holds_share=_number(block.get("holds_share")),
        positive_share=_number(block.get("positive_share")),
        unit=str(block["unit"]) if isinstance(block.get("unit"), str) else None,
    )


def _pick(block: Any) -> Pick | None:
    if block is None:
        return None
    block = _mapping(block, "recommended")
    if not block.get("config_id"):
        raise RunError(f"{files.RECOMMENDATION_JSON}: recommended has no config_id")
    top = block.get("top_k")
    top_k = None
    if isinstance(top, Mapping):
        rec_k, prod_k = _int(top.get("recommended")), _int(top.get("production"))
        same = top.get("same_k")
        top_k = TopK(rec_k, prod_k, bool(same) if same is not None else rec_k == prod_k)
    return Pick(
        config_id=str(block["config_id"]),
        values=_values(block),
        constraints=tuple(
            _constraint(_mapping(c, "a constraint")) for c in _list(block.get("constraints"), "constraints")
        ),
        gain_in_sample=_gain(block.get("gain_in_sample")),
        gain_out_of_sample=_gain(block.get("gain_out_of_sample")),
        top_k=top_k,
    )


def _objective(block: Mapping[str, Any]) -> Objective:
    primary = str(block.get("primary") or "recall")
    return Objective(
        primary=primary,
        primary_label=str(block.get("primary_label") or primary),
        zero_hit_answerable_max=_number(block.get("zero_hit_answerable_max")),
        prompt_tokens_max=_number(block.get("prompt_tokens_max")),
        abstention_min=_number(block.get("abstention_min")),
        gate_margins=tuple(m for m in _list(block.get("gate_margins"), "gate_margins") if isinstance(m, Mapping)),
        confidence=_number(block.get("confidence")),
    )


NO_DECISION_OBJECTIVE = _objective({})
"""What a run before recommendation.json is read with: recall, no caps, no confidence stated."""


def read_decision(payload: Mapping[str, Any] | None) -> Decision | None:
    """The decision record, None when the run has no recommendation.json (a run before it existed).

    Raises:
        RunError: the file does not have the shape the report reads (one line).
    """
    if payload is None:
        return None
    decision = str(payload.get("decision", ""))
    if decision not in DECISIONS:
        raise RunError(f"{files.RECOMMENDATION_JSON}: decision {decision!r} is not one of {', '.join(DECISIONS)}")
    production = payload.get("production")
    production = _mapping(production, "production") if production is not None else {}
    recommended = _pick(payload.get("recommended"))
    if decision == RECOMMEND and recommended is None:
        raise RunError(f"{files.RECOMMENDATION_JSON}: decision is recommend but recommended is null")
    gate = payload.get("gate") if isinstance(payload.get("gate"), Mapping) else {}
    verdict = gate.get("verdict")
    return Decision(
        version=int(payload.get("version") or 1),
        decision=decision,
        objective=_objective(_mapping(payload.get("objective") or {}, "objective")),
        production_id=str(production["config_id"]) if production.get("config_id") else None,
        production_values=_values(production),
        recommended=recommended,
        near_misses=tuple(
            NearMiss(
                config_id=str(n.get("config_id", "")),
                primary=_number(n.get("primary")),
                breaks=tuple(str(b) for b in _list(n.get("breaks"), "near_misses.breaks")),
                detail=str(n.get("detail") or ""),
            )
            for n in (_mapping(x, "a near miss") for x in _list(payload.get("near_misses"), "near_misses"))
        ),
        flags=tuple(
            Flag(str(f.get("config_id", "")), str(f.get("kind", "")), str(f.get("message") or ""))
            for f in (_mapping(x, "a flag") for x in _list(payload.get("flags"), "flags"))
        ),
        gate_verdict=None if verdict is None else str(verdict),
        gate_checks=tuple(
            GateCheck(
                metric=str(c.get("metric", "")),
                passed=_bool(c.get("passed")),
                delta=_number(c.get("delta")),
                delta_low=_number(c.get("delta_low")),
                delta_high=_number(c.get("delta_high")),
                margin_text=str(c.get("margin_text") or ""),
            )
            for c in (_mapping(x, "a gate check") for x in _list(gate.get("checks"), "gate.checks"))
        ),
        moves=read_moves(payload),
        cheaper=read_cheaper(payload),
        gate_passing=read_gate_passing(payload),
        tier=read_tier(payload),
    )
