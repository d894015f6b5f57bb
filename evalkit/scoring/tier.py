"""The significance tier: the configs not shown worse than the best, and the cheapest of them (pure).

A grid's configs are close: on real sets most adjacent pairs of a ranking are not separable (the rank
audits of MTEB: 176 of 180), so a strict order prints noise as a ranking. Instead each config is tested
against the best one (the highest point estimate of the objective's primary measure) with the paired
comparison every decision uses (:func:`evalkit.scoring.compare.paired`: whole source documents resampled
when the run has clusters), one-sided ("is this config worse than the best?"), and the p-values are
Holm-adjusted over the family of every config against the best. The tier is the best and every config
whose adjusted one-sided p is not below ``(1 - level) / 2``: at that level a config is "shown worse"
exactly when its (unadjusted) two-sided interval at ``level`` lies wholly below zero and Holm keeps it. Within
the tier configs are ties: the report lists them cheapest first, never ranked. The cheapest member ($/query,
else prompt tokens) is named: the config a team can run at the least cost without being shown worse than the
best.

The one-sided p-value is derived from the comparison's two-sided one (half of it on the side the difference
lies, one minus half on the other), which is exact for the CR1 t test and the percentile-inversion p-value
the cluster bootstrap takes the larger of.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from evalkit.scoring import compare
from evalkit.scoring.stats.planning import holm


@dataclass(frozen=True)
class TierEntry:
    """One config against the best on the primary measure."""

    config_id: str
    primary: float
    """The config's mean of the primary measure."""
    delta: float | None
    """Config minus best (in the measure's units; None for the best itself)."""
    low: float | None
    high: float | None
    """The two-sided interval of ``delta`` at the decision's level."""
    p_worse: float | None
    """One-sided p-value of "worse than the best" (None for the best)."""
    p_holm: float | None
    """``p_worse`` Holm-adjusted over every config against the best."""
    in_tier: bool
    cost: float | None
    """$/query, else prompt tokens per query: what "cheapest" means here (``cost_kind``)."""


def one_sided_worse(delta: float, p_two_sided: float, higher_is_better: bool) -> float:
    """The one-sided p-value of "the candidate is worse" from a two-sided p-value and the observed direction."""
    worse_side = delta < 0 if higher_is_better else delta > 0
    if delta == 0:
        return 1.0 - p_two_sided / 2.0  # no direction observed: at least 0.5, never "shown worse"
    return p_two_sided / 2.0 if worse_side else 1.0 - p_two_sided / 2.0


def significance_tier(
    primary: pd.DataFrame,
    costs: Mapping[str, float | None],
    settings: compare.Resampling,
    higher_is_better: bool = True,
    metric: str = "",
    cost_kind: str = "$/query",
    copies: frozenset[str] = frozenset(),
) -> dict[str, object]:
    """The tier of ``primary`` (questions x configs, NaN where undefined), as recommendation.json's ``tier``.

    ``costs``: config_id -> what cheapest is measured by (None/NaN: unknown, never the cheapest). ``copies``:
    collapsed grid points (the same lists as another): never named best or cheapest when their original ties.
    """
    means = primary.mean(axis=0, skipna=True)
    finite = means[np.isfinite(means.to_numpy(dtype=float))]
    if finite.empty:
        return {"best": None, "configs": [], "cheapest": None}
    order = finite.sort_values(ascending=not higher_is_better, kind="stable")
    top = float(order.iloc[0])
    tied = sorted(str(c) for c, v in order.items() if v == top)
    best = min(tied, key=lambda c: (_cost(costs, c), c in copies, c))  # equal means: the cheaper is the reference
    questions = primary.index.to_numpy()
    reference = primary[best].to_numpy(dtype=float)
    done: dict[str, tuple[float, float, float, float] | None] = {}
    raw: list[tuple[str, tuple[float, float, float, float] | None]] = []
    for config_id in order.index.astype(str):
        if config_id == best:
            continue
        values = primary[config_id].to_numpy(dtype=float)
        key = hashlib.sha256(np.ascontiguousarray(values).tobytes()).hexdigest()
        if key not in done:  # collapsed grid points share values: one bootstrap each
            c = compare.paired(reference, values, settings, metric, questions)
            done[key] = None if c is None else (c.delta, c.delta_low, c.delta_high, c.p_value)
        raw.append((config_id, done[key]))
    tested = [(cid, r) for cid, r in raw if r is not None]
    p_worse = [one_sided_worse(r[0], r[3], higher_is_better) for _, r in tested]
    adjusted = dict(zip([cid for cid, _ in tested], holm(p_worse), strict=True)) if tested else {}
    one_sided = dict(zip([cid for cid, _ in tested], p_worse, strict=True))
    alpha = (1.0 - settings.level) / 2.0
    entries = [TierEntry(best, top, None, None, None, None, None, True, _known(costs, best))]
    for config_id, r in raw:
        p_adj = adjusted.get(config_id)
        entries.append(
            TierEntry(
                config_id=config_id,
                primary=float(finite[config_id]),
                delta=None if r is None else r[0],
                low=None if r is None else r[1],
                high=None if r is None else r[2],
                p_worse=one_sided.get(config_id),
                p_holm=p_adj,
                in_tier=p_adj is None or p_adj >= alpha,
                cost=_known(costs, config_id),
            )
        )
    members = [e for e in entries if e.in_tier]
    priced = [e for e in members if e.cost is not None]
    cheapest = min(priced, key=lambda e: (e.cost, e.config_id in copies, e.config_id)).config_id if priced else None
    return {
        "metric": metric,
        "best": best,
        "alpha_one_sided": alpha,
        "test": "one-sided paired comparison with the best, Holm-adjusted over every config",
        "cost_kind": cost_kind,
        "cheapest": cheapest,
        "size": len(members),
        "configs": [asdict(e) for e in sorted(entries, key=lambda e: (not e.in_tier, _cost(costs, e.config_id)))],
    }


def _known(costs: Mapping[str, float | None], config_id: str) -> float | None:
    value = costs.get(config_id)
    return float(value) if value is not None and math.isfinite(float(value)) else None


def _cost(costs: Mapping[str, float | None], config_id: str) -> float:
    value = _known(costs, config_id)
    return math.inf if value is None else value
