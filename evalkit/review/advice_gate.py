"""One voice: the gate's verdict beside advice the gate did not produce (pure given the run's frames).

The calibration advises a threshold from its own zero-hit target; the decision and the gate judge moves by
the gate's margins against production. Two rules on one page disagree unless the page says which wins, so
the advice carries the gate's verdict on following it and, where the calibration's target and the gate's
zero-hit margin differ, both numbers. The sweep scores the advised threshold from each chunking's pool even
off the grid (results column ``off_grid``), so the gate can judge it; advice the gate fails is not advice.
The same holds for every value a diagnostic rule advises (a lower overlap, a smaller top_k, a lower
threshold): :func:`config_verdict` is the one place the diagnostics ask the gate.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from evalkit.report.decision import Objective
from evalkit.scoring.compare import Margin
from evalkit.scoring.gatecheck import ConfigData, GateConfig, evaluate

GATE_RESAMPLES, GATE_SEED = 10000, 0
"""The gate's defaults (conf/gate/default.yaml): the verdict here is the one `python -m evalkit.gate` gives."""


def gate_of(objective: Objective, clusters: pd.Series | None = None) -> GateConfig | None:
    """The gate the decision used, from recommendation.json (None for a run without a decision), resampling
    ``clusters`` (the run's clusters.parquet, as `python -m evalkit.gate` does)."""
    if not objective.gate_margins or objective.confidence is None:
        return None
    margins = tuple(Margin(str(m["metric"]), str(m["kind"]), float(m["amount"])) for m in objective.gate_margins)
    confidence = float(objective.confidence)
    return GateConfig(confidence, GATE_RESAMPLES, GATE_SEED, margins, "recommendation.json", clusters)


@dataclass(frozen=True)
class GateWord:
    """The gate's verdict on following a piece of advice."""

    passed: bool | None
    """True: the gate passes it; False: it fails; None: the run cannot check it (no such config scored)."""
    text: str
    """The verdict as the page prints it, with the failed checks."""


ConfigVerdict = Callable[[str], GateWord]
"""config_id -> the gate's verdict on shipping that config instead of production."""


def config_verdict(
    results: pd.DataFrame,
    summary: pd.DataFrame,
    production_id: str | None,
    objective: Objective,
    clusters: pd.Series | None = None,
) -> ConfigVerdict | None:
    """A function: a config the diagnostics advise (any grid point, or a threshold scored beside the grid) ->
    the gate's verdict against production, as `python -m evalkit.gate` gives it. None: the run has no gate.

    Every rule that advises a value (a lower overlap, a smaller top_k, a threshold) asks this one function, so
    advice on the page never contradicts the gate: advice the gate fails is reported as failing, not advised.
    """
    gate = gate_of(objective, clusters)
    if gate is None or production_id is None:
        return None
    known = set(summary["config_id"].astype(str))
    done: dict[str, GateWord] = {}  # the gate's bootstrap is the slow part: one verdict per config and page

    def verdict(config_id: str) -> GateWord:
        if config_id not in done:
            done[config_id] = _verdict(config_id)
        return done[config_id]

    def _verdict(config_id: str) -> GateWord:
        if config_id == production_id:
            return GateWord(True, f"{config_id} is production")
        if config_id not in known:
            return GateWord(None, f"gate: {config_id} was not scored, so the gate cannot check it")
        checks, _ = evaluate(ConfigData(results, summary, production_id), ConfigData(results, summary, config_id), gate)
        failed = [f"{c.label}: not shown within {c.margin_text}" for c in checks if not c.passed]
        word = "PASS" if not failed else "FAIL (" + "; ".join(failed) + ")"
        return GateWord(not failed, f"gate on {config_id} against production: {word}")

    return verdict


def threshold_verdict(
    results: pd.DataFrame,
    summary: pd.DataFrame,
    production_id: str | None,
    focus: Mapping[str, Any],
    objective: Objective,
    clusters: pd.Series | None = None,
    judge: ConfigVerdict | None = None,
) -> Callable[[float], GateWord] | None:
    """A function: advised threshold for the focus config's chunking and k -> the gate's verdict on setting it
    (:func:`config_verdict` on that grid point, or on the one the sweep scored beside the grid), with the
    calibration's and the gate's zero-hit targets where they differ. ``judge``: the page's :func:`config_verdict`
    (its verdicts are kept, so a config two rules advise is bootstrapped once)."""
    gate = gate_of(objective, clusters)
    judge = judge or config_verdict(results, summary, production_id, objective, clusters)
    if gate is None or judge is None:
        return None
    zero_hit = next((m for m in gate.margins if m.metric == "zero_hit_answerable"), None)
    target = objective.zero_hit_answerable_max
    differ = ""
    if zero_hit is not None and target is not None:
        differ = (
            f"; the calibration targets zero-hit on answerable questions at most {100 * target:g}% absolute, the "
            f"gate allows production's zero-hit plus {100 * zero_hit.amount:g} points: the gate decides what ships"
        )

    def verdict(threshold: float) -> GateWord:
        same = summary[
            (summary["chunking"] == focus["chunking"])
            & (summary["top_k"] == focus["top_k"])
            & np.isclose(summary["threshold"].astype(float), threshold, rtol=1e-3, atol=1e-9)
        ]
        if same.empty:  # a run before the advised threshold was scored beside the grid
            return GateWord(None, f"gate: threshold {threshold:g} was not scored, so the gate cannot check it{differ}")
        word = judge(str(same.iloc[0]["config_id"]))
        return GateWord(word.passed, word.text + differ)

    return verdict


NOT_ADVISED = "not advised: "
"""How a fired rule's advice begins when the config it would advise fails the gate against production."""


def gated(fix: str, config_id: str | None, config_gate: ConfigVerdict | None, what: str) -> str:
    """A rule's advice with the gate's verdict on the config it advises (``what``: the change, in words).

    Advice whose config the gate fails against production is not given: the finding says what the change would
    be and that it fails the gate. Without a gate (a run without a decision) or a config, the advice stands alone.
    """
    if config_gate is None or config_id is None:
        return fix
    word = config_gate(config_id)
    if word.passed is False:
        return f"{NOT_ADVISED}{what} ({config_id}) fails the gate ({word.text})"
    return f"{fix} ({word.text})"
