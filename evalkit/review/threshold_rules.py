"""Threshold rules (pure given the run's frames): a threshold step that raised misses, and the calibration's advice.

Split from :mod:`evalkit.review.diagnostics` (one module per family of rules). Both rules speak with the gate's
voice (issue 47): the calibration's threshold is scored beside the grid and advised only when the gate passes it
and no lower threshold step already raised zero-hit without a gain; "keep the threshold below" names the highest
lower threshold the gate passes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from evalkit.report import fmt
from evalkit.report.decision import Objective
from evalkit.review.advice_gate import ConfigVerdict, GateWord, gated
from evalkit.review.analysis import Settings, k_label, steps
from evalkit.review.threshold_advice import WIDEN, calibration_floor, threshold_advice
from evalkit.run.review import Finding, Step
from evalkit.scoring.registry import measure


def raised_steps(
    results: pd.DataFrame, summary: pd.DataFrame, rec: Mapping[str, Any], objective: Objective, statistics: Settings
) -> list[tuple[Step, Step | None, Step | None]]:
    """Each threshold step of the recommended chunking and k: (zero-hit step, primary step, abstention step)."""
    chunking, k = str(rec["chunking"]), int(rec["top_k"])
    zero = steps(results, summary, measure("zero_hit_answerable"), chunking, "threshold", k, statistics)
    gain = {
        s.to_id: s for s in steps(results, summary, measure(objective.primary), chunking, "threshold", k, statistics)
    }
    abstain = {
        s.to_id: s
        for s in steps(results, summary, measure("zero_hit_unanswerable"), chunking, "threshold", k, statistics)
    }
    return [(s, gain.get(s.to_id), abstain.get(s.to_id)) for s in zero]


def _raises_misses(zero: Step, gain: Step | None) -> bool:
    """Zero-hit on answerable questions shown to rise, and no gain on the primary measure shown."""
    return zero.comparison.delta_low > 0.0 and (gain is None or gain.comparison.delta_low <= 0.0)


def first_raise(stepped: list[tuple[Step, Step | None, Step | None]]) -> float | None:
    """The lowest threshold whose step raised zero-hit without a gain (None: no step did)."""
    raised = [float(z.to) for z, g, _ in stepped if _raises_misses(z, g)]
    return min(raised) if raised else None


def blocked_advice(
    threshold: float, raised_at: float | None, gate_verdict: Callable[[float], GateWord] | None
) -> tuple[str | None, GateWord | None]:
    """Why an advised threshold is not advice (None: it stands), and the gate's word on it.

    Advice the gate fails against production is not given, nor advice a run with a gate did not score (e.g. the
    calibration's advice recomputed under a stricter cap than the sweep's: the gate cannot check it), nor a
    threshold at or above one whose step already raised zero-hit on answerable questions without a gain (another
    finding on the same page says so). Without a gate (a run before recommendation.json) the advice stands alone.
    """
    word = gate_verdict(threshold) if gate_verdict is not None else None
    if word is not None and word.passed is False:
        return f"it fails the gate ({word.text})", word
    if word is not None and word.passed is None:
        return f"the gate cannot check it yet ({word.text})", word
    if raised_at is not None and threshold >= raised_at * (1 - 1e-9) - 1e-12:
        return f"threshold {raised_at:g} already raised zero-hit on answerable questions without a recall gain", word
    return None, word


def keep_below(
    stepped: list[tuple[Step, Step | None, Step | None]], raised: Step, config_gate: ConfigVerdict | None
) -> str:
    """The threshold rule's advice for a step that raised misses: keep the threshold below it, at the highest lower
    grid threshold the gate passes against production (walking down from the step's own start; the lowest is
    often production's own). None passes: the advice is refused with the gate's word on the step's start."""
    below = sorted(
        {(float(z.frm), z.from_id) for z, _, _ in stepped if float(z.frm) <= float(raised.frm)}, reverse=True
    )
    if config_gate is None:
        return f"keep the threshold below {raised.to:g} ({raised.frm:g} or lower); {WIDEN}"
    for threshold, config_id in below:
        word = config_gate(config_id)
        if word.passed is not False:
            return f"keep the threshold below {raised.to:g} ({threshold:g} or lower); {WIDEN} ({word.text})"
    return gated("", raised.from_id, config_gate, f"lowering the threshold to {raised.frm:g}")


def threshold_rule(
    results: pd.DataFrame,
    summary: pd.DataFrame,
    rec: Mapping[str, Any],
    objective: Objective,
    statistics: Settings,
    calibrated: float | None = None,
    calibration: pd.DataFrame | None = None,
    gate_verdict: Callable[[float], GateWord] | None = None,
    config_gate: ConfigVerdict | None = None,
) -> tuple[Finding, ...]:
    """A higher threshold that raises zero-hit on answerable questions and gains no recall; the advised lower
    threshold carries the gate's verdict (:func:`gated`), the calibration's as :func:`blocked_advice` says.

    ``calibrated`` (the former overlap-edge value) is accepted for callers that still pass it and ignored.
    """
    chunking, k = str(rec["chunking"]), int(rec["top_k"])
    stepped = raised_steps(results, summary, rec, objective, statistics)
    raised_at = first_raise(stepped)
    findings = []
    # The former calibrated value (upper edge of the overlap interval) is never advised: it can leave most
    # answerable questions without context. Only the advice columns, which respect the zero-hit target, are,
    # and only when the gate passes them and no step at or below them raised zero-hit without a gain.
    advice = threshold_advice(calibration, results, rec, objective)
    for s, g, a in stepped:
        c = s.comparison
        arithmetic = (
            f"threshold {s.frm:g} → {s.to:g} (chunking {chunking}, top_k {k}): zero-hit on answerable questions "
            f"{fmt.pct(c.baseline_mean)} → {fmt.pct(c.candidate_mean)} ({fmt.delta(c)})"
            + (f"; {k_label(objective.primary, k)} {fmt.delta(g.comparison)}" if g else "")
            + (
                f"; correct abstentions on unanswerable questions {fmt.pct(a.comparison.baseline_mean)} → "
                f"{fmt.pct(a.comparison.candidate_mean)}"
                if a
                else ""
            )
        )
        if _raises_misses(s, g):
            fix = keep_below(stepped, s, config_gate)
            if advice is None or advice.threshold is None:
                fix = advice.fix if advice is not None else f"keep the threshold at its lowest value; {WIDEN}"
            elif float(advice.threshold) < float(s.to):
                why, word = blocked_advice(float(advice.threshold), raised_at, gate_verdict)
                if why is None:  # a lower threshold the gate accepts: the calibration's advice stands
                    fix = advice.fix + (f" ({word.text})" if word is not None else "")
            findings.append(
                Finding(
                    "threshold",
                    True,
                    f"threshold {s.to:g} raised zero-hit on answerable questions by "
                    f"{fmt.signed_points(c.delta)} points without a recall gain",
                    arithmetic,
                    fix,
                )
            )
        else:
            findings.append(
                Finding(
                    "threshold", False, f"threshold {s.frm:g} → {s.to:g}: no significant rise in misses", arithmetic
                )
            )
    if not findings:
        findings.append(Finding("threshold", False, "not applicable: the grid has one threshold", ""))
    return tuple(findings)


def calibration_rule(
    calibration: pd.DataFrame | None,
    results: pd.DataFrame,
    rec: Mapping[str, Any],
    objective: Objective,
    gate_verdict: Callable[[float], GateWord] | None = None,
    raised_at: float | None = None,
) -> tuple[Finding, ...]:
    """The threshold the calibration advises for the recommended config, against the one it uses; with
    ``gate_verdict``, the gate's verdict on following the advice stands beside it (one voice), and advice the
    gate fails, or at or above ``raised_at`` (a threshold that raised zero-hit without a gain), is not given."""
    advice = threshold_advice(calibration, results, rec, objective)
    if advice is None:
        return (Finding("threshold", False, "no threshold advice in this run (calibration without advice)", ""),)
    current = float(rec["threshold"])
    if advice.threshold is None:
        fired = current > float(calibration_floor(calibration, str(rec["chunking"])))
        title = advice.fix.split(":")[0] + f"; the recommended config uses {current:g}"
        return (Finding("threshold", fired, title, advice.arithmetic, advice.fix if fired else ""),)
    fired = not np.isclose(current, advice.threshold, rtol=1e-3, atol=0)
    if not fired:
        title = f"the calibration advises threshold {advice.threshold:g}; the recommended config uses {current:g}"
        return (Finding("threshold", False, title, advice.arithmetic, ""),)
    why, word = blocked_advice(float(advice.threshold), raised_at, gate_verdict)
    if why is not None:
        title = (
            f"the calibration's threshold {advice.threshold:g} is not advised: {why.split(' (')[0]}; the recommended "
            f"config uses {current:g}"
        )
        fix = f"do not set threshold {advice.threshold:g}: {why}"
        return (Finding("threshold", True, title, f"{advice.arithmetic}; calibration: {advice.fix}", fix),)
    title = f"the calibration advises threshold {advice.threshold:g}; the recommended config uses {current:g}"
    fix = advice.fix + (f" ({word.text})" if word is not None else "")
    return (Finding("threshold", True, title, advice.arithmetic, fix),)
