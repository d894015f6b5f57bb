"""Stuff or retrieve (pure): the seed's decision tree, measured on the answer check's questions.

Each checked answerable question is answered twice with the same model and prompt: with its gold's whole
document(s) in the context (stuff) and with production's own retrieval. By the documents' length in tokens:
accuracy of each with the paired difference and its interval, mean input tokens, $/day at the configured
volume and the modelled per-request first-token p95 (production's latency only: a stand-in's is left out).
Each bucket's accuracy evidence is one of :mod:`evalkit.scoring.evidence`'s states, with the questions it
rests on and the size that would show it. The rule: "documents up to N tokens go in whole" for the largest N
such that every length bucket up to N is *shown not worse* in accuracy and within the cost and latency
caps; "always retrieve" when the shortest bucket is shown worse or breaks a cap; and no rule ("not shown")
when the shortest bucket's evidence is too small to decide: a rule from a handful of answers is no rule.
Documents carrying an access-control list (``meta.acl``) always go through retrieval: stuffing a document
bypasses the filters that keep a role from seeing it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evalkit.scoring.answer_check import outcome_table, paired_accuracy
from evalkit.scoring.clusters import labels_for
from evalkit.scoring.evidence import NOT_CHECKED, SHOWN_NOT_WORSE, SHOWN_WORSE
from evalkit.scoring.latency import LatencyModel, latency_percentiles
from evalkit.scoring.stats.noninferiority import (
    feasible_accuracy,
    planning_discordance,
    questions_for_noninferiority,
)

BUCKET_EDGES = (500, 1000, 2000, 4000, 8000)
"""Upper edges (tokens) of the document-length buckets; the last bucket is everything longer."""
STUFF = "stuff"


@dataclass(frozen=True)
class RoutingCaps:
    """What stuffing may cost against retrieval before it is refused (the gate's own margins by default)."""

    accuracy_margin: float
    cost_max_rise_pct: float | None
    latency_max_rise_pct: float | None
    level: float = 0.95
    clusters: pd.Series | None = field(default=None, compare=False, repr=False)
    """question_id -> cluster (the sweep's): the accuracy differences resample them; None: questions."""


def bucket_label(upper: float, lower: float) -> str:
    return f"≤ {int(upper):,}" if math.isfinite(upper) else f"> {int(lower):,}"


def stuff_or_retrieve(
    rows: pd.DataFrame,
    production_id: str,
    caps: RoutingCaps,
    cost_of_tokens: Callable[[float], float],
    queries_per_day: float,
    latency: LatencyModel | None,
    acl_documents: int = 0,
    edges: Sequence[float] = BUCKET_EDGES,
) -> dict[str, Any]:
    """The table by document length and the routing rule (see the module docstring)."""
    stuffed = rows[(rows["arm"] == STUFF) & rows["correct"].notna()].set_index("question_id")
    retrieved = outcome_table(rows, "correct")
    if stuffed.empty or production_id not in retrieved.columns:
        return {"buckets": [], "rule": "no rule: no question was answered both ways", "stuff_up_to_tokens": None}
    own = rows[(rows["arm"] == "retrieve") & (rows["config_id"] == production_id)].set_index("question_id")
    table, lower = [], 0.0
    for upper in (*edges, math.inf):
        ids = stuffed.index[(stuffed["doc_tokens"] > lower) & (stuffed["doc_tokens"] <= upper)]
        ids = [q for q in ids if q in retrieved.index and np.isfinite(retrieved.loc[q, production_id])]
        if ids:
            table.append(_bucket(ids, stuffed, own, retrieved[production_id], lower, upper, caps, cost_of_tokens,
                                 queries_per_day, latency))  # fmt: skip
        lower = upper
    rule, up_to = _rule(table, acl_documents)
    return {"buckets": table, "rule": rule, "stuff_up_to_tokens": up_to, "acl_documents": acl_documents}


def _bucket(
    ids: list[str],
    stuffed: pd.DataFrame,
    own: pd.DataFrame,
    retrieved: pd.Series,
    lower: float,
    upper: float,
    caps: RoutingCaps,
    cost_of_tokens: Callable[[float], float],
    queries_per_day: float,
    latency: LatencyModel | None,
) -> dict[str, Any]:
    effect = paired_accuracy(
        retrieved.loc[ids].to_numpy(dtype=float), stuffed.loc[ids, "correct"].astype(float).to_numpy(), caps.level,
        caps.accuracy_margin, labels_for(ids, caps.clusters),
    )  # fmt: skip
    tokens = {
        "stuff": float(stuffed.loc[ids, "planned_tokens"].mean()),
        "retrieve": float(own.loc[ids, "planned_tokens"].mean()),
    }
    cost = {arm: cost_of_tokens(t) for arm, t in tokens.items()}
    p95 = {arm: _p95(latency, stuffed.loc[ids, "planned_tokens"] if arm == "stuff" else own.loc[ids, "planned_tokens"])
           for arm in tokens}  # fmt: skip
    breaks = []
    state = NOT_CHECKED if effect is None else effect["verdict"]
    if state == SHOWN_WORSE:
        breaks.append(f"accuracy shown worse by more than {100 * caps.accuracy_margin:g} points")
    if caps.cost_max_rise_pct is not None and _rise(cost) > caps.cost_max_rise_pct:
        breaks.append(f"$/query +{_rise(cost):.0f}% (cap {caps.cost_max_rise_pct:g}%)")
    if caps.latency_max_rise_pct is not None and _rise(p95) > caps.latency_max_rise_pct:
        breaks.append(f"first-token p95 +{_rise(p95):.0f}% (cap {caps.latency_max_rise_pct:g}%)")
    return {
        "bucket": bucket_label(upper, lower),
        "upper_tokens": None if math.isinf(upper) else upper,
        "n": len(ids),
        "state": state,
        "questions_to_show": None if state in (SHOWN_NOT_WORSE, SHOWN_WORSE) else _to_show(effect, caps),
        "accuracy": effect,
        "input_tokens": tokens,
        "usd_per_day": {arm: c * queries_per_day for arm, c in cost.items()},
        "first_token_p95_s": p95,
        "stuff_allowed": not breaks and state == SHOWN_NOT_WORSE,
        "breaks": breaks,
    }


def _to_show(effect: dict[str, Any] | None, caps: RoutingCaps) -> int | None:
    """Questions in the bucket that would show stuffing not worse at the bucket's discordance (None: too many)."""
    if effect is None or not effect.get("n"):
        return None
    planned = planning_discordance(int(effect["wins"]) + int(effect["losses"]), int(effect["n"]))
    accuracy = feasible_accuracy(float(effect["production"]), planned)
    return questions_for_noninferiority(planned, caps.accuracy_margin, caps.level, 0.8, accuracy, max_n=20_000)


def _p95(model: LatencyModel | None, tokens: pd.Series) -> float:
    return math.nan if model is None else latency_percentiles(model, tokens.to_numpy(dtype=float))["p95"]


def _rise(values: dict[str, float]) -> float:
    """Percent by which stuffing exceeds retrieval (0 when either is unknown)."""
    base, new = values["retrieve"], values["stuff"]
    return 0.0 if not (math.isfinite(base) and math.isfinite(new)) or base <= 0 else 100.0 * (new / base - 1.0)


def _rule(table: list[dict[str, Any]], acl_documents: int) -> tuple[str, float | None]:
    """The largest prefix of buckets where stuffing is shown allowed, as a rule in words (module docstring)."""
    up_to = None
    stopped: dict[str, Any] | None = None
    for row in table:
        if not row["stuff_allowed"]:
            stopped = row
            break
        up_to = row["upper_tokens"] if row["upper_tokens"] is not None else math.inf
    acl = (
        f"; the {acl_documents} documents with an access-control list always through retrieval" if acl_documents else ""
    )
    if up_to is None:
        if not table:
            return "no rule: no bucket measured", None
        first = table[0]
        if not first["breaks"]:  # neither shown allowed nor refused: too few answers to say
            return f"no rule: {_not_shown(first)}", None
        return f"always retrieve: for the shortest documents ({first['bucket']} tokens) {first['breaks'][0]}", None
    if math.isinf(up_to):
        return f"send every document whole (stuffing is within the margins at every measured length){acl}", math.inf
    after = "" if stopped is None or stopped["breaks"] else f" ({stopped['bucket']} tokens: {_not_shown(stopped)})"
    return f"documents up to {int(up_to):,} tokens go in whole; longer ones through retrieval{after}{acl}", float(up_to)


def _not_shown(row: dict[str, Any]) -> str:
    size = row.get("questions_to_show")
    would = f"about {size} would show it" if size else "more than the set holds would be needed"
    return f"stuffing {row['bucket']} tokens {row['state']} on {row['n']} questions ({would})"
