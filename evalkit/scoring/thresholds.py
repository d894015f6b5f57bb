"""Choosing a score threshold that keeps answers (pure).

A threshold earns its place only by making unanswerable questions get no
context; its price is answerable questions that get none either (zero-hit, a
miss). This module owns the arithmetic of that trade on best-score arrays:

- :func:`roc_auc`: how well a score separates two groups (Mann-Whitney U over
  all pairs, ties counted half);
- :func:`highest_threshold_within`: the highest threshold whose zero-hit on
  answerable questions stays within a target;
- :func:`advise`: "threshold" only when the set has unanswerable questions and
  the best score separates them (AUC >= :data:`MIN_AUC`), else "no threshold"
  and why;
- :func:`auto_thresholds`: a sweep grid from score quantiles, because BM25
  scores differ in scale per corpus and a fixed grid fits none of them.

Conventions shared with the sweep's slicing: a candidate is kept when its
score is at least the threshold, so a question is a zero-hit when its best
score is below the threshold; a question with no candidate (NaN best score)
is a zero-hit whatever the threshold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal

import numpy as np

DEFAULT_ZERO_HIT_TARGET = 0.05
"""Most answerable questions a threshold may leave without context (the objective's default cap)."""
MIN_AUC = 0.7
"""Below this ROC AUC (answerable against unanswerable best score) a threshold costs more answers than it saves."""
AUTO_LEVELS = (0.02, 0.05, 0.10, 0.20, 0.30, 0.50)
"""Quantiles of answerable questions' best scores that ``threshold: auto`` puts on the grid, in order."""
SIGNIFICANT_DIGITS = 3

WIDEN_POOL = (
    "when zero-hit rises without a gain, widen the candidate pool one step (pool_size), do not lower the threshold"
)
"""The seed rule every "no threshold" advice ends with."""


@dataclass(frozen=True)
class Advice:
    """What to do with the threshold of one score for one class of questions."""

    advice: str
    """``threshold`` or ``no threshold``."""
    reason: str
    """Why, in plain words (with the seed rule when there is no threshold)."""
    advised_threshold: float
    """The highest threshold within the zero-hit target; NaN when the advice is ``no threshold``."""
    recommended_threshold: float
    """What to set: the advised threshold, or ``floor`` (no filtering) when there is none."""
    zero_hit_answerable_at_advised: float
    """Share of answerable questions left without context at the advised threshold (NaN without one)."""
    abstention_at_advised: float
    """Share of unanswerable questions left without context (a correct abstention) at it (NaN without one)."""
    auc_answerable_vs_unanswerable: float
    """ROC AUC of the best score, answerable against unanswerable questions (NaN without both)."""


def roc_auc(positive: np.ndarray, negative: np.ndarray) -> float:
    """P(a positive scores above a negative) + half P(a tie): Mann-Whitney U / (n_pos * n_neg); NaN when empty."""
    pos = np.asarray(positive, dtype=float)
    neg = np.sort(np.asarray(negative, dtype=float))
    if pos.size == 0 or neg.size == 0:
        return float("nan")
    below = np.searchsorted(neg, pos, side="left")
    upto = np.searchsorted(neg, pos, side="right")
    return float((below + 0.5 * (upto - below)).sum() / (pos.size * neg.size))


def zero_hit_at(best: np.ndarray, threshold: float) -> float:
    """Share of questions whose best score is below ``threshold`` (NaN best: always); NaN for no question."""
    values = np.asarray(best, dtype=float)
    if values.size == 0:
        return float("nan")
    return float((np.isnan(values) | (values < threshold)).mean())


def _allowed_misses(n: int, target: float) -> int:
    """The largest m in [0, n] with m / n <= target, in the float arithmetic a share is computed with."""
    m = min(n, max(0, math.floor(target * n)))
    while m > 0 and m / n > target:
        m -= 1
    while m < n and (m + 1) / n <= target:
        m += 1
    return m


def highest_threshold_within(best_answerable: np.ndarray, target: float) -> float | None:
    """The highest threshold t with zero_hit_at(best_answerable, t) <= target; None when none reaches it.

    Sorted ascending, the m+1-th finite best score s[m] has at most m scores below it,
    and any higher threshold has more, so it is the answer (m = misses the target allows,
    less the questions without any candidate, which miss whatever the threshold).
    """
    values = np.asarray(best_answerable, dtype=float)
    if values.size == 0 or target < 0:
        return None
    missing = int(np.isnan(values).sum())
    allowed = _allowed_misses(values.size, target) - missing
    finite = np.sort(values[~np.isnan(values)])
    if allowed < 0 or finite.size == 0:
        return None
    return float(finite[min(allowed, finite.size - 1)])


def advise(
    best_answerable: np.ndarray,
    best_unanswerable: np.ndarray,
    floor: float = 0.0,
    target: float = DEFAULT_ZERO_HIT_TARGET,
    min_auc: float = MIN_AUC,
) -> Advice:
    """The threshold advice for one score and one class; ``floor`` is the no-filtering threshold."""
    ans = np.asarray(best_answerable, dtype=float)
    unans = np.asarray(best_unanswerable, dtype=float)
    # No candidate at all is the lowest possible score.
    auc = roc_auc(np.nan_to_num(ans, nan=-np.inf), np.nan_to_num(unans, nan=-np.inf))
    candidate = highest_threshold_within(ans, target)
    why = None
    if ans.size == 0:
        why = "no answerable questions to keep"
    elif unans.size == 0:
        why = "no unanswerable questions: a threshold can only add misses"
    elif candidate is None:
        why = f"more than {target:.0%} of answerable questions get no candidate at any threshold"
    elif not auc >= min_auc:
        why = f"AUC {_auc(auc, min_auc)} < {min_auc:g}: the best score barely separates answerable from unanswerable"
    elif candidate <= floor or zero_hit_at(unans, candidate) <= zero_hit_at(unans, floor):
        why = f"the highest threshold within {target:.0%} zero-hit abstains on no more unanswerable questions"
    if why is not None or candidate is None:
        nan = float("nan")
        return Advice("no threshold", f"{why}; {WIDEN_POOL}", nan, floor, nan, nan, auc)
    return Advice(
        "threshold",
        f"AUC {_auc(auc, min_auc)} >= {min_auc:g}: the highest threshold with zero-hit on answerable questions "
        f"within {target:.0%}",
        candidate,
        candidate,
        zero_hit_at(ans, candidate),
        zero_hit_at(unans, candidate),
        auc,
    )


def _auc(auc: float, bound: float) -> str:
    """Two decimals, or three where two would round onto the bound and read as a contradiction."""
    return f"{auc:.3f}" if abs(auc - bound) < 0.005 else f"{auc:.2f}"


def floor_significant(value: float, digits: int = SIGNIFICANT_DIGITS) -> float:
    """``value`` rounded down to ``digits`` significant digits, so a shown threshold never exceeds the computed one."""
    if not math.isfinite(value) or value == 0:
        return float(value)
    exact = Decimal(value)
    step = Decimal(1).scaleb(exact.adjusted() - (digits - 1))
    return float(exact.quantize(step, rounding=ROUND_FLOOR))


def no_filter_threshold(scores: np.ndarray) -> float:
    """The threshold that filters nothing: 0, or the lowest score when a score is negative."""
    values = np.asarray(scores, dtype=float)
    finite = values[np.isfinite(values)]
    lowest = float(finite.min()) if finite.size else 0.0
    return 0.0 if lowest >= 0 else floor_significant(lowest)


def auto_thresholds(best_scores: np.ndarray, n: int = 4) -> tuple[float, ...]:
    """A threshold grid of at most ``n`` values from answerable questions' best scores (one chunking's).

    First the no-filtering value (0 for non-negative scores), then the scores below which
    2%, 5%, 10%, ... (:data:`AUTO_LEVELS`) of those questions fall, rounded down to three
    significant digits (so each keeps its zero-hit at most its level), deduplicated, ascending.
    """
    values = np.asarray(best_scores, dtype=float)
    first = no_filter_threshold(values)
    finite = values[np.isfinite(values)]
    grid = [first]
    if finite.size and n > 1:
        # "lower": an observed score, with at most level * count scores below it.
        for level in AUTO_LEVELS[: n - 1]:
            grid.append(floor_significant(float(np.quantile(finite, level, method="lower"))))
    return tuple(sorted({v for v in grid if v >= first}))
