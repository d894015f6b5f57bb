"""The answer check: each named config's answers against production's, first-token latency, stuff or retrieve.

Renders ``answer_check/check.json`` and the answer block of ``recommendation.json`` as the sweep wrote them;
nothing here computes a statistic.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalkit.console import milliseconds
from evalkit.report import fmt
from evalkit.report.html import Markup, section, table, tag
from evalkit.report.model import ReportModel


def _delta(effect: Mapping[str, Any] | None) -> str:
    if not effect:
        return "—"
    return f"{fmt.signed_interval('proportion', effect['delta'], effect['low'], effect['high'])} ({effect['verdict']})"


def _latency(entry: Mapping[str, Any]) -> str:
    first = entry.get("first_token") or {}
    if first.get("p50") is None:
        return "not timed"
    return f"{first['p50']:.2f} s / {first['p95']:.2f} s"


def _retrieval(entry: Mapping[str, Any]) -> str:
    seconds = entry.get("retrieval_seconds") or {}
    if seconds.get("p50") is None:
        return "not timed"
    return f"{milliseconds(seconds['p50'])} / {milliseconds(seconds['p95'])}"


def answers(model: ReportModel) -> Markup | None:
    """The answer check's section, or a line saying the decision rests on retrieval proxies alone."""
    block = (model.run.recommendation or {}).get("answers") or {}
    check = model.run.answer_check
    if not block.get("checked") or check is None:
        why = block.get("why") or "no answer check in this run"
        return section("answers", "Answers", [tag("p", f"Answers not measured: {why}.")])
    effects = check.get("effects") or {}
    rows = []
    for entry in block.get("named", []):
        accuracy = entry.get("accuracy")
        effect = effects.get(entry["config_id"]) or {}
        rows.append([
            entry["config_id"], ", ".join(entry.get("roles", [])), fmt.count(entry.get("n")),
            "—" if accuracy is None else fmt.pct(accuracy), _delta(effect.get("accuracy")), _delta(effect.get("f1")),
            _latency(entry), _retrieval(entry), fmt.money(entry.get("cost_per_query")),
        ])  # fmt: skip
    headers = ["config", "checked as", "questions", "accuracy", "Δ accuracy [CI]", "Δ F1 [CI]",
               "first token p50 / p95", "retrieval p50 / p95", "$/query"]  # fmt: skip
    body: list[Any] = [tag("p", block["headline"])] if block.get("headline") else []
    body.append(table(headers, rows, numeric=(2, 3)))
    body += _sizing(block)
    body += _routing(check.get("routing") or {})
    latency = check.get("latency")
    if latency:
        body.append(tag("p", (
            f"First-token latency model ({latency['n']} timed requests): {latency['intercept']:.3f} s + "
            f"{1000 * latency['slope']:.3f} ms per prompt token, residual sd {latency['residual_sd']:.3f} s, "
            f"R² {latency['r_squared']:.2f}; each config's p50 and p95 are over its own questions' prompts."
        ), class_="note"))  # fmt: skip
    timed = next((e["retrieval_seconds"] for e in block.get("named", []) if e.get("retrieval_seconds")), None)
    if timed:
        body.append(tag("p", (
            f"Retrieval latency: {timed['n']} sampled questions sent one at a time after a warm-up (query "
            "embedding without the cache, the prebuilt index searched for that query alone, its pool reranked), "
            "after the sweep so nothing else ran; a config's p50/p95 add its stages' percentiles."
        ), class_="note"))  # fmt: skip
    stratified = (block.get("sizing") or {}).get("design") == "stratified"
    method = (
        "stratified by retrieval: identical contexts counted as agreeing, never asked; each difference a "
        "prediction-powered estimate over the whole set, weighted by each question's chance of being drawn, "
        "clustered by document. "
        if stratified
        else "paired: the same questions for every config. Accuracy differences: Newcombe's interval and the "
        "exact McNemar test; F1: a paired t interval; " + _clustered(model.statistics.cluster_by)
    )
    note = (
        f"{block.get('preset', '')} check with {block.get('model', '')} on {block.get('questions', 0)} questions "
        f"({method}). Every interval is first widened to what its answers can show at all; the words "
        "(shown not worse, shown worse, not shown) follow the interval and the gate's answer margin, and only "
        "'shown worse' removes a config."
    )
    return section("answers", "Answers", body, note)


def _clustered(cluster_by: str | None) -> str:
    """What the clusters add to both intervals (the same clusters the gate resamples)."""
    if fmt.resampled(cluster_by) == "by question":
        return "questions as the unit; "
    return (
        f"both {fmt.resampled(cluster_by)}: widened to the cluster bootstrap's interval (and its p-value where "
        "larger), as the gate's answer check is; "
    )


def _sizing(block: Mapping[str, Any]) -> list[Any]:
    sizing = block.get("sizing") or {}
    if sizing.get("design") == "stratified":
        planned = sizing.get("planned_answers") or {}
        askable = sizing.get("askable") or {}
        each = "; ".join(
            f"{config}: about {n:.0f} of {askable.get(config, '?')} askable" if n is not None
            else f"{config}: more than the set holds"
            for config, n in planned.items()
        )  # fmt: skip
        return [tag("p", (
            f"Stratified by retrieval: a pilot of {sizing.get('pilot_questions')} questions planned the answers "
            f"that show 'not worse by more than {100 * sizing['margin']:g} points' with {sizing['power']:.0%} power "
            f"({each}; identical contexts are never asked); about {sizing.get('questions_needed')} questions "
            "were drawn."
        ))]  # fmt: skip
    if sizing.get("planning_discordance") is not None and not sizing.get("questions_needed"):
        return [tag("p", (
            f"Showing 'not worse by more than {100 * sizing['margin']:g} points' with {sizing['power']:.0%} power "
            f"at the measured discordance ({sizing['measured_discordance']:.2f}, planned at "
            f"{sizing['planning_discordance']:.2f}) needs more questions than this set has."
        ))]  # fmt: skip
    if not sizing.get("questions_needed"):
        return []
    estimate = block.get("powered_seconds_estimate")
    at_pace = "" if estimate is None else f", about {estimate / 3600:.1f} h at this run's pace"
    return [tag("p", (
        f"Showing 'not worse by more than {100 * sizing['margin']:g} points' with {sizing['power']:.0%} power "
        f"at a true difference of 0 takes about {sizing['questions_needed']} questions per config (planned at a "
        f"discordance of {sizing['planning_discordance']:.2f}, the upper 80% bound of the "
        f"{sizing['measured_discordance']:.2f} measured on {sizing['pilot_questions']}){at_pace}: "
        f"{block.get('powered_command', '')}"
    ))]  # fmt: skip


def _routing(routing: Mapping[str, Any]) -> list[Any]:
    buckets = routing.get("buckets") or []
    if not buckets:
        return [tag("p", f"Stuff or retrieve: {routing.get('rule', 'not measured')}.")] if routing else []
    rows = []
    for b in buckets:
        effect = b.get("accuracy") or {}
        rows.append([
            b["bucket"], fmt.count(b["n"]),
            "—" if not effect else f"{fmt.pct(effect['candidate'])} vs {fmt.pct(effect['production'])}",
            _delta(effect), f"{b['input_tokens']['stuff']:,.0f} vs {b['input_tokens']['retrieve']:,.0f}",
            f"{fmt.money(b['usd_per_day']['stuff'])} vs {fmt.money(b['usd_per_day']['retrieve'])}",
            "yes" if b["stuff_allowed"] else "; ".join(b["breaks"]),
        ])  # fmt: skip
    headers = ["document tokens", "questions", "accuracy stuffed vs retrieved", "Δ [CI]", "input tokens",
               "$/day", "stuff?"]  # fmt: skip
    return [tag("h3", "Stuff or retrieve"), table(headers, rows, numeric=(1,)),
            tag("p", tag("strong", f"Rule: {routing['rule']}."))]  # fmt: skip
