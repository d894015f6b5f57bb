"""Every config the gate accepts against production, on a frontier of quality against the bill (pure).

The objective names one pick; the gate accepts more. A reviewer deciding on the
bill wants all of them: which keep quality for less, which gain but cost more
prompt tokens than the objective allows. Each accepted config is judged by the
gate's own code (:func:`gatecheck.evaluate`, so ``python -m evalkit.gate``
agrees by construction) and carries what it breaks of the objective (a cap, or a
gain over production not shown); the frontier holds those no other accepted
config (or production) beats on the primary measure, $/query and prompt tokens
at once. The near-miss list of the decision is drawn from it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from evalkit.scoring import compare
from evalkit.scoring.gatecheck import ConfigData, evaluate
from evalkit.scoring.moves import COST, Sweep
from evalkit.scoring.objective import column_means
from evalkit.scoring.out_of_sample import point_constraints
from evalkit.scoring.per_config import config_rows
from evalkit.scoring.registry import MEASURES

NO_GAIN = "gain"
"""The name of the objective's gain requirement in ``breaks`` (beside the caps' names)."""


def gate_passing(sweep: Sweep, twins: Mapping[str, tuple[str, ...]] | None = None) -> dict[str, Any]:
    """The accepted configs, best primary first (at most ``objective.max_candidates`` bootstrapped).

    A config whose point estimate already misses one of the gate's margins cannot pass and costs no bootstrap.
    ``twins``: config named -> grid points returning its very lists (production's included): a twin is not
    another accepted config; it is listed beside the one named.
    """
    twins = twins or {}
    copies = {c for ids in twins.values() for c in ids}
    primary = column_means(sweep.table.primary)
    tokens = column_means(sweep.table.prompt_tokens)
    costs = _costs(sweep.summary)
    order = [
        str(c)
        for c in primary.drop(index=sweep.production_id, errors="ignore")
        .sort_values(ascending=False, kind="stable")
        .index
        if str(c) not in copies
    ]
    base = ConfigData(config_rows(sweep.results, sweep.production_id), sweep.summary, sweep.production_id)
    accepted: list[dict[str, Any]] = []
    checked = 0
    for config_id in order:
        caps = point_constraints(
            sweep.table, None, config_id, sweep.production_id, sweep.objective, sweep.gate, sweep.prompt_budget
        )
        if any(c["kind"] == "margin" and not c["passed"] for c in caps):
            continue
        if checked >= sweep.objective.max_candidates:
            break
        checked += 1
        candidate = ConfigData(config_rows(sweep.results, config_id), sweep.summary, config_id)
        checks, _ = evaluate(base, candidate, sweep.gate)
        if not all(c.passed for c in checks):
            continue
        breaks = [
            {"name": c["name"], "detail": str(c["detail"])} for c in caps if c["kind"] == "cap" and not c["passed"]
        ]
        gain = compare.paired(
            sweep.table.primary[sweep.production_id].to_numpy(),
            sweep.table.primary[config_id].to_numpy(),
            sweep.gate.resampling,
            sweep.objective.primary,
            sweep.table.primary.index.to_numpy(),
        )
        if gain is None or not gain.delta_low > 0:
            low = "n/a" if gain is None else f"{100 * gain.delta_low:+.1f} pts"
            label = MEASURES[sweep.objective.primary].label
            breaks.append({"name": NO_GAIN, "detail": f"{label} gain over production not shown (interval low {low})"})
        accepted.append(
            {
                "config_id": config_id,
                "primary": float(primary[config_id]),
                "cost_per_query": costs.get(config_id),
                "prompt_tokens": float(tokens[config_id]),
                "gain": None if gain is None else {"delta": gain.delta, "low": gain.delta_low, "high": gain.delta_high},
                "breaks": [b["name"] for b in breaks],
                "detail": "; ".join(b["detail"] for b in breaks),
                "twins": list(twins.get(config_id, ())),
            }
        )
    production = {
        "config_id": sweep.production_id,
        "primary": float(primary[sweep.production_id]),
        "cost_per_query": costs.get(sweep.production_id),
        "prompt_tokens": float(tokens[sweep.production_id]),
    }
    for entry in accepted:
        entry["on_frontier"] = not any(_dominates(other, entry) for other in [production, *accepted])
    return {
        "configs": accepted,
        "checked": checked,
        "candidates": len(order),
        "limit_reached": checked >= sweep.objective.max_candidates and len(order) > checked,
    }


def near_misses(accepted: dict[str, Any], production_primary: float, picked: str | None, n: int = 5) -> list[dict]:
    """Accepted configs that beat production on the primary measure but not the objective, best first."""
    better = [
        a for a in accepted["configs"] if a["primary"] > production_primary and a["config_id"] != picked and a["breaks"]
    ]
    ranked = sorted(better, key=lambda a: (-a["primary"], a["config_id"]))[:n]
    return [
        {"config_id": a["config_id"], "primary": a["primary"], "breaks": a["breaks"], "detail": a["detail"],
         "gate": "pass"}
        for a in ranked
    ]  # fmt: skip


def _costs(summary: pd.DataFrame) -> dict[str, float | None]:
    if COST not in summary.columns:
        return {}
    out: dict[str, float | None] = {}
    for config_id, value in zip(summary["config_id"].astype(str), summary[COST], strict=True):
        out[config_id] = float(value) if value is not None and np.isfinite(float(value)) else None
    return out


def _dominates(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """``a`` is at least as good as ``b`` on primary, $/query and prompt tokens, and better on one."""
    if a["config_id"] == b["config_id"]:
        return False
    pairs = [(a["primary"], b["primary"], True), (a["prompt_tokens"], b["prompt_tokens"], False)]
    if a.get("cost_per_query") is not None and b.get("cost_per_query") is not None:
        pairs.append((a["cost_per_query"], b["cost_per_query"], False))
    no_worse = all((x >= y) if up else (x <= y) for x, y, up in pairs if _ok(x) and _ok(y))
    better = any((x > y) if up else (x < y) for x, y, up in pairs if _ok(x) and _ok(y))
    return no_worse and better


def _ok(x: Any) -> bool:
    return x is not None and math.isfinite(float(x))
