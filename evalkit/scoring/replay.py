"""The weekly replay's rule (pure): production's zero-hit rate on fresh questions, and the one move it calls for.

Once a threshold is live it is kept by one number: the share of production's questions
that get no context (nothing in the candidate pool scores at or above the threshold). A
replay asks about 20 fresh questions from the query log (no labels) and compares that
share with the zero-hit target the sweep calibrated its thresholds under
(``objective.zero_hit_answerable_max``, :data:`evalkit.scoring.thresholds.DEFAULT_ZERO_HIT_TARGET`).

The moves (:func:`replay_advice`), never a lower threshold: lowering it to chase the rate
hands the model weaker context for every question, and undoes the calibration.

- ``keep``: the rate is within the target;
- ``widen``: above the target, and the next pool size (:func:`next_pool_size`) gives fewer
  of these questions no context, measured on the same questions: widen the pool one step;
- ``relabel``: above the target, and a wider pool gives no fewer (without a reranker the best
  score is the retriever's top hit whatever the pool; or the pool is at its largest): label
  these questions and re-run the sweep. Without labels a zero-hit may be a correct abstention
  (a question the documents do not answer); labels tell the two apart.

The rate's interval is the continuity-corrected Wilson interval (never of width zero, also
at 0 of 20); whether it lies wholly above the target is said with the move, not hidden in it:
one step of pool is cheap to undo, so the move follows the rate and the interval qualifies it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from evalkit.scoring.stats.intervals import wilson_bounds

__all__ = [
    "POOL_STEP",
    "Move",
    "ReplayAdvice",
    "ZeroHitRate",
    "describe",
    "next_pool_size",
    "replay_advice",
    "zero_hit_rate",
]

POOL_STEP = 2
"""One step of the candidate pool: ``pool_size`` times this (50 -> 100 -> 200 ...), up to the largest allowed."""
LEVEL = 0.95
Move = Literal["keep", "widen", "relabel"]


@dataclass(frozen=True)
class ZeroHitRate:
    """Questions that got no context, of those replayed, with the rate's Wilson interval."""

    zero_hits: int
    n: int
    rate: float
    low: float
    high: float
    level: float = LEVEL
    method: str = "wilson-cc"


@dataclass(frozen=True)
class ReplayAdvice:
    """The move for one replay, and why in plain words."""

    move: Move
    reason: str
    threshold: float
    """Production's threshold: every move keeps it."""
    pool_size: int
    """Production's pool size."""
    next_pool_size: int | None
    """The pool one step wider (None when ``pool_size`` is already the largest)."""


def zero_hit_rate(zero_hits: int, n: int, level: float = LEVEL) -> ZeroHitRate:
    """``zero_hits`` of ``n`` with the continuity-corrected Wilson interval; ValueError unless 0 <= zero_hits <= n."""
    if n < 1 or not 0 <= zero_hits <= n:
        raise ValueError(f"zero-hits must be between 0 and n >= 1, got {zero_hits} of {n}")
    rate = zero_hits / n
    low, high = wilson_bounds(rate, n, level, continuity_correction=True)
    return ZeroHitRate(zero_hits, n, rate, low, high, level)


def next_pool_size(pool_size: int, largest: int) -> int | None:
    """The pool one step wider (:data:`POOL_STEP`), capped at ``largest``; None when already there."""
    if pool_size >= largest:
        return None
    return min(pool_size * POOL_STEP, largest)


def _pct(share: float) -> str:
    return f"{100 * share:.1f}%"


def describe(rate: ZeroHitRate) -> str:
    """``3 of 20 = 15.0% [4.0%, 38.9%]``."""
    return f"{rate.zero_hits} of {rate.n} = {_pct(rate.rate)} [{_pct(rate.low)}, {_pct(rate.high)}]"


def replay_advice(
    rate: ZeroHitRate,
    target: float,
    threshold: float,
    pool_size: int,
    wider_pool: int | None,
    wider: ZeroHitRate | None,
    reranked: bool,
) -> ReplayAdvice:
    """The move for ``rate`` against ``target`` (see the module docstring).

    ``wider`` is the rate of the same questions at ``wider_pool`` (None when not measured:
    it is needed only above the target, or there is no wider pool); ``reranked``: whether a
    reranker scores the pool (without one a wider pool cannot raise the best score).
    """
    if not 0.0 <= target <= 1.0 or math.isnan(threshold):
        raise ValueError(f"target must be a share in [0, 1] and the threshold a number, got {target}, {threshold}")
    keep = f"do not lower the threshold {threshold:g}"
    if rate.rate <= target:
        reason = f"zero-hit {describe(rate)} is within the target {_pct(target)}: keep pool_size {pool_size}; {keep}"
        return ReplayAdvice("keep", reason, threshold, pool_size, wider_pool)
    noise = (
        "its interval lies above the target"
        if rate.low > target
        else f"its interval reaches the target: {rate.n} questions cannot tell it from noise; one step is cheap to undo"
    )
    above = f"zero-hit {describe(rate)} is above the target {_pct(target)} ({noise})"
    if wider_pool is not None and wider is None:
        raise ValueError(f"above the target the rate at pool_size {wider_pool} must be measured before advising")
    if wider_pool is not None and wider is not None and wider.zero_hits < rate.zero_hits:
        reason = (
            f"{above}: widen the candidate pool one step, pool_size {pool_size} -> {wider_pool} "
            f"(on these questions: {describe(wider)}); {keep}"
        )
        return ReplayAdvice("widen", reason, threshold, pool_size, wider_pool)
    if wider_pool is None:
        why = f"pool_size {pool_size} is already the largest"
    elif reranked:
        why = f"pool_size {wider_pool} gives no fewer of these questions context"
    else:
        why = (
            f"pool_size {wider_pool} gives no fewer of these questions context: without a reranker the best score "
            "is the retriever's top hit, whatever the pool"
        )
    reason = (
        f"{above}, and {why}: {keep}; label these questions (a zero-hit may be a correct abstention) "
        "and re-run the sweep"
    )
    return ReplayAdvice("relabel", reason, threshold, pool_size, wider_pool)
