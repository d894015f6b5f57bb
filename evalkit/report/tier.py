"""recommendation.json's significance tier read into frozen records (the report only renders).

Optional in the file (a run from before it has none); a present block with the wrong shape is a one-line
:class:`~evalkit.run.folder.RunError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalkit.report.fields import as_list as _list
from evalkit.report.fields import as_mapping as _mapping
from evalkit.report.fields import as_number as _number


@dataclass(frozen=True)
class TierEntry:
    """One config against the best on the primary measure (:mod:`evalkit.scoring.tier`)."""

    config_id: str
    primary: float | None
    delta: float | None
    low: float | None
    high: float | None
    p_holm: float | None
    in_tier: bool
    cost: float | None


@dataclass(frozen=True)
class Tier:
    """The configs not shown worse than the best (ties), the best, the cheapest of them, and the test."""

    metric: str
    best: str
    cheapest: str | None
    cost_kind: str
    alpha_one_sided: float
    entries: tuple[TierEntry, ...]
    distinct: int | None = None
    """Members that are not collapsed grid points (copies of another member's lists); None: not recorded."""
    grid_points: int | None = None
    """Every grid point, twins included (entries are distinct configs since issue 47); None: not recorded."""

    @property
    def members(self) -> tuple[TierEntry, ...]:
        return tuple(e for e in self.entries if e.in_tier)

    def entry(self, config_id: str) -> TierEntry | None:
        return next((e for e in self.entries if e.config_id == config_id), None)


def read_tier(payload: Mapping[str, Any]) -> Tier | None:
    raw = payload.get("tier")
    if raw is None:
        return None
    t = _mapping(raw, "tier")
    if not t.get("best"):
        return None
    entries = tuple(
        TierEntry(
            config_id=str(e.get("config_id", "")),
            primary=_number(e.get("primary")),
            delta=_number(e.get("delta")),
            low=_number(e.get("low")),
            high=_number(e.get("high")),
            p_holm=_number(e.get("p_holm")),
            in_tier=bool(e.get("in_tier")),
            cost=_number(e.get("cost")),
        )
        for e in (_mapping(x, "tier.configs[]") for x in _list(t.get("configs"), "tier.configs"))
    )
    return Tier(
        metric=str(t.get("metric") or ""),
        best=str(t["best"]),
        cheapest=None if t.get("cheapest") is None else str(t["cheapest"]),
        cost_kind=str(t.get("cost_kind") or ""),
        alpha_one_sided=float(_number(t.get("alpha_one_sided")) or 0.025),
        entries=entries,
        distinct=None if t.get("distinct") is None else int(t["distinct"]),
        grid_points=None if t.get("grid_points") is None else int(t["grid_points"]),
    )
