"""Point-estimate constraints, and the pick's gain estimated out of sample (pure).

The best of many configs, scored on the questions that chose it, looks better
than it is. :func:`out_of_sample_gain` repeats the WHOLE selection on a random
half of the clusters (source documents; questions when there are none): the
objective's pick among all candidates, best first, under the caps and the
gate's margins on point estimates (cheap: the decision has already
bootstrapped the pick; a bootstrap per split and candidate would multiply
that by the splits); then it measures what that selection gains on the other
half (nothing when it keeps production). The figure a reviewer reads is the
expected gain of the selection and the share of splits where the selected
config's gain holds on the held-back half: how often new questions confirm a
pick made this way, not the in-sample gain recomputed on halves. A half
"holds" a gain only when it shows it (its paired interval lies above 0, the
same comparison every decision uses); the share of halves whose point
estimate is merely positive is given beside it (``positive_share``): on real
sets most held-out intervals cross 0 while their point estimates are positive.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from evalkit.scoring import compare
from evalkit.scoring.gatecheck import GateConfig
from evalkit.scoring.objective import ConfigTable, ObjectiveSettings, column_means
from evalkit.scoring.registry import MEASURES


def point_constraints(
    table: ConfigTable,
    rows: np.ndarray | None,
    config_id: str,
    production_id: str,
    objective: ObjectiveSettings,
    gate: GateConfig,
    budget: float,
) -> list[dict[str, Any]]:
    """The caps (kind ``cap``) and the gate's margins on point estimates (kind ``margin``) over ``rows``."""
    zero_hit = column_means(table.zero_hit_answerable, rows)
    tokens = column_means(table.prompt_tokens, rows)
    out = [
        _cap(
            "zero_hit_answerable",
            "zero-hit (answerable)",
            zero_hit[config_id],
            zero_hit[production_id],
            objective.zero_hit_answerable_max,
            f"≤ {objective.zero_hit_answerable_max:.0%}",
            higher_ok=False,
        ),
        _cap(
            "prompt_tokens",
            "prompt tokens / query",
            tokens[config_id],
            tokens[production_id],
            budget,
            f"≤ {budget:,.0f}",
            higher_ok=False,
        ),
    ]
    if objective.abstention_no_worse and table.has_unanswerable:
        abstain = column_means(table.abstention, rows)
        floor = float(abstain[production_id])
        out.append(
            _cap(
                "abstention",
                "abstention (unanswerable)",
                abstain[config_id],
                floor,
                floor,
                f"≥ production's {floor:.1%}",
                higher_ok=True,
            )
        )
    for margin in gate.margins:
        if margin.metric not in table.margins:
            continue
        means = column_means(table.margins[margin.metric], rows)
        base, cand = float(means[production_id]), float(means[config_id])
        if math.isnan(base) or math.isnan(cand):
            continue  # a measure this config (or production) has no values of, e.g. answers not checked
        limit = margin.absolute(base)
        delta = cand - base
        ok = delta >= -limit if MEASURES[margin.metric].higher_is_better else delta <= limit
        out.append(
            {
                "name": margin.metric,
                "label": MEASURES[margin.metric].label,
                "kind": "margin",
                "value": cand,
                "production": base,
                "limit": f"{margin.kind} {margin.amount:g}",
                "passed": bool(ok),
                "detail": f"{MEASURES[margin.metric].label} {delta:+.4g} (limit {margin.kind} {margin.amount:g})",
            }
        )
    return out


def _cap(name: str, label: str, value: float, production: float, limit: float, text: str, higher_ok: bool) -> dict:
    value, production = float(value), float(production)
    passed = (value >= limit - 1e-12) if higher_ok else (value <= limit + 1e-12)
    if math.isnan(value):
        passed = True  # undefined on this set (e.g. no answerable question in a half): no evidence against
    return {
        "name": name,
        "label": label,
        "kind": "cap",
        "value": value,
        "production": production,
        "limit": text,
        "passed": bool(passed),
        "detail": f"{label} {value:,.4g} (limit {text})",
    }


def select(
    table: ConfigTable,
    rows: np.ndarray,
    production_id: str,
    objective: ObjectiveSettings,
    gate: GateConfig,
    budget: float,
) -> str:
    """The config the objective picks on ``rows`` (production when none qualifies), best primary first.

    A candidate qualifies when it beats production's point estimate and passes the caps and margins on
    point estimates; at most ``objective.max_candidates`` are tried, as the decision does.
    """
    primary = column_means(table.primary, rows)
    floor = float(primary[production_id])
    tried = 0
    for config_id in primary.sort_values(ascending=False, kind="stable").index:
        if config_id == production_id or not float(primary[config_id]) > floor:
            continue
        if tried >= objective.max_candidates:
            break
        tried += 1
        checks = point_constraints(table, rows, str(config_id), production_id, objective, gate, budget)
        if all(c["passed"] for c in checks):
            return str(config_id)
    return production_id


def out_of_sample_gain(
    table: ConfigTable,
    config_id: str,
    production_id: str,
    objective: ObjectiveSettings,
    gate: GateConfig,
    budget: float,
) -> dict[str, Any]:
    """The whole selection repeated on one half of the clusters, its gain measured on the other, over splits.

    ``delta`` is the expected gain of the selection on held-back questions (0 on a split that keeps
    production), ``holds_share`` the share of splits whose selected config shows a gain on the held-back
    half (paired interval above 0), ``positive_share`` the share whose point estimate there is > 0,
    ``same_pick_share`` the share that selected ``config_id``, ``changed_share`` the share that
    selected any config but production, and ``holds_given_change`` / ``delta_given_change`` the share
    holding and the mean held-out gain among those; quantiles describe the splits' gains.
    """
    settings = objective.out_of_sample
    rng = np.random.default_rng(settings.seed)
    labels = gate.resampling.codes(table.primary.index.to_numpy())
    codes = pd.factorize(labels)[0] if labels is not None else np.arange(len(table.primary.index))
    n_clusters = int(codes.max()) + 1 if codes.size else 0
    questions = table.primary.index.to_numpy()
    gains, same, holds, positive, picked, picked_gains = [], 0, 0, 0, 0, []
    for _ in range(settings.splits):
        chosen = np.zeros(n_clusters, dtype=bool)
        chosen[rng.permutation(n_clusters)[: n_clusters // 2]] = True
        chooser, judge = np.flatnonzero(chosen[codes]), np.flatnonzero(~chosen[codes])
        pick = select(table, chooser, production_id, objective, gate, budget)
        same += pick == config_id
        held_out = column_means(table.primary, judge)
        gain = 0.0 if pick == production_id else float(held_out[pick]) - float(held_out[production_id])
        gain = gain if math.isfinite(gain) else 0.0
        if pick != production_id:
            picked, positive = picked + 1, positive + (gain > 0)
            holds += gain > 0 and _shown(table, pick, production_id, judge, questions, gate)
            picked_gains.append(gain)
        gains.append(gain)
    values = np.array(gains)
    return {
        "measure": objective.primary,
        "delta": float(values.mean()),
        "low": float(np.quantile(values, 0.025)),
        "high": float(np.quantile(values, 0.975)),
        "median": float(np.median(values)),
        "p05": float(np.quantile(values, 0.05)),
        "p95": float(np.quantile(values, 0.95)),
        "splits": settings.splits,
        "same_pick_share": same / settings.splits,
        "holds_share": holds / settings.splits,
        "positive_share": positive / settings.splits,
        "changed_share": picked / settings.splits,
        "holds_given_change": holds / picked if picked else None,
        "positive_given_change": positive / picked if picked else None,
        "delta_given_change": float(np.mean(picked_gains)) if picked_gains else None,
        "clusters": n_clusters,
        "unit": "questions" if labels is None else "clusters",
    }


def _shown(
    table: ConfigTable, pick: str, production_id: str, rows: np.ndarray, questions: np.ndarray, gate: GateConfig
) -> bool:
    """The pick's gain over production on ``rows`` is shown: the paired interval (clusters resampled) lies above 0."""
    c = compare.paired(
        table.primary[production_id].to_numpy()[rows],
        table.primary[pick].to_numpy()[rows],
        gate.resampling,
        "",
        questions[rows],
    )
    return c is not None and c.delta_low > 0


def selection_flags(
    config_id: str, in_sample: float, held_out: dict[str, Any], mde: float | None, label: str
) -> list[dict[str, str]]:
    """Warnings on a pick's gain: in sample outside the held-out 5-95% range, or smaller than the run can detect.

    A gain measured on the questions that chose the config is biased upward; when it lies above the range the
    splits give on held-back questions, expect about their median instead. A gain below the minimum detectable
    effect (80% power) may be noise that happened to clear the interval.
    """
    flags = []
    low, high, median = held_out["p05"], held_out["p95"], held_out["median"]
    if not low <= in_sample <= high:
        flags.append(
            {
                "config_id": config_id,
                "kind": "in-sample gain outside the held-out range",
                "message": (
                    f"the pick's in-sample gain {100 * in_sample:+.1f} pts {label} lies outside the 5-95% range "
                    f"[{100 * low:+.1f}, {100 * high:+.1f}] of its gain on held-back questions "
                    f"({held_out['splits']} splits): expect about the median, {100 * median:+.1f} pts"
                ),
            }
        )
    if mde is not None and in_sample < mde:
        shown = "not detectable at this size" if not math.isfinite(mde) else f"{100 * mde:.1f} pts"
        flags.append(
            {
                "config_id": config_id,
                "kind": "gain below the detectable effect",
                "message": (
                    f"the pick's gain {100 * in_sample:+.1f} pts {label} is below the smallest effect this set "
                    f"detects at 80% power ({shown}): confirm it on more questions before relying on its size"
                ),
            }
        )
    return flags
