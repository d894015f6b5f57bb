"""Stuff or retrieve (pure): the seed's decision tree, measured on the answer check's questions.

Each checked answerable question is answered twice with the same model and prompt: with its gold's whole
document(s) in the context (stuff) and with production's own retrieval. By the documents' length in tokens:
accuracy of each with the paired difference and its interval, mean input tokens, $/day at the configured
volume and the modelled first-token p95. The rule: "documents up to N tokens go in whole" for the largest N
such that every length bucket up to N is non-inferior in accuracy (interval low end above ``-margin``) and
within the cost and latency caps; otherwise "always retrieve", with the first reason. Documents carrying an
access-control list (``meta.acl``) always go through retrieval: stuffing a document bypasses the filters
that keep a role from seeing it.
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
from evalkit.scoring.latency import LatencyModel

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
    if effect is None or not effect["low"] > -caps.accuracy_margin:
        breaks.append(f"accuracy not shown within {100 * caps.accuracy_margin:g} points")
    if caps.cost_max_rise_pct is not None and _rise(cost) > caps.cost_max_rise_pct:
        breaks.append(f"$/query +{_rise(cost):.0f}% (cap {caps.cost_max_rise_pct:g}%)")
    if caps.latency_max_rise_pct is not None and _rise(p95) > caps.latency_max_rise_pct:
        breaks.append(f"first-token p95 +{_rise(p95):.0f}% (cap {caps.latency_max_rise_pct:g}%)")
    return {
        "bucket": bucket_label(upper, lower),
        "upper_tokens": None if math.isinf(upper) else upper,
        "n": len(ids),
        "accuracy": effect,
        "input_tokens": tokens,
        "usd_per_day": {arm: c * queries_per_day for arm, c in cost.items()},
        "first_token_p95_s": p95,
        "stuff_allowed": not breaks,
        "breaks": breaks,
    }


def _p95(model: LatencyModel | None, tokens: pd.Series) -> float:
    return math.nan if model is None else float(np.percentile(model.predict(tokens.to_numpy(dtype=float)), 95))


def _rise(values: dict[str, float]) -> float:
    """Percent by which stuffing exceeds retrieval (0 when either is unknown)."""
    base, new = values["retrieve"], values["stuff"]
    return 0.0 if not (math.isfinite(base) and math.isfinite(new)) or base <= 0 else 100.0 * (new / base - 1.0)


def _rule(table: list[dict[str, Any]], acl_documents: int) -> tuple[str, float | None]:
    """The largest prefix of buckets where stuffing is allowed, as a rule in words."""
    up_to = None
    for row in table:
        if not row["stuff_allowed"]:
            break
        up_to = row["upper_tokens"] if row["upper_tokens"] is not None else math.inf
    acl = (
        f"; the {acl_documents} documents with an access-control list always through retrieval" if acl_documents else ""
    )
    if up_to is None:
        why = table[0]["breaks"][0] if table else "no bucket measured"
        return (
            f"always retrieve: for the shortest documents ({table[0]['bucket'] if table else 'none'} tokens) {why}",
            None,
        )
    if math.isinf(up_to):
        return f"send every document whole (stuffing is within the margins at every measured length){acl}", math.inf
    return f"documents up to {int(up_to):,} tokens go in whole; longer ones through retrieval{acl}", float(up_to)
