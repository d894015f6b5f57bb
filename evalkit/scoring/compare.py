"""A config against the baseline on per-question values: the one paired comparison (pure, no I/O).

The report (recommendation, ties, headline table, Holm family, top_k and
threshold steps, diagnostics) and the gate (non-inferiority within margins)
compare configs through these functions only, so one seed and one order of
resampling give one answer everywhere. The statistics themselves are in
:mod:`evalkit.scoring.stats`.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from evalkit.records import Mde
from evalkit.scoring import stats
from evalkit.scoring.clusters import labels_for
from evalkit.scoring.stats.cluster_intervals import cluster_mean_ci, measured_design_effect
from evalkit.scoring.stats.cluster_paired import cluster_paired_bootstrap
from evalkit.scoring.stats.power import mcnemar_exact_p

__all__ = [
    "MARGIN_KINDS",
    "Margin",
    "Mde",
    "Resampling",
    "detectable_effect",
    "family",
    "is_binary",
    "mean_interval",
    "non_inferiority",
    "paired",
    "point",
]


@dataclass(frozen=True)
class Resampling:
    """How a comparison resamples: two-sided level, bootstrap resamples, seed, and the unit resampled."""

    level: float = 0.95
    n_resamples: int = 5000
    seed: int = 0
    clusters: pd.Series | None = field(default=None, compare=False, repr=False)
    """question_id -> cluster label (:mod:`evalkit.scoring.clusters`): whole clusters are resampled; None: questions."""

    def codes(self, questions: Sequence[object] | np.ndarray | None) -> np.ndarray | None:
        """The cluster label of each of ``questions`` (a question the map lacks is its own); None: by question."""
        return None if questions is None else labels_for(questions, self.clusters)


def paired(
    baseline: np.ndarray,
    candidate: np.ndarray,
    settings: Resampling,
    metric: str = "",
    questions: Sequence[object] | np.ndarray | None = None,
) -> stats.PairedComparison | None:
    """Paired bootstrap of ``candidate - baseline`` over the questions both define; None when none does.

    The arrays hold one value per question in the same order (NaN where undefined); ``questions``
    names them. With ``settings.clusters`` and ``questions`` whole clusters are resampled
    (:func:`~evalkit.scoring.stats.cluster_paired.cluster_paired_bootstrap`), else questions.
    """
    keep = ~(np.isnan(baseline) | np.isnan(candidate))
    if not keep.any():
        return None
    codes = settings.codes(questions)
    if codes is not None:
        return cluster_paired_bootstrap(
            baseline, candidate, codes, settings.level, settings.n_resamples, settings.seed, metric
        )
    return stats.paired_bootstrap(
        baseline,
        candidate,
        level=settings.level,
        n_resamples=settings.n_resamples,
        seed=settings.seed,
        metric=metric,
    )


def paired_binary(
    baseline: np.ndarray,
    candidate: np.ndarray,
    settings: Resampling,
    metric: str = "",
    questions: Sequence[object] | np.ndarray | None = None,
) -> stats.PairedComparison | None:
    """Paired 0/1 outcomes (answer accuracy): Newcombe's hybrid score interval and the exact McNemar p-value,
    over the questions both define; None when none does.

    With clusters (see :func:`paired`) the interval is the outer bounds of Newcombe's and the cluster
    bootstrap's, and the p-value the larger of the two: Newcombe keeps small sets covered, the cluster
    bootstrap questions of one document (McNemar alone assumes independent questions).
    """
    keep = ~(np.isnan(baseline) | np.isnan(candidate))
    if not keep.any():
        return None
    base, cand = baseline[keep], candidate[keep]
    interval = stats.paired_difference_ci(base, cand, settings.level)
    wins, losses = int(np.sum((cand == 1) & (base == 0))), int(np.sum((cand == 0) & (base == 1)))
    low, high, p_value, test = interval.low, interval.high, mcnemar_exact_p(wins, losses), "exact McNemar"
    codes = settings.codes(questions)
    if codes is not None:
        clustered = cluster_paired_bootstrap(
            base, cand, codes[keep], settings.level, settings.n_resamples, settings.seed, metric
        )
        low, high = min(low, clustered.delta_low), max(high, clustered.delta_high)
        p_value, test = max(p_value, clustered.p_value), f"exact McNemar and {clustered.test}"
    return stats.PairedComparison(
        metric, float(base.mean()), float(cand.mean()), interval.mean, low, high,
        p_value, int(base.size), test, level=settings.level,
        n_missing=int((~keep).sum()),
    )  # fmt: skip


def point(metric: str, baseline_mean: float, candidate_mean: float, n: int) -> stats.PairedComparison:
    """A comparison of two per-config means without per-question values: the interval is the point itself."""
    delta = candidate_mean - baseline_mean
    return stats.PairedComparison(metric, baseline_mean, candidate_mean, delta, delta, delta, math.nan, n, "point")


def family(
    baseline: np.ndarray,
    candidates: Sequence[tuple[str, np.ndarray]],
    settings: Resampling,
    metric: str = "",
    questions: Sequence[object] | np.ndarray | None = None,
) -> tuple[tuple[str, stats.PairedComparison], ...]:
    """Each candidate versus the baseline, Holm-adjusted across the family.

    Candidates no question defines together with the baseline are left out. Candidates with
    identical per-question values share one bootstrap (same seed, same answer).
    """
    done: dict[str, stats.PairedComparison] = {}
    out: list[tuple[str, stats.PairedComparison]] = []
    for config_id, values in candidates:
        key = hashlib.sha256(np.ascontiguousarray(values).tobytes()).hexdigest()
        if key not in done:
            comparison = paired(baseline, values, settings, metric, questions)
            if comparison is None:
                continue
            done[key] = comparison
        out.append((config_id, done[key]))
    adjusted = stats.with_holm([c for _, c in out]) if out else ()
    return tuple((cid, c) for (cid, _), c in zip(out, adjusted, strict=True))


def mean_interval(
    values: np.ndarray, settings: Resampling, questions: Sequence[object] | np.ndarray | None = None
) -> stats.Interval | None:
    """Bootstrap CI of the mean (None when every value is missing); whole clusters resampled as :func:`paired` does."""
    if np.isnan(values).all():
        return None
    codes = settings.codes(questions)
    if codes is not None:
        return cluster_mean_ci(values, codes, settings.level, settings.n_resamples, settings.seed)
    return stats.bootstrap_ci(values, level=settings.level, n_resamples=settings.n_resamples, seed=settings.seed)


# Minimum detectable effect ------------------------------------------------------


def is_binary(values: np.ndarray) -> bool:
    """Whether all non-missing values are 0 or 1."""
    kept = values[~np.isnan(values)]
    return bool(kept.size) and bool(np.isin(kept, (0.0, 1.0)).all())


def detectable_effect(
    baseline: np.ndarray, candidate: np.ndarray, level: float, clusters: np.ndarray | None = None
) -> Mde | None:
    """Minimum detectable effect (80% power, two-sided at 1 - level) on the questions both define.

    With ``clusters`` (each question's cluster label, as :meth:`Resampling.codes` gives them) the questions
    are worth ``n / design effect`` independent ones, the design effect measured on the paired differences
    (:func:`~evalkit.scoring.stats.cluster_intervals.measured_design_effect`): the MDE is stated at that size,
    as the clustered intervals it is compared with are that much wider.

    Exact power throughout (``stats.minimum_detectable_effect``); ``value`` is ``inf`` when not
    detectable at this size. Binary values: the exact McNemar test at the discordance observed
    between the two configs (or, when they never disagree, ``2p(1-p)`` from the baseline rate).
    Continuous values: the paired t test at the standard deviation of the per-question
    differences; when the configs never differ, the two-sample t test at the baseline's own
    spread. None when no question is shared, or when nothing varies at all (no spread to plan from).
    """
    keep = ~(np.isnan(baseline) | np.isnan(candidate))
    if not keep.any():
        return None
    base, cand = baseline[keep], candidate[keep]
    n = int(keep.sum())
    found = _detectable(base, cand, n, 1.0 - level)
    if found is None or clusters is None:
        return found
    effect = measured_design_effect(cand - base, np.asarray(clusters, dtype=object)[keep])
    if effect <= 1.0:
        return found
    clustered = _detectable(base, cand, max(2, int(n / effect)), 1.0 - level)
    assert clustered is not None  # the same values vary as they did at n
    how = f"{clustered.how}; at n / design effect {effect:.2f} = {max(2, int(n / effect))} (clustered questions)"
    return Mde(clustered.value, n, how)


def _detectable(base: np.ndarray, cand: np.ndarray, n: int, alpha: float) -> Mde | None:
    """The MDE at ``n`` independent questions with the spread (or discordance) of ``base`` and ``cand``."""
    if is_binary(base) and is_binary(cand):
        psi = stats.discordance_rate(base, cand)
        if psi > 0:
            value = stats.minimum_detectable_effect(n, discordance=psi, alpha=alpha)
            return Mde(value, n, f"exact McNemar power, {psi:.1%} of questions discordant between the two configs")
        rate = float(base.mean())
        value = stats.minimum_detectable_effect(n, baseline_rate=rate, alpha=alpha)
        return Mde(value, n, f"exact McNemar power, discordance 2p(1-p) from the baseline rate {rate:.1%}")
    sd = float(np.std(cand - base, ddof=1)) if n > 1 else 0.0
    if sd > 0:
        value = stats.minimum_detectable_effect(n, sd=sd, alpha=alpha)
        return Mde(value, n, f"paired t test, standard deviation of the differences {sd:.3f}")
    # The two configs never differ: plan with the baseline's own spread, as if a change were independent.
    spread = float(np.std(base, ddof=1)) if n > 1 else 0.0
    if spread <= 0:
        return None
    value = stats.minimum_detectable_effect(n, sd=spread, alpha=alpha, paired=False)
    how = f"the configs never differ; two-sample t test at the baseline's standard deviation {spread:.3f}"
    return Mde(value, n, how)


# Non-inferiority within a margin ------------------------------------------------

MARGIN_KINDS = {"max_drop": True, "max_drop_pct": True, "max_rise": False, "max_rise_pct": False}
"""Margin key -> whether it belongs to a higher-is-better metric."""


@dataclass(frozen=True)
class Margin:
    """The largest tolerated loss on one measure: an amount in its units, or a percentage of the baseline."""

    metric: str
    kind: str
    """max_drop, max_drop_pct, max_rise or max_rise_pct."""
    amount: float

    @property
    def relative(self) -> bool:
        return self.kind.endswith("_pct")

    @property
    def higher_is_better(self) -> bool:
        """A drop margin guards a higher-is-better measure, a rise margin a lower-is-better one."""
        return MARGIN_KINDS[self.kind]

    def absolute(self, baseline_mean: float) -> float:
        """The margin in the metric's units (a percentage applies to the baseline mean)."""
        return abs(baseline_mean) * self.amount / 100.0 if self.relative else self.amount


def non_inferiority(comparison: stats.PairedComparison, margin: Margin, higher_is_better: bool) -> tuple[float, bool]:
    """The margin in the metric's units, and whether the candidate's bad-side bound stays within it."""
    absolute = margin.absolute(comparison.baseline_mean)
    return absolute, stats.non_inferior(comparison, absolute, higher_is_better=higher_is_better)
