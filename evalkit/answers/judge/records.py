"""The judge's records: a row to judge, its advisory score, and the noise floor of repeated judgements (pure)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

COLUMN_PREFIX = "judge_"
"""Judge scores live in their own columns, ``judge_<metric>``; evalkit's own scores keep theirs."""


class JudgeError(RuntimeError):
    """The judge cannot run (no key, ragas missing, the API refuses the key or the model)."""


@dataclass(frozen=True)
class JudgeRow:
    """One answer to judge against its gold answer."""

    key: str
    """The row's id in the results (a question id, or a result row's key); copied onto its score."""
    question: str
    answer: str
    """The model's answer, as scored by evalkit."""
    reference: str
    """The gold answer. Empty for an unanswerable question: such a row is not judged."""


@dataclass(frozen=True)
class JudgeScore:
    """The judge's verdict on one row, in ``[0, 1]``; advisory, kept beside evalkit's own scores."""

    key: str
    metric: str
    model: str
    score: float
    """NaN when the row was not judged (see ``note``)."""
    calls: int
    """Judge calls sent to the model for this row (cache hits excluded; the SDK's retries not counted)."""
    cached: bool
    """Every judge call of this row came from evalkit's cache."""
    note: str = ""
    """Why ``score`` is NaN (no reference, empty answer, the judge's error), else empty."""

    @property
    def column(self) -> str:
        """The results column this score goes into."""
        return judge_column(self.metric)


@dataclass(frozen=True)
class NoiseFloor:
    """One judgement repeated ``n`` times (uncached): how much the judge disagrees with itself."""

    key: str
    metric: str
    model: str
    n: int
    """Repeats asked for."""
    scores: tuple[float, ...]
    """The judged repeats (a repeat that failed is left out and counted in ``failed``)."""
    failed: int
    mean: float
    std: float
    """Sample standard deviation (n - 1 in the denominator) of ``scores``."""
    min: float
    max: float
    spread: float
    """``max - min``: the floor a difference between two configs' judge means must clear."""

    @classmethod
    def from_scores(cls, scores: Sequence[float], *, key: str = "", metric: str = "", model: str = "") -> NoiseFloor:
        """Statistics of repeated judgements; NaN repeats count as failed. Needs two judged repeats."""
        judged = tuple(float(s) for s in scores if not math.isnan(s))
        if len(judged) < 2:
            raise JudgeError(f"a noise floor needs at least 2 judged repeats, got {len(judged)} of {len(scores)}")
        low, high = min(judged), max(judged)
        return cls(
            key=key,
            metric=metric,
            model=model,
            n=len(scores),
            scores=judged,
            failed=len(scores) - len(judged),
            mean=statistics.fmean(judged),
            std=statistics.stdev(judged),
            min=low,
            max=high,
            spread=high - low,
        )

    def within(self, mean_a: float, mean_b: float) -> bool:
        """Whether two configs' judge means differ by no more than this floor's spread (i.e. within noise)."""
        return within_noise_floor(mean_a, mean_b, self)


def within_noise_floor(mean_a: float, mean_b: float, floor: NoiseFloor) -> bool:
    """Whether ``|mean_a - mean_b|`` is within the judge's spread on one repeated judgement.

    Conservative on purpose: a difference the judge can produce by disagreeing with itself on a single
    question is not evidence that one config is better. NaN means are never "within".
    """
    delta = abs(mean_a - mean_b)
    return not math.isnan(delta) and delta <= floor.spread


def judge_column(metric: str) -> str:
    """``judge_<metric>``: the column a judge metric's scores go into."""
    return f"{COLUMN_PREFIX}{metric}"
