"""What the decision stage needs of the answer check, and what recommendation.json keeps of it.

:func:`vetoes` says which configs measured answers remove (only evidence removes: a first-token p95 above
the cap, measured on production's generator); :func:`answers_record` is the answer block of
recommendation.json: per named config its answers, the paired differences against production with their
evidence states, first-token p50/p95 and $/query, what the answers decided, the sizing, the routing rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalkit.answers.check.plan import PRODUCTION
from evalkit.scoring.evidence import NOT_CHECKED, SHOWN_WORSE, combined_state

if TYPE_CHECKING:
    from evalkit.cache import Cache
    from evalkit.cost.budget import SpendGuard
    from evalkit.labels.read import LabelSet


@dataclass(frozen=True)
class AnswerInputs:
    """The sweep's context the answer check runs in."""

    labelset: LabelSet
    cache: Cache
    token_family: str
    spend: SpendGuard | None = None
    retrieval_latency: Mapping[str, Any] | None = None
    """retrieval_latency.json's record: per chunking the one-query-at-a-time search (and rerank) seconds."""


def answer_vetoes(check: Mapping[str, Any], latency_p95_max: float | None) -> dict[str, str]:
    """config_id -> why measured answers remove it; configs absent are decided on retrieval (and the gate).

    A first-token cap removes a config only when the latency is production's (its generator, or a latency
    profile measured against it): a local stand-in's speed says nothing about production's.
    """
    latency = check.get("latency") or {}
    if latency_p95_max is None or not latency.get("constrains"):
        return {}
    out = {}
    for entry in check.get("configs", []):
        p95 = (entry.get("first_token") or {}).get("p95")
        if p95 is not None and p95 > latency_p95_max:
            out[entry["config_id"]] = f"first-token p95 {p95:.2f} s above latency_p95_max {latency_p95_max:g} s"
    return out


def config_states(check: Mapping[str, Any]) -> dict[str, str]:
    """config_id -> its answers' evidence over accuracy and F1 against production (one word of the three)."""
    states = {}
    for entry in check.get("configs", []):
        if entry["config_id"] == check.get("production"):
            continue
        effect = (check.get("effects") or {}).get(entry["config_id"]) or {}
        found = [e["verdict"] for e in (effect.get("accuracy"), effect.get("f1")) if e]
        states[entry["config_id"]] = combined_state(found) if found else NOT_CHECKED
    return states


def any_shown_worse(check: Mapping[str, Any]) -> bool:
    return any(state == SHOWN_WORSE for state in config_states(check).values())


def retrieval_seconds(latency: Mapping[str, Any] | None, chunking: str | None) -> dict[str, Any] | None:
    """One config's retrieval-stage p50/p95 per query: query embedding + search (+ rerank), as measured.

    The stages' percentiles are added (an upper bound on the p95 of their sum: a query slow to embed need not
    be slow to search), and each stage is kept beside the sum.
    """
    if not latency or chunking is None or chunking not in (latency.get("chunkings") or {}):
        return None
    stages = {"embed": latency.get("embed"), **latency["chunkings"][chunking]}
    stages = {name: value for name, value in stages.items() if isinstance(value, Mapping) and value.get("n")}
    if not stages:
        return None
    total = {q: float(sum(v[q] for v in stages.values())) for q in ("p50", "p95")}
    return {**total, "stages": stages, "n": min(v["n"] for v in stages.values())}


def answers_record(
    check: Mapping[str, Any],
    first: Mapping[str, Any],
    retrieval: Mapping[str, Any] | None = None,
    final: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The answer block of recommendation.json (check.json holds everything else).

    ``first``: the retrieval decision (``answer_check=off``'s); ``final``: the decision after the answers
    (``first`` when they removed nothing). ``retrieval``: config_id -> its retrieval-stage seconds.
    """
    retrieval = retrieval or {}
    final = first if final is None else final
    states = config_states(check)
    by_config = {c["config_id"]: c for c in check.get("configs", [])}
    costs = _costs(first)
    production = check["production"]
    named = []
    for config_id, entry in by_config.items():
        effect = (check.get("effects") or {}).get(config_id) or {}
        named.append({
            "config_id": config_id,
            "roles": entry.get("roles", []),
            "n": entry.get("n", 0),
            "accuracy": entry.get("accuracy"),
            "f1": entry.get("f1"),
            "state": states.get(config_id),
            "accuracy_delta": effect.get("accuracy"),
            "f1_delta": effect.get("f1"),
            "first_token": entry.get("first_token"),
            "retrieval_seconds": retrieval.get(config_id),
            "cost_per_query": costs.get(config_id),
        })  # fmt: skip
    run = check.get("run") or {}
    return {
        "checked": True,
        "preset": run.get("preset"),
        "questions": run.get("questions"),
        "model": run.get("model"),
        "production": production,
        "named": named,
        "sizing": check.get("sizing"),
        "latency": {k: v for k, v in (check.get("latency") or {}).items() if k not in ("residuals", "stand_in")},
        "routing": {k: v for k, v in (check.get("routing") or {}).items() if k != "buckets"},
        "seconds": run.get("seconds"),
        "powered_command": run.get("powered_command"),
        "powered_seconds_estimate": run.get("powered_seconds_estimate"),
        "powered_usd_estimate": run.get("powered_usd_estimate"),
        "seconds_per_answer": run.get("seconds_per_answer"),
        "smoke": run.get("preset") == "smoke",
        "decides": bool(check.get("decides")),
        "changed": changes(first, final),
        "first_pass_recommended": (first.get("recommended") or {}).get("config_id"),
        "production_role": PRODUCTION,
    }


def _costs(first: Mapping[str, Any]) -> dict[str, float | None]:
    """$/query of the configs the first pass named (production, the pick, moves, the cheaper pick)."""
    out: dict[str, float | None] = {}
    production = first.get("production") or {}
    if production:
        out[production["config_id"]] = (production.get("values") or {}).get("cost_per_query")
    pick = first.get("recommended") or {}
    if pick:
        out[pick["config_id"]] = (pick.get("values") or {}).get("cost_per_query")
    for move in first.get("one_knob_moves") or []:
        if move.get("config_id") and isinstance(move.get("cost_per_query"), Mapping):
            out.setdefault(move["config_id"], move["cost_per_query"].get("candidate"))
    return out


def changes(first: Mapping[str, Any], final: Mapping[str, Any]) -> list[str]:
    """What the answers changed in the advice, in words (empty: the retrieval decision stands as it is)."""
    out = []
    for key, label in (("recommended", "recommendation"), ("cheaper_pick", "cheaper pick")):
        before, after = (first.get(key) or {}).get("config_id"), (final.get(key) or {}).get("config_id")
        if before != after:
            out.append(f"{label}: {before or 'none'} -> {after or 'none'}")
    before_set = [c.get("config_id") for c in ((first.get("gate_passing") or {}).get("configs") or [])]
    after_set = [c.get("config_id") for c in ((final.get("gate_passing") or {}).get("configs") or [])]
    if before_set != after_set:
        gone = [c for c in before_set if c not in after_set]
        out.append(f"gate-passing set: {len(before_set)} -> {len(after_set)} configs" +
                   (f" (removed: {', '.join(map(str, gone))})" if gone else ""))  # fmt: skip
    return out
