"""What the report computes from a run (pure: frames in, frozen records out).

The recommendation, its comparison with the production (baseline) config,
the top_k plateau and the minimum detectable effect. Every comparison comes
from :mod:`evalkit.scoring.compare` (the one the gate uses too); this module
only chooses what to compare.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from evalkit.run.folder import BaselinePoint
from evalkit.scoring import compare, stats
from evalkit.scoring.compare import Mde, Resampling
from evalkit.scoring.decide import find_production
from evalkit.scoring.registry import COST_PER_QUERY, HEADLINE, Measure, measure
from evalkit.scoring.values import at_threshold, available, matrix, per_question

__all__ = [
    "BaselineComparison",
    "Curve",
    "HeadlineRow",
    "Mde",
    "Objective",
    "Recommendation",
    "Step",
    "compare_family",
    "compare_with_baseline",
    "config_interval",
    "cost_key",
    "curve",
    "find_config",
    "headline",
    "interval",
    "mde",
    "plateau",
    "prompt_chars",
    "recommend",
    "resolve_baseline",
    "steps",
]


@dataclass(frozen=True)
class Objective:
    """How the recommendation is chosen."""

    metric: str = "recall"
    """Measure to maximise (higher is better)."""
    max_zero_hit_answerable: float | None = 0.05
    """Configs that return nothing for more than this share of answerable questions are not eligible."""
    max_cost_per_query: float | None = None
    """Configs costing more than this many dollars per query are not eligible (only with cost data)."""
    tie_tolerance: float = 0.01
    """A config ties with the best when its mean is at most this far below and the paired CI contains 0."""
    level: float = 0.95
    n_resamples: int = 5000
    seed: int = 0

    @property
    def resampling(self) -> Resampling:
        """The comparison settings every paired comparison of the report uses."""
        return Resampling(self.level, self.n_resamples, self.seed)

    def describe(self) -> str:
        parts = [f"maximise {measure(self.metric).label}"]
        if self.max_zero_hit_answerable is not None:
            parts.append(f"zero-hit on answerable questions at most {self.max_zero_hit_answerable:.0%}")
        if self.max_cost_per_query is not None:
            parts.append(f"cost at most ${self.max_cost_per_query:g} per query")
        return ", subject to ".join(parts[:2]) + ("" if len(parts) < 3 else f" and {parts[2]}")


@dataclass(frozen=True)
class Recommendation:
    """The recommended config and how it was chosen."""

    config_id: str
    """The cheapest config tied with the best."""
    leader_id: str
    """The config with the best mean of the objective."""
    objective: Objective
    n_configs: int
    n_eligible: int
    n_over_zero_hit_cap: int
    n_over_cost_cap: int
    caps_relaxed: bool
    """True when no config met the caps, so every config was eligible."""
    ties: tuple[tuple[str, stats.PairedComparison | None], ...]
    """Configs tied with the leader (leader first, with None), each with its comparison to the leader."""


@dataclass(frozen=True)
class HeadlineRow:
    """One measure of the recommended config next to the baseline."""

    measure: Measure
    recommended: stats.Interval | None
    baseline: stats.Interval | None
    comparison: stats.PairedComparison | None
    """Recommended minus baseline, paired by question."""


@dataclass(frozen=True)
class BaselineComparison:
    """The recommended config (and every eligible one) against the production config."""

    baseline_id: str
    family: tuple[tuple[str, stats.PairedComparison], ...]
    """Every eligible config versus the baseline on the objective, Holm-adjusted across the family."""
    headline: tuple[HeadlineRow, ...]
    """Recommended versus baseline on each headline measure."""
    mde: Mde | None


@dataclass(frozen=True)
class Step:
    """The paired gain from one grid value to the next (top_k or threshold)."""

    frm: float
    to: float
    from_id: str
    to_id: str
    comparison: stats.PairedComparison


def cost_key(row: Mapping[str, Any]) -> tuple[float, ...]:
    """Order from cheaper to dearer: index size, then $/query (when priced), then prompt size."""
    cost = row.get(COST_PER_QUERY)
    cost = float(cost) if cost is not None and not _isnan(cost) else 0.0
    stored = float(row.get("stored_chars") or 0.0)
    return (stored, cost, prompt_chars(row), float(row.get("top_k") or 0.0), float(row.get("chunk_size") or 0.0))


def prompt_chars(row: Mapping[str, Any]) -> float:
    """Context characters a config puts in the prompt per question (mean returned chunks x chunk_size)."""
    return float(row.get("mean_returned") or row.get("top_k") or 0.0) * float(row.get("chunk_size") or 0.0)


def _isnan(value: Any) -> bool:
    try:
        return math.isnan(float(value))
    except (TypeError, ValueError):
        return True


def find_config(summary: pd.DataFrame, chunking: str, top_k: int, threshold: float) -> str | None:
    """config_id of a grid point (thresholds compared with a tolerance, never ``==``)."""
    match = summary[
        (summary["chunking"] == chunking) & (summary["top_k"] == top_k) & at_threshold(summary["threshold"], threshold)
    ]
    return None if match.empty else str(match.iloc[0]["config_id"])


def resolve_baseline(summary: pd.DataFrame, point: BaselinePoint | None) -> str | None:
    """The baseline's config_id; a null threshold means the lowest of the grid. None if not in the grid."""
    return None if point is None else find_production(summary, **asdict(point))


def _eligible(summary: pd.DataFrame, objective: Objective) -> tuple[pd.Series, int, int]:
    ok = pd.Series(True, index=summary.index)
    over_zero = over_cost = 0
    if objective.max_zero_hit_answerable is not None and "zero_hit_answerable" in summary.columns:
        within = summary["zero_hit_answerable"].fillna(0.0) <= objective.max_zero_hit_answerable + 1e-12
        over_zero = int((~within).sum())
        ok &= within
    if objective.max_cost_per_query is not None and COST_PER_QUERY in summary.columns:
        within = summary[COST_PER_QUERY].fillna(math.inf) <= objective.max_cost_per_query
        over_cost = int((ok & ~within).sum())
        ok &= within
    return ok, over_zero, over_cost


def recommend(summary: pd.DataFrame, results: pd.DataFrame, objective: Objective) -> Recommendation:
    """The eligible config with the cheapest index whose objective is tied with the best.

    Eligible: within the zero-hit cap (and the cost cap, with cost data); when none is, all are.
    Leader: the best mean, exact ties to the cheaper. Tied: mean at most ``tie_tolerance`` below
    the leader and the paired CI of the difference contains 0. Recommended: the cheapest tied
    config by :func:`cost_key` (index size, then $/query, then prompt size).
    """
    m = measure(objective.metric)
    ok, over_zero, over_cost = _eligible(summary, objective)
    relaxed = not bool(ok.any())
    pool = summary if relaxed else summary[ok]
    rows = pool.to_dict("records")
    rows.sort(key=lambda r: (-_score(r, m), cost_key(r)))
    leader = rows[0]
    leader_values = per_question(results, m, str(leader["config_id"]))
    ties: list[tuple[str, stats.PairedComparison | None]] = [(str(leader["config_id"]), None)]
    for row in rows[1:]:
        if _score(row, m) < _score(leader, m) - objective.tie_tolerance:
            break
        values = per_question(results, m, str(row["config_id"])).reindex(leader_values.index)
        comparison = _paired(leader_values.to_numpy(), values.to_numpy(), m, objective)
        if comparison is not None and stats.within_noise(comparison):
            ties.append((str(row["config_id"]), comparison))
    by_id = {str(r["config_id"]): r for r in rows}
    chosen = min((cid for cid, _ in ties), key=lambda cid: cost_key(by_id[cid]))
    return Recommendation(
        config_id=chosen,
        leader_id=str(leader["config_id"]),
        objective=objective,
        n_configs=len(summary),
        n_eligible=len(pool),
        n_over_zero_hit_cap=over_zero,
        n_over_cost_cap=over_cost,
        caps_relaxed=relaxed,
        ties=tuple(ties),
    )


def _score(row: Mapping[str, Any], m: Measure) -> float:
    value = row.get(m.name, row.get(m.column))
    return -math.inf if _isnan(value) else float(value)


def _paired(
    baseline: np.ndarray, candidate: np.ndarray, m: Measure, objective: Objective
) -> stats.PairedComparison | None:
    return compare.paired(baseline, candidate, objective.resampling, m.name)


def interval(values: np.ndarray, objective: Objective) -> stats.Interval | None:
    """Bootstrap CI of the mean (None when every value is missing)."""
    return compare.mean_interval(values, objective.resampling)


def config_interval(results: pd.DataFrame, m: Measure, config_id: str, objective: Objective) -> stats.Interval | None:
    return interval(per_question(results, m, config_id).to_numpy(), objective)


def compare_family(
    results: pd.DataFrame, config_ids: Sequence[str], baseline_id: str, objective: Objective
) -> tuple[tuple[str, stats.PairedComparison], ...]:
    """Each config versus the baseline on the objective, Holm-adjusted across all of them.

    Configs with identical per-question values share one bootstrap (same seed, same answer).
    """
    m = measure(objective.metric)
    wide = matrix(results, m, [*dict.fromkeys([baseline_id, *config_ids])])
    candidates = [(config_id, wide[config_id].to_numpy()) for config_id in config_ids]
    return compare.family(wide[baseline_id].to_numpy(), candidates, objective.resampling, m.name)


def headline(
    results: pd.DataFrame, recommended_id: str, baseline_id: str, objective: Objective
) -> tuple[HeadlineRow, ...]:
    """Recommended versus baseline on each headline measure present in the results."""
    names = HEADLINE + (("cost_per_query",) if COST_PER_QUERY in results.columns else ())
    rows = []
    for m in available(results, names):
        wide = matrix(results, m, [*dict.fromkeys([baseline_id, recommended_id])])
        base = wide[baseline_id].to_numpy()
        rec = wide[recommended_id].to_numpy()
        rows.append(
            HeadlineRow(
                measure=m,
                recommended=interval(rec, objective),
                baseline=interval(base, objective),
                comparison=_paired(base, rec, m, objective),
            )
        )
    return tuple(rows)


def mde(results: pd.DataFrame, recommended_id: str, baseline_id: str, objective: Objective) -> Mde | None:
    """Minimum detectable effect (80% power, two-sided at 1 - level) of the objective on this set.

    Binary values: the paired McNemar formula with the discordance observed between the
    recommended and the baseline config (or, when they never disagree, ``2p(1-p)`` from the
    baseline rate). Continuous values: the standard deviation of the per-question differences.
    """
    m = measure(objective.metric)
    ids = [*dict.fromkeys([baseline_id, recommended_id])]  # the same config may be both
    wide = matrix(results, m, ids)
    return compare.detectable_effect(wide[baseline_id].to_numpy(), wide[recommended_id].to_numpy(), objective.level)


def compare_with_baseline(
    results: pd.DataFrame, summary: pd.DataFrame, rec: Recommendation, baseline_id: str
) -> BaselineComparison:
    """Everything the report says about recommended versus production."""
    objective = rec.objective
    ok, _, _ = _eligible(summary, objective)
    eligible = summary if rec.caps_relaxed else summary[ok]
    ids = [str(c) for c in eligible["config_id"] if str(c) != baseline_id]
    if rec.config_id not in ids and rec.config_id != baseline_id:
        ids.append(rec.config_id)
    return BaselineComparison(
        baseline_id=baseline_id,
        family=compare_family(results, ids, baseline_id, objective),
        headline=headline(results, rec.config_id, baseline_id, objective),
        mde=mde(results, rec.config_id, baseline_id, objective),
    )


def _along(summary: pd.DataFrame, chunking: str, axis: str, fixed: float) -> pd.DataFrame:
    """One chunking's summary rows along ``axis`` (``top_k`` or ``threshold``), the other fixed, sorted."""
    rows = summary[summary["chunking"] == chunking]
    along = at_threshold(rows["threshold"], fixed) if axis == "top_k" else rows["top_k"] == int(fixed)
    return rows[along].sort_values(axis)


def steps(
    results: pd.DataFrame,
    summary: pd.DataFrame,
    m: Measure,
    chunking: str,
    axis: str,
    fixed: float,
    objective: Objective,
) -> tuple[Step, ...]:
    """Paired gains between consecutive values of ``axis`` (``top_k`` or ``threshold``), the other fixed."""
    rows = _along(summary, chunking, axis, fixed)
    ids = [str(c) for c in rows["config_id"]]
    values = list(rows[axis].astype(float))
    if len(ids) < 2:
        return ()
    wide = matrix(results, m, ids)
    out = []
    for i in range(len(ids) - 1):
        comparison = _paired(wide[ids[i]].to_numpy(), wide[ids[i + 1]].to_numpy(), m, objective)
        if comparison is not None:
            out.append(Step(values[i], values[i + 1], ids[i], ids[i + 1], comparison))
    return tuple(out)


def plateau(k_steps: Sequence[Step]) -> float | None:
    """The smallest k after which the next k adds less than the noise (paired CI of the gain reaches 0).

    None when every step up the grid still gains beyond the noise (no plateau within the grid).
    """
    for step in k_steps:
        if step.comparison.delta_low <= 0.0:
            return step.frm
    return None


@dataclass(frozen=True)
class Curve:
    """A measure along one grid axis (top_k or threshold) for one chunking, with CIs."""

    chunking: str
    x: tuple[float, ...]
    config_ids: tuple[str, ...]
    means: tuple[float, ...]
    """Summary means (for context lines)."""
    intervals: tuple[stats.Interval | None, ...] | None
    """Bootstrap CIs, when asked for."""


def curve(
    results: pd.DataFrame,
    summary: pd.DataFrame,
    m: Measure,
    chunking: str,
    axis: str,
    fixed: float,
    objective: Objective,
    with_ci: bool,
) -> Curve:
    """``m`` along ``axis`` with the other of top_k/threshold fixed; CIs only when ``with_ci``."""
    rows = _along(summary, chunking, axis, fixed)
    ids = tuple(str(c) for c in rows["config_id"])
    column = m.name if m.name in rows.columns else m.column
    means = tuple(float(v) for v in rows[column]) if column in rows.columns else ()
    cis = tuple(config_interval(results, m, cid, objective) for cid in ids) if with_ci else None
    if not means and cis:
        means = tuple(c.mean if c else float("nan") for c in cis)
    return Curve(chunking, tuple(float(v) for v in rows[axis]), ids, means, cis)
