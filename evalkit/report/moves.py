"""recommendation.json's one-knob moves, cheaper pick and gate-passing set read into frozen records (the report
only renders).

Both are optional in the file (a run from before they existed has neither); a
present block with the wrong shape is a one-line :class:`~evalkit.run.folder.RunError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalkit.report.fields import as_list as _list
from evalkit.report.fields import as_mapping as _mapping
from evalkit.report.fields import as_number as _number
from evalkit.run import files
from evalkit.run.folder import RunError


@dataclass(frozen=True)
class Interval:
    """A paired difference (candidate - production) with its 95% interval, in the measure's units."""

    delta: float
    low: float
    high: float


@dataclass(frozen=True)
class KnobMove:
    """One knob moved alone from production: its best value, the evidence, the gate's verdict."""

    knob: str
    production_value: str
    swept: bool
    value: str | None
    beats_production: bool
    config_id: str | None
    recall: Interval | None
    context_precision: Interval | None
    cost_change_pct: float | None
    prompt_tokens_change_pct: float | None
    index_chunks_change_pct: float | None
    gate_verdict: str | None
    gate_failed: tuple[str, ...]
    caps_broken: tuple[str, ...]
    own_chunking: bool = False
    """chunk_size/chunk_overlap under retriever=external: production chunked, so no value here to move."""
    collapsed: bool = False
    """Every other value swept returns exactly production's lists (collapsed grid points)."""


@dataclass(frozen=True)
class Nearest:
    config_id: str
    saving_pct: float | None
    breaks: tuple[str, ...]


@dataclass(frozen=True)
class CheaperPick:
    """The cheapest config the gate accepts against production, or none (``config_id`` None) with the nearest."""

    config_id: str | None
    label: str
    why: str
    saving_pct: float | None
    recall: Interval | None
    context_precision: Interval | None
    prompt_tokens_change_pct: float | None
    nearest: tuple[Nearest, ...]
    same_quality: bool = False
    """Equivalence shown within every gated margin (two one-sided tests) and no difference shown."""


@dataclass(frozen=True)
class AcceptedConfig:
    """A config the gate accepts against production, where it sits on the bill, and what of the objective it breaks."""

    config_id: str
    primary: float | None
    cost_per_query: float | None
    prompt_tokens: float | None
    gain: Interval | None
    on_frontier: bool
    breaks: tuple[str, ...]
    detail: str


@dataclass(frozen=True)
class GatePassing:
    """Every config the gate accepts, of ``candidates`` (``checked`` bootstrapped; ``limit_reached``: some not)."""

    configs: tuple[AcceptedConfig, ...]
    checked: int
    candidates: int
    limit_reached: bool


def _interval(value: Any) -> Interval | None:
    if not isinstance(value, Mapping):
        return None
    parts = [_number(value.get(k)) for k in ("delta", "low", "high")]
    return None if None in parts else Interval(*parts)  # type: ignore[arg-type]


def _change(block: Any) -> float | None:
    return _number(block.get("change_pct")) if isinstance(block, Mapping) else None


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _move(raw: Any) -> KnobMove:
    m = _mapping(raw, "one_knob_moves[]")
    if "knob" not in m:
        raise RunError(f"{files.RECOMMENDATION_JSON}: one_knob_moves[] has no 'knob'")
    intervals = m.get("intervals") if isinstance(m.get("intervals"), Mapping) else {}
    gate = m.get("gate") if isinstance(m.get("gate"), Mapping) else {}
    return KnobMove(
        knob=str(m["knob"]),
        production_value=str(m.get("production_value")),
        swept=bool(m.get("swept")),
        own_chunking=bool(m.get("own_chunking")),
        collapsed=bool(m.get("collapsed")),
        value=_text(m.get("value")),
        beats_production=bool(m.get("beats_production")),
        config_id=_text(m.get("config_id")),
        recall=_interval(intervals.get("recall")),
        context_precision=_interval(intervals.get("context_precision")),
        cost_change_pct=_change(m.get("cost_per_query")),
        prompt_tokens_change_pct=_change(m.get("prompt_tokens")),
        index_chunks_change_pct=_change(m.get("index_chunks")),
        gate_verdict=_text(gate.get("verdict")),
        gate_failed=tuple(str(x) for x in _list(gate.get("failed"), "one_knob_moves[].gate.failed")),
        caps_broken=tuple(str(x) for x in _list(m.get("caps_broken"), "one_knob_moves[].caps_broken")),
    )


def read_moves(payload: Mapping[str, Any]) -> tuple[KnobMove, ...]:
    return tuple(_move(x) for x in _list(payload.get("one_knob_moves"), "one_knob_moves"))


def read_cheaper(payload: Mapping[str, Any]) -> CheaperPick | None:
    raw = payload.get("cheaper_pick")
    if raw is None:
        return None
    c = _mapping(raw, "cheaper_pick")
    intervals = c.get("intervals") if isinstance(c.get("intervals"), Mapping) else {}
    nearest = tuple(
        Nearest(
            str(n.get("config_id", "")),
            _number(n.get("saving_pct")),
            tuple(str(b) for b in _list(n.get("breaks"), "cheaper_pick.nearest[].breaks")),
        )
        for n in (_mapping(x, "cheaper_pick.nearest[]") for x in _list(c.get("nearest"), "cheaper_pick.nearest"))
    )
    return CheaperPick(
        config_id=_text(c.get("config_id")),
        label=str(c.get("label") or "none"),
        why=str(c.get("why") or ""),
        saving_pct=_number(c.get("saving_pct")),
        recall=_interval(intervals.get("recall")),
        context_precision=_interval(intervals.get("context_precision")),
        prompt_tokens_change_pct=_change(c.get("prompt_tokens")),
        nearest=nearest,
        same_quality=bool(c.get("same_quality")),
    )


def read_gate_passing(payload: Mapping[str, Any]) -> GatePassing | None:
    raw = payload.get("gate_passing")
    if raw is None:
        return None
    g = _mapping(raw, "gate_passing")
    configs = tuple(
        AcceptedConfig(
            config_id=str(a.get("config_id", "")),
            primary=_number(a.get("primary")),
            cost_per_query=_number(a.get("cost_per_query")),
            prompt_tokens=_number(a.get("prompt_tokens")),
            gain=_interval(a.get("gain")),
            on_frontier=bool(a.get("on_frontier")),
            breaks=tuple(str(b) for b in _list(a.get("breaks"), "gate_passing.configs[].breaks")),
            detail=str(a.get("detail") or ""),
        )
        for a in (_mapping(x, "gate_passing.configs[]") for x in _list(g.get("configs"), "gate_passing.configs"))
    )
    return GatePassing(
        configs=configs,
        checked=int(_number(g.get("checked")) or 0),
        candidates=int(_number(g.get("candidates")) or 0),
        limit_reached=bool(g.get("limit_reached")),
    )
