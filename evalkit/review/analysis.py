"""The report's comparisons, computed once from a run (pure: frames in, run/ records out).

The focus config's (the sweep's decision, read from recommendation.json) comparison
with the production (baseline) config, the top_k plateau and the minimum detectable effect. Every comparison comes
from :mod:`evalkit.scoring.compare` (the one the gate uses too); this module only chooses what to compare and
turns scoring's records into review.json's (:mod:`evalkit.run.review`).

Every interval and paired comparison resamples the run's clusters (clusters.parquet, the ones the decision and
the gate resample: the question's source document by default) when the settings carry them
(:func:`resampling`), else questions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, fields, replace
from typing import TypeVar

import numpy as np
import pandas as pd

from evalkit.run.folder import BaselinePoint
from evalkit.run.review import BaselineComparison, Curve, HeadlineRow, Interval, Mde, Paired, Statistics, Step
from evalkit.scoring import compare, stats
from evalkit.scoring.compare import Resampling
from evalkit.scoring.production import production_in_grid
from evalkit.scoring.registry import COST_PER_QUERY, HEADLINE, Measure, measure
from evalkit.scoring.values import at_threshold, available, matrix, per_question

R = TypeVar("R", Interval, Paired)

__all__ = [
    "as_interval",
    "as_paired",
    "compare_family",
    "compare_with_baseline",
    "config_interval",
    "curve",
    "find_config",
    "headline",
    "interval",
    "mde",
    "plateau",
    "resampling",
    "resolve_baseline",
    "steps",
]


Settings = Statistics | Resampling
"""review.json's resampling record (questions resampled), or scoring's with the run's clusters."""


def resampling(statistics: Settings, clusters: pd.Series | None = None) -> Resampling:
    """The comparison settings every paired comparison of the review uses (``clusters``: question_id -> cluster)."""
    if isinstance(statistics, Resampling):
        return statistics if clusters is None else replace(statistics, clusters=clusters)
    return Resampling(statistics.level, statistics.n_resamples, statistics.seed, clusters)


def as_interval(ci: stats.Interval | None) -> Interval | None:
    """scoring's interval as review.json holds it: the same record, its numbers plain Python (not numpy)."""
    return None if ci is None else _plain(ci)


def as_paired(c: stats.PairedComparison | None) -> Paired | None:
    """scoring's paired comparison as review.json holds it: the same record, its numbers plain Python."""
    return None if c is None else _plain(c)


def _plain(record: R) -> R:
    """``record`` with numpy scalars as Python numbers (json writes those; an ``np.int64`` it refuses)."""
    plain = {f.name: getattr(record, f.name) for f in fields(record)}  # type: ignore[arg-type]
    return replace(record, **{k: v.item() if isinstance(v, np.generic) else v for k, v in plain.items()})


def k_label(metric: str, k: int) -> str:
    """A measure's label at one top_k (``recall@k`` -> ``recall@5``)."""
    return measure(metric).label.replace("@k", f"@{k}")


def find_config(summary: pd.DataFrame, chunking: str, top_k: int, threshold: float) -> str | None:
    """config_id of a grid point (thresholds compared with a tolerance, never ``==``)."""
    match = summary[
        (summary["chunking"] == chunking) & (summary["top_k"] == top_k) & at_threshold(summary["threshold"], threshold)
    ]
    return None if match.empty else str(match.iloc[0]["config_id"])


def resolve_baseline(summary: pd.DataFrame, point: BaselinePoint | None, external: bool = False) -> str | None:
    """The baseline's config_id, found as the decision and the gate find it (an external run's at its own
    chunking); a null threshold means the lowest of the grid. None if not in the grid."""
    return None if point is None else production_in_grid(summary, **asdict(point), external=external)


def _paired(wide: pd.DataFrame, baseline_id: str, candidate_id: str, m: Measure, statistics: Settings) -> Paired | None:
    """``candidate_id - baseline_id`` on the questions of ``wide`` (question_id x config_id)."""
    base, cand = wide[baseline_id].to_numpy(), wide[candidate_id].to_numpy()
    return as_paired(compare.paired(base, cand, resampling(statistics), m.name, wide.index.to_numpy()))


def interval(values: np.ndarray, statistics: Settings, questions: np.ndarray | None = None) -> Interval | None:
    """Bootstrap CI of the mean (None when every value is missing), clusters of ``questions`` resampled."""
    return as_interval(compare.mean_interval(values, resampling(statistics), questions))


def config_interval(results: pd.DataFrame, m: Measure, config_id: str, statistics: Settings) -> Interval | None:
    values = per_question(results, m, config_id)
    return interval(values.to_numpy(), statistics, values.index.to_numpy())


def compare_family(
    results: pd.DataFrame, config_ids: Sequence[str], baseline_id: str, metric: str, statistics: Settings
) -> tuple[tuple[str, Paired], ...]:
    """Each config versus the baseline on the objective, Holm-adjusted across all of them.

    Configs with identical per-question values share one bootstrap (same seed, same answer).
    """
    m = measure(metric)
    wide = matrix(results, m, [*dict.fromkeys([baseline_id, *config_ids])])
    candidates = [(config_id, wide[config_id].to_numpy()) for config_id in config_ids]
    family = compare.family(
        wide[baseline_id].to_numpy(), candidates, resampling(statistics), m.name, wide.index.to_numpy()
    )
    return tuple((config_id, as_paired(c)) for config_id, c in family)  # type: ignore[misc]


def headline(
    results: pd.DataFrame, recommended_id: str, baseline_id: str, statistics: Settings
) -> tuple[HeadlineRow, ...]:
    """Recommended versus baseline on each headline measure present in the results."""
    names = HEADLINE + (("cost_per_query",) if COST_PER_QUERY in results.columns else ())
    rows = []
    for m in available(results, names):
        wide = matrix(results, m, [*dict.fromkeys([baseline_id, recommended_id])])
        questions = wide.index.to_numpy()
        rows.append(
            HeadlineRow(
                measure=m.name,
                recommended=interval(wide[recommended_id].to_numpy(), statistics, questions),
                baseline=interval(wide[baseline_id].to_numpy(), statistics, questions),
                comparison=_paired(wide, baseline_id, recommended_id, m, statistics),
            )
        )
    return tuple(rows)


def mde(results: pd.DataFrame, recommended_id: str, baseline_id: str, metric: str, statistics: Settings) -> Mde | None:
    """Minimum detectable effect (80% power, two-sided at 1 - level) of the objective on this set.

    Binary values: the paired McNemar formula with the discordance observed between the
    recommended and the baseline config (or, when they never disagree, ``2p(1-p)`` from the
    baseline rate). Continuous values: the standard deviation of the per-question differences. With the
    run's clusters, at ``n / design effect`` (the clustered intervals beside it are that much wider).
    """
    m = measure(metric)
    ids = [*dict.fromkeys([baseline_id, recommended_id])]  # the same config may be both
    wide = matrix(results, m, ids)
    clusters = resampling(statistics).codes(wide.index.to_numpy())
    found = compare.detectable_effect(
        wide[baseline_id].to_numpy(), wide[recommended_id].to_numpy(), statistics.level, clusters
    )
    return None if found is None else _plain(found)


def compare_with_baseline(
    results: pd.DataFrame, summary: pd.DataFrame, focus_id: str, baseline_id: str, metric: str, statistics: Settings
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
    statistics: Settings,
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
        comparison = _paired(wide, ids[i], ids[i + 1], m, statistics)
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


def curve(
    results: pd.DataFrame,
    summary: pd.DataFrame,
    m: Measure,
    chunking: str,
    axis: str,
    fixed: float,
    statistics: Settings,
    with_ci: bool,
) -> Curve:
    """``m`` along ``axis`` with the other of top_k/threshold fixed; CIs only when ``with_ci``."""
    rows = _along(summary, chunking, axis, fixed)
    ids = tuple(str(c) for c in rows["config_id"])
    column = m.name if m.name in rows.columns else m.column
    means = tuple(float(v) for v in rows[column]) if column in rows.columns else ()  # type: tuple[float, ...]
    cis = tuple(config_interval(results, m, cid, statistics) for cid in ids) if with_ci else None
    if not means and cis:
        means = tuple(c.mean if c else float("nan") for c in cis)
    return Curve(chunking, tuple(float(v) for v in rows[axis]), ids, means, cis)
