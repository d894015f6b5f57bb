"""What an interval shows against a non-inferiority margin: one rule, three words, everywhere.

Every answer measure of every config ends in one of three states, and only one of them moves advice:

- **shown not worse**: the interval's low end clears the margin (higher is better; mirrored otherwise);
- **shown worse**: the interval's high end is below the margin: the only state that removes a candidate;
- **not shown**: the interval straddles the margin (too few answers), or nothing was answered at all.

Absence of evidence is never a veto and never a pass: a config whose answers are *not shown* is decided
exactly as ``answer_check=off`` decides it, and the gate says "not checked" rather than PASS. The console,
recommendation.json, review.json, the report and gate.md all print the state :func:`evidence_state` returns.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from scipy.stats import norm

SHOWN_NOT_WORSE = "shown not worse"
SHOWN_WORSE = "shown worse"
NOT_SHOWN = "not shown"
NOT_CHECKED = "not checked"
"""Not shown because nothing was measured (no answer under both configs, or a stand-in's latency)."""

STATES = (SHOWN_NOT_WORSE, SHOWN_WORSE, NOT_SHOWN, NOT_CHECKED)


def evidence_state(low: float, high: float, margin: float, higher_is_better: bool = True) -> str:
    """The state an interval ``[low, high]`` of (candidate - baseline) shows against ``margin`` (>= 0)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return NOT_SHOWN
    if higher_is_better:
        if low > -margin:
            return SHOWN_NOT_WORSE
        return SHOWN_WORSE if high < -margin else NOT_SHOWN
    if high < margin:
        return SHOWN_NOT_WORSE
    return SHOWN_WORSE if low > margin else NOT_SHOWN


def floor_half_width(n: int, level: float) -> float:
    """The narrowest half-width ``n`` paired answers can honestly give a difference of values in [-1, 1].

    When every answer agrees, the sample variance is 0 and an interval from it has no width at all: 2 equal
    F1 scores would "show" any margin. But seeing no disagreement in ``n`` pairs only bounds the share of
    pairs that disagree by Wilson's upper limit at 0 events, ``z**2 / (n + z**2)``; a difference of values in
    [-1, 1] has variance at most that share. The half-width of a mean of ``n`` such differences is at least
    ``z * sqrt(share / n)``: about 1.1 at 2 answers, 9 points at 40, 3.8 at 100 (Newcombe's interval at 0
    discordant pairs is about as wide). Infinite without answers.
    """
    if n <= 0:
        return math.inf
    z = float(norm.isf((1.0 - level) / 2.0))
    share = z * z / (n + z * z)
    return z * math.sqrt(share / n)


def with_floor(delta: float, low: float, high: float, n: int, level: float) -> tuple[float, float]:
    """``[low, high]`` widened to at least :func:`floor_half_width` around ``delta``, clipped to [-1, 1]."""
    half = floor_half_width(n, level)
    return max(-1.0, min(low, delta - half)), min(1.0, max(high, delta + half))


def removes(state: str) -> bool:
    """Only evidence of harm removes a candidate from the advice or fails a gate check."""
    return state == SHOWN_WORSE


def decides(state: str) -> bool:
    """True when the evidence settles the question (either way); False: it decides nothing."""
    return state in (SHOWN_NOT_WORSE, SHOWN_WORSE)


def combined_state(states: Iterable[str]) -> str:
    """One config's state over its measures: worse if any is shown worse, not worse only if all are."""
    found = list(states)
    if not found:
        return NOT_CHECKED
    if any(s == SHOWN_WORSE for s in found):
        return SHOWN_WORSE
    if all(s == SHOWN_NOT_WORSE for s in found):
        return SHOWN_NOT_WORSE
    return NOT_CHECKED if all(s == NOT_CHECKED for s in found) else NOT_SHOWN
