"""Result records of the statistics (frozen dataclasses)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Interval", "PairedComparison", "RatioInterval"]


@dataclass(frozen=True)
class Interval:
    """A confidence interval for the mean of one metric."""

    mean: float
    """Sample mean of the non-missing values."""
    low: float
    """Lower bound."""
    high: float
    """Upper bound."""
    n: int
    """Number of values used (missing values excluded)."""
    level: float
    """Two-sided confidence level, e.g. 0.95."""
    method: str = "percentile"
    """How the bounds were computed: ``percentile``, ``bca``, ``wilson``, ``degenerate`` (bootstrap_ci of
    all-equal values), ``t-studentised``, ``cluster-bootstrap``, ``wilson-questions``, ``newcombe`` or
    ``wilson-difference``."""
    n_missing: int = 0
    """Number of NaN values dropped before computing."""

    @property
    def half_width(self) -> float:
        """Half the interval's width (the "+-" figure a report shows)."""
        return (self.high - self.low) / 2.0


@dataclass(frozen=True)
class PairedComparison:
    """Candidate versus baseline on the same questions, one metric."""

    metric: str
    """Metric name, e.g. ``hit@5``."""
    baseline_mean: float
    """Mean of the baseline's values over the compared questions."""
    candidate_mean: float
    """Mean of the candidate's values over the compared questions."""
    delta: float
    """``candidate_mean - baseline_mean``."""
    delta_low: float
    """Lower bound of the bootstrap interval for ``delta``."""
    delta_high: float
    """Upper bound of the bootstrap interval for ``delta``."""
    p_value: float
    """Two-sided p-value for "no difference", from ``test``."""
    n: int
    """Number of question pairs compared."""
    test: str
    """Source of ``p_value``: ``bootstrap`` or ``permutation`` (paired sign flip)."""
    p_adjusted: float | None = None
    """Holm-adjusted p-value when this comparison is one of a family, else None."""
    level: float = 0.95
    """Two-sided level of ``[delta_low, delta_high]``."""
    n_missing: int = 0
    """Pairs dropped because either value was NaN."""


@dataclass(frozen=True)
class RatioInterval:
    """Interval for ``mean(candidate) / mean(baseline)`` on paired values (e.g. cost)."""

    ratio: float
    """Observed ratio of means."""
    low: float
    """Lower percentile-bootstrap bound."""
    high: float
    """Upper percentile-bootstrap bound (``inf`` if some resample had a zero baseline)."""
    n: int
    """Number of question pairs used."""
    level: float
    """Two-sided confidence level."""
    n_missing: int = 0
    """Pairs dropped because either value was NaN."""

    @property
    def percent_change(self) -> float:
        """Observed relative change in percent: ``100 * (ratio - 1)``."""
        return 100.0 * (self.ratio - 1.0)
