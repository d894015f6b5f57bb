"""The gate's checks, pure: is a candidate config non-inferior to a baseline on every margin?

``python -m evalkit.gate`` and the sweep's recommendation both call :func:`evaluate`
on the same per-question values, so a config the recommendation picks passes
the gate by construction. Reading the margins file and the run folders is the
callers' job (:mod:`evalkit.pipeline.margins`, :mod:`evalkit.run.folder`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import norm

from evalkit.scoring import compare, stats
from evalkit.scoring.compare import MARGIN_KINDS, Margin, Resampling
from evalkit.scoring.evidence import NOT_CHECKED, NOT_SHOWN, SHOWN_NOT_WORSE, evidence_state, with_floor
from evalkit.scoring.latency import LatencyModel
from evalkit.scoring.registry import (
    ANSWER_CORRECT,
    ANSWER_F1,
    COLUMNS,
    COST_COLUMNS,
    FIRST_TOKEN_S,
    MEASURES,
    Measure,
)
from evalkit.scoring.values import per_question

ANSWER_COLUMNS = (ANSWER_CORRECT, ANSWER_F1)
"""Columns only the answer check fills: missing values there mean a config was not answered."""
EVIDENCE_COLUMNS = (*ANSWER_COLUMNS, FIRST_TOKEN_S)
"""Measures decided by :mod:`evalkit.scoring.evidence`'s three states: only *shown worse* fails a candidate,
*not shown* (or not checked) decides nothing either way. Retrieval measures, measured on every question of
the set, must be shown within their margin to pass, as before."""


class GateError(ValueError):
    """Bad input to the gate; the message is one line."""


@dataclass(frozen=True)
class ConfigData:
    """One config's per-question results and summary row source (a run's frames, or the sweep's in memory)."""

    results: pd.DataFrame
    summary: pd.DataFrame
    config_id: str

    def row(self) -> Mapping[str, Any]:
        match = self.summary[self.summary["config_id"] == self.config_id]
        if match.empty:
            raise GateError(f"no config {self.config_id!r} in the summary")
        return match.iloc[0].to_dict()


def describe_margin(margin: Margin, m: Measure) -> str:
    """The margin in words, e.g. ``drop ≤ 2 points``."""
    word = "drop" if margin.higher_is_better else "rise"
    if margin.relative:
        return f"{word} ≤ {margin.amount:g}%"
    return f"{word} ≤ {100 * margin.amount:g} points" if m.proportion else f"{word} ≤ {margin.amount:g}"


@dataclass(frozen=True)
class GateConfig:
    """The margins file, validated."""

    confidence: float
    n_resamples: int
    seed: int
    margins: tuple[Margin, ...]
    source: str
    clusters: pd.Series | None = field(default=None, compare=False, repr=False)
    """question_id -> cluster (the run's clusters.parquet): whole clusters are resampled; None: questions."""
    answer_design: Callable[[str, str], Mapping[str, Any] | None] | None = field(default=None, compare=False,
                                                                                repr=False)  # fmt: skip
    """A stratified answer check's estimates for (baseline, candidate): {"accuracy": effect, "f1": effect} in the
    check's effect records, None when the design holds neither config; None: answers paired per question."""
    latency: LatencyModel | None = field(default=None, compare=False, repr=False)
    """The line behind ``first_token_s`` (when it is production's): its slope's uncertainty widens the interval."""

    @property
    def resampling(self) -> Resampling:
        return Resampling(self.confidence, self.n_resamples, self.seed, self.clusters)


@dataclass(frozen=True)
class Check:
    """One metric's verdict (a row of gate.json)."""

    metric: str
    label: str
    higher_is_better: bool
    proportion: bool
    baseline: float
    candidate: float
    delta: float
    delta_low: float
    delta_high: float
    margin: float
    """Absolute margin in the metric's units."""
    margin_kind: str
    margin_text: str
    n: int
    n_missing: int
    p_value: float
    passed: bool
    unit: str = "proportion"
    """The metric's unit (the registry's: ``proportion``, ``usd``, ``seconds``, ...): how its numbers are printed."""
    method: str = "paired bootstrap"
    """``paired bootstrap`` over questions (``, clusters resampled`` when over documents), or ``point``
    (per-config means: no per-question values)."""


def parse_margins(raw: Any, source: str) -> GateConfig:
    """Validate a margins mapping (``conf/gate/*.yaml``) into a :class:`GateConfig`."""
    path = source
    if not isinstance(raw, dict) or not isinstance(raw.get("checks"), dict) or not raw["checks"]:
        raise GateError(f"{path}: expected a mapping with a non-empty 'checks' mapping")
    confidence = float(raw.get("confidence", 0.95))
    if not 0.5 <= confidence < 1.0:
        raise GateError(f"{path}: confidence {confidence} must lie in [0.5, 1)")
    margins = []
    for metric, spec in raw["checks"].items():
        if metric not in MEASURES:
            raise GateError(f"{path}: checks.{metric}: unknown metric; known: {', '.join(MEASURES)}")
        if not isinstance(spec, dict) or len(spec) != 1 or next(iter(spec)) not in MARGIN_KINDS:
            raise GateError(f"{path}: checks.{metric}: give exactly one of {', '.join(MARGIN_KINDS)}")
        kind, amount = next(iter(spec.items()))
        if MARGIN_KINDS[kind] != MEASURES[metric].higher_is_better:
            better = "higher" if MEASURES[metric].higher_is_better else "lower"
            raise GateError(f"{path}: checks.{metric}: {kind} does not fit a metric where {better} is better")
        try:
            amount = float(amount)
        except (TypeError, ValueError):
            raise GateError(f"{path}: checks.{metric}.{kind}: {amount!r} is not a number") from None
        if not (math.isfinite(amount) and amount >= 0):
            raise GateError(f"{path}: checks.{metric}.{kind}: must be a non-negative number")
        margins.append(Margin(str(metric), str(kind), amount))
    return GateConfig(confidence, int(raw.get("n_resamples", 10000)), int(raw.get("seed", 0)), tuple(margins), source)


def paired_values(baseline: ConfigData, candidate: ConfigData, m: Measure) -> tuple[np.ndarray, np.ndarray]:
    """Both configs' values of ``m`` on the same questions, in the same order."""
    _, base, cand = paired_series(baseline, candidate, m)
    return base, cand


def paired_series(baseline: ConfigData, candidate: ConfigData, m: Measure) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The question ids, and both configs' values of ``m`` on those questions in that order."""
    base = per_question(baseline.results, m, baseline.config_id)
    cand = per_question(candidate.results, m, candidate.config_id)
    if set(base.index) != set(cand.index):
        raise GateError(f"the runs scored different questions ({len(base)} vs {len(cand)}; same labelset.limit?)")
    return base.index.to_numpy(), base.to_numpy(dtype=float), cand.reindex(base.index).to_numpy(dtype=float)


def point_comparison(baseline: ConfigData, candidate: ConfigData, m: Measure) -> stats.PairedComparison:
    """Per-config means from the summaries when the results hold no per-question values (e.g. cost).

    The interval is the point itself: the gate then compares the observed difference with the margin.
    """
    base = float(baseline.row()[m.column])
    cand = float(candidate.row()[m.column])
    n = int(candidate.row().get("n_questions") or 0)
    return compare.point(m.name, base, cand, n)


def _comparison(
    baseline: ConfigData, candidate: ConfigData, m: Measure, config: GateConfig
) -> tuple[stats.PairedComparison, str] | str:
    """The comparison of one measure and its method, or why it is skipped (GateError for a missing column)."""
    sides = (("baseline", baseline), ("candidate", candidate))
    missing = [s for s, side in sides if m.column not in side.results.columns]
    if missing and all(m.column in side.summary.columns for _, side in sides):
        return point_comparison(baseline, candidate, m), "point"
    if missing:
        if m.column in COST_COLUMNS:
            return f"no {m.column} in the {' or '.join(missing)} run"
        if m.column in (*ANSWER_COLUMNS, FIRST_TOKEN_S):
            return f"no answers in the {' or '.join(missing)} run (answer_check=off, or a run before the check)"
        raise GateError(f"{m.name}: column {m.column!r} missing from the {' and '.join(missing)} results")
    questions, base, cand = paired_series(baseline, candidate, m)
    unit = "" if config.clusters is None else ", clusters resampled"
    if m.binary:
        c = compare.paired_binary(base, cand, config.resampling, m.name, questions)
        method = f"Newcombe interval, exact McNemar{unit}"
    else:
        c, method = compare.paired(base, cand, config.resampling, m.name, questions), f"paired bootstrap{unit}"
    if c is None:
        answers = " (the answer check did not answer both configs)" if m.column in ANSWER_COLUMNS else ""
        return f"no question where both values are defined{answers}"
    return c, method


DESIGN_KEYS = {ANSWER_CORRECT: "accuracy", ANSWER_F1: "f1"}


def _from_effect(effect: Mapping[str, Any], m: Measure) -> tuple[stats.PairedComparison, str]:
    """A design estimate as a comparison: the set's difference and interval (already floored and clustered)."""
    comparison = stats.PairedComparison(
        m.name, float(effect.get("production") or 0.0), float(effect.get("candidate") or 0.0), float(effect["delta"]),
        float(effect["low"]), float(effect["high"]), math.nan, int(effect["n"]), "stratified design",
    )  # fmt: skip
    return comparison, str(effect.get("method", "stratified, prediction-powered"))


def with_slope_uncertainty(c: stats.PairedComparison, model: LatencyModel, level: float) -> stats.PairedComparison:
    """A modelled latency difference widened by the fitted slope's own uncertainty.

    The per-question values are the line at each prompt length, so their paired bootstrap sees only which
    questions were drawn; the difference of two configs' means is ``slope * (difference in prompt tokens)``,
    and the slope was estimated from ``n`` requests: its standard error times the token difference is added
    in quadrature on each side.
    """
    if not (model.slope and math.isfinite(model.slope_se)):
        return c
    tokens = c.delta / model.slope
    extra = float(norm.isf((1.0 - level) / 2.0)) * abs(tokens) * model.slope_se
    low = c.delta - math.hypot(c.delta - c.delta_low, extra)
    high = c.delta + math.hypot(c.delta_high - c.delta, extra)
    return replace(c, delta_low=low, delta_high=high)


def evaluate(
    baseline: ConfigData, candidate: ConfigData, config: GateConfig
) -> tuple[tuple[Check, ...], tuple[dict[str, str], ...]]:
    """Every check of the margins file that decides; the others returned as skipped, each with why.

    A retrieval check always decides (pass: shown within its margin). An answer or latency check decides
    only when its evidence does (:func:`evalkit.scoring.evidence.evidence_state`): *shown not worse* passes,
    *shown worse* fails, and *not shown* or *not checked* is skipped with its ``state`` and interval, so a
    handful of answers neither fails a candidate nor passes one.
    """
    checks: list[Check] = []
    skipped: list[dict[str, Any]] = []
    for margin in config.margins:
        m = MEASURES[margin.metric]
        if m.column in ANSWER_COLUMNS and config.answer_design is not None:
            effects = config.answer_design(baseline.config_id, candidate.config_id)
            effect = (effects or {}).get(DESIGN_KEYS[m.column])
            if effect is None:
                skipped.append({"metric": m.name, "state": NOT_CHECKED,
                                "reason": "the answer check's design did not answer both configs"})  # fmt: skip
                continue
            found = _from_effect(effect, m)
        else:
            found = _comparison(baseline, candidate, m, config)
        if isinstance(found, str):
            state = NOT_CHECKED if m.column in EVIDENCE_COLUMNS else None
            skipped.append({"metric": m.name, "reason": found} | ({"state": state} if state else {}))
            continue
        c, method = found
        absolute, passed = compare.non_inferiority(c, margin, m.higher_is_better)
        if m.column in ANSWER_COLUMNS and config.answer_design is None:  # what n answers can show at all
            low, high = with_floor(c.delta, c.delta_low, c.delta_high, c.n, config.confidence)
            c = replace(c, delta_low=low, delta_high=high)
        if m.column == FIRST_TOKEN_S and config.latency is not None:
            c = with_slope_uncertainty(c, config.latency, config.confidence)
        if m.column in EVIDENCE_COLUMNS:
            state = evidence_state(c.delta_low, c.delta_high, absolute, m.higher_is_better)
            if state == NOT_SHOWN:
                skipped.append({
                    "metric": m.name, "state": NOT_SHOWN,
                    "reason": f"{NOT_SHOWN} on {c.n} questions: interval [{c.delta_low:+.3g}, {c.delta_high:+.3g}] "
                              f"straddles the margin ({describe_margin(margin, m)}); it decides nothing",
                })  # fmt: skip
                continue
            passed = state == SHOWN_NOT_WORSE
        checks.append(
            Check(
                metric=m.name,
                label=m.label,
                higher_is_better=m.higher_is_better,
                proportion=m.proportion,
                baseline=c.baseline_mean,
                candidate=c.candidate_mean,
                delta=c.delta,
                delta_low=c.delta_low,
                delta_high=c.delta_high,
                margin=absolute,
                margin_kind=margin.kind,
                margin_text=describe_margin(margin, m),
                n=c.n,
                n_missing=c.n_missing,
                p_value=c.p_value,
                passed=passed,
                unit=COLUMNS[m.column].unit,
                method=method,
            )
        )
    return tuple(checks), tuple(skipped)
