"""What the report computes from a run (pure: frames in, frozen records out).

The focus config's (the sweep's decision, read from recommendation.json) comparison
with the production (baseline) config, the top_k plateau and the minimum detectable effect. Every comparison comes
from :mod:`evalkit.scoring.compare` (the one the gate uses too); this module
only chooses what to compare.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

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
    "Statistics",
    "Step",
    "compare_family",
    "compare_with_baseline",
    "config_interval",
    "curve",
    "find_config",
    "headline",
    "interval",
    "mde",
    "plateau",
    "resolve_baseline",
    "steps",
]


@dataclass(frozen=True)
class Statistics:
    """How the report's intervals and paired comparisons are computed.

    Only resampling: what is maximised and under which caps is the sweep's decision
    (recommendation.json, :mod:`evalkit.report.decision`), which the report renders and never recomputes.
    """

    level: float = 0.95
    n_resamples: int = 5000
    seed: int = 0

    @property
    def resampling(self) -> Resampling:
        """The comparison settings every paired comparison of the report uses."""
        return Resampling(self.level, self.n_resamples, self.seed)


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
    """Every config versus the baseline on the objective, Holm-adjusted across the family."""
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


def find_config(summary: pd.DataFrame, chunking: str, top_k: int, threshold: float) -> str | None:
    """config_id of a grid point (thresholds compared with a tolerance, never ``==``)."""
    match = summary[
        (summary["chunking"] == chunking) & (summary["top_k"] == top_k) & at_threshold(summary["threshold"], threshold)
    ]
    return None if match.empty else str(match.iloc[0]["config_id"])


def resolve_baseline(summary: pd.DataFrame, point: BaselinePoint | None) -> str | None:
    """The baseline's config_id; a null threshold means the lowest of the grid. None if not in the grid."""
    return None if point is None else find_production(summary, **asdict(point))


def _paired(
    baseline: np.ndarray, candidate: np.ndarray, m: Measure, statistics: Statistics
) -> stats.PairedComparison | None:
    return compare.paired(baseline, candidate, statistics.resampling, m.name)


def interval(values: np.ndarray, statistics: Statistics) -> stats.Interval | None:
    """Bootstrap CI of the mean (None when every value is missing)."""
    return compare.mean_interval(values, statistics.resampling)


def config_interval(results: pd.DataFrame, m: Measure, config_id: str, statistics: Statistics) -> stats.Interval | None:
    return interval(per_question(results, m, config_id).to_numpy(), statistics)


def compare_family(
    results: pd.DataFrame, config_ids: Sequence[str], baseline_id: str, metric: str, statistics: Statistics
) -> tuple[tuple[str, stats.PairedComparison], ...]:
    """Each config versus the baseline on the objective, Holm-adjusted across all of them.

    Configs with identical per-question values share one bootstrap (same seed, same answer).
    """
    m = measure(metric)
    wide = matrix(results, m, [*dict.fromkeys([baseline_id, *config_ids])])
    candidates = [(config_id, wide[config_id].to_numpy()) for config_id in config_ids]
    return compare.family(wide[baseline_id].to_numpy(), candidates, statistics.resampling, m.name)


def headline(
    results: pd.DataFrame, recommended_id: str, baseline_id: str, statistics: Statistics
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
                recommended=interval(rec, statistics),
                baseline=interval(base, statistics),
                comparison=_paired(base, rec, m, statistics),
            )
        )
    return tuple(rows)


def mde(
    results: pd.DataFrame, recommended_id: str, baseline_id: str, metric: str, statistics: Statistics
) -> Mde | None:
    """Minimum detectable effect (80% power, two-sided at 1 - level) of the objective on this set.

    Binary values: the paired McNemar formula with the discordance observed between the
    recommended and the baseline config (or, when they never disagree, ``2p(1-p)`` from the
    baseline rate). Continuous values: the standard deviation of the per-question differences.
    """
    m = measure(metric)
    ids = [*dict.fromkeys([baseline_id, recommended_id])]  # the same config may be both
    wide = matrix(results, m, ids)
    return compare.detectable_effect(wide[baseline_id].to_numpy(), wide[recommended_id].to_numpy(), statistics.level)


def compare_with_baseline(
    results: pd.DataFrame, summary: pd.DataFrame, focus_id: str, baseline_id: str, metric: str, statistics: Statistics
) -> BaselineComparison:
    """Everything the report says about the focus config (the decision's) versus production.

    The family is every config of the grid against production: which of them the objective
    allows is the decision's business (recommendation.json), not the report's.
    """
    ids = [str(c) for c in summary["config_id"] if str(c) != baseline_id]
    return BaselineComparison(
        baseline_id=baseline_id,
        family=compare_family(results, ids, baseline_id, metric, statistics),
        headline=headline(results, focus_id, baseline_id, statistics),
        mde=mde(results, focus_id, baseline_id, metric, statistics),
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
    statistics: Statistics,
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
        comparison = _paired(wide[ids[i]].to_numpy(), wide[ids[i + 1]].to_numpy(), m, statistics)
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
    statistics: Statistics,
    with_ci: bool,
) -> Curve:
    """``m`` along ``axis`` with the other of top_k/threshold fixed; CIs only when ``with_ci``."""
    rows = _along(summary, chunking, axis, fixed)
    ids = tuple(str(c) for c in rows["config_id"])
    column = m.name if m.name in rows.columns else m.column
    means = tuple(float(v) for v in rows[column]) if column in rows.columns else ()
    cis = tuple(config_interval(results, m, cid, statistics) for cid in ids) if with_ci else None
    if not means and cis:
        means = tuple(c.mean if c else float("nan") for c in cis)
    return Curve(chunking, tuple(float(v) for v in rows[axis]), ids, means, cis)
