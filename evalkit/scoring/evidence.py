"""What an interval shows against a non-inferiority margin: one rule, three words, everywhere.

Every answer measure of every config ends in one of three states, and only one of them moves advice:

- **shown not worse**: the interval's low end clears the margin (higher is better; mirrored otherwise);
- **shown worse**: the interval's high end is below the margin: the only state that removes a candidate;
- **not shown**: the interval straddles the margin (too few answers), or nothing was answered at all.

Absence of evidence is never a veto and never a pass: a config whose answers are *not shown* is decided
exactly as ``answer_check=off`` decides it, and the gate says "not checked" rather than PASS. The console,
recommendation.json, review.json, the report and gate.md all print :data:`WORDS` of :func:`evidence_state`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

SHOWN_NOT_WORSE = "shown not worse"
SHOWN_WORSE = "shown worse"
NOT_SHOWN = "not shown"
NOT_CHECKED = "not checked"
"""Not shown because nothing was measured (no answer under both configs, or a stand-in's latency)."""

STATES = (SHOWN_NOT_WORSE, SHOWN_WORSE, NOT_SHOWN, NOT_CHECKED)
WORDS = {
    SHOWN_NOT_WORSE: "shown not worse beyond the margin",
    SHOWN_WORSE: "shown worse beyond the margin",
    NOT_SHOWN: "not shown at this size",
    NOT_CHECKED: "not checked",
}


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
