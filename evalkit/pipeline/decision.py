"""The decision stage: after the sweep's results are written, the recommendation and its headline.

Runs the objective (:func:`evalkit.scoring.decide.decide`) on the results in
memory with the gate's margins file, writes ``recommendation.json`` (the report
renders it) and prints the headline a reviewer reads first.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evalkit.answers.check.experiment import answer_check
from evalkit.answers.check.stratified import design_estimates
from evalkit.console import milliseconds
from evalkit.pipeline.answers import AnswerInputs, answer_vetoes, answers_record, any_shown_worse, retrieval_seconds
from evalkit.pipeline.margins import load_gate_config
from evalkit.pipeline.plan import SweepPlan
from evalkit.records import Question
from evalkit.run import files
from evalkit.run.folder import write_json, write_table
from evalkit.scoring.answer_columns import answered_values, with_answer_columns
from evalkit.scoring.at_budget import production_budget, recall_at_budget
from evalkit.scoring.clusters import cluster_map, question_clusters
from evalkit.scoring.decide import NO_PRODUCTION, RECOMMEND, decide
from evalkit.scoring.evidence import SHOWN_NOT_WORSE
from evalkit.scoring.gatecheck import GateConfig
from evalkit.scoring.per_config import Results, config_rows
from evalkit.scoring.production import production_in_grid
from evalkit.scoring.registry import MEASURES
from evalkit.scoring.segments import segment_frame


def write_recommendation(
    plan: SweepPlan,
    results: Results,
    summary: pd.DataFrame,
    run_dir: Path,
    questions: Sequence[Question] = (),
    answers: AnswerInputs | None = None,
) -> dict:
    """Decide on retrieval, answer the configs the decision names, and let only evidence of harm change it.

    The first pass is exactly ``answer_check=off``'s (the same prompt-token cap). The check answers its
    configs; each answer measure is *shown not worse*, *shown worse* or *not shown*
    (:mod:`evalkit.scoring.evidence`). With no config shown worse the decision stands as it is; otherwise it
    is decided again with the answers in the results, where the gate's checks remove exactly the configs shown
    worse (and a measured latency cap those above it). A smoke check reports and never decides.
    """
    clusters = question_clusters(questions, plan.stats.cluster_by)
    write_table(run_dir / files.CLUSTERS, clusters)
    gate = replace(load_gate_config(plan.objective.margins), clusters=cluster_map(clusters))
    production = production_config(plan, summary)
    checking = answers is not None and plan.answer_check.enabled and production is not None
    segments = segment_frame(questions)
    record = decide(results, summary, production, plan.objective, gate, segments)
    if checking:
        assert answers is not None and production is not None
        record = _with_answers(plan, results, summary, run_dir, record, gate, segments, answers)
    else:
        record["answers"] = {"checked": False, "why": _unchecked_why(plan, answers)}
    if production is not None:
        record["equal_budget"] = equal_budget(results, production, summary, run_dir)
    record["quality_warning"] = absolute_quality(record)
    write_json(run_dir / files.RECOMMENDATION_JSON, record)
    return record


def production_config(plan: SweepPlan, summary: pd.DataFrame) -> str | None:
    """Production's config id in the grid (``baseline:``), None when it is not there."""
    return production_in_grid(summary, **asdict(plan.baseline), external=plan.retriever.external)


def _unchecked_why(plan: SweepPlan, answers: AnswerInputs | None) -> str:
    if not plan.answer_check.enabled:
        return "answer_check=off: decided on retrieval proxies alone (prompt tokens capped at production's)"
    return "no production config in the grid: nothing to answer against" if answers else "not run"


def _with_answers(
    plan: SweepPlan,
    results: Results,
    summary: pd.DataFrame,
    run_dir: Path,
    first: dict[str, Any],
    gate: GateConfig,
    segments: pd.DataFrame,
    answers: AnswerInputs,
) -> dict[str, Any]:
    """The decision's configs answered; decided again only where the answers show harm (see above)."""
    job = plan.answer_check_job(gate, answers.token_family)

    def config_frame(config_id: str) -> pd.DataFrame:
        rows = config_rows(results, config_id)
        return rows[rows["config_id"] == config_id]

    outcome = answer_check(job, first, summary, config_frame, answers.labelset, answers.cache, run_dir,
                           spend=answers.spend)  # fmt: skip
    if outcome is None:
        return first | {"answers": {"checked": False, "why": "no production config to answer against"}}
    record = first
    removed = answer_vetoes(outcome.record, plan.objective.latency_p95_max)
    if outcome.record.get("decides") and (removed or any_shown_worse(outcome.record)):
        latency = outcome.latency if (outcome.record.get("latency") or {}).get("constrains") else None
        answered = with_answer_columns(results, answered_values(outcome.rows), latency, outcome.system_tokens)
        production_id = first["production"]["config_id"]
        gated = replace(gate, latency=latency, answer_design=_design(outcome.record, outcome.rows, run_dir))
        record = decide(answered, summary, production_id, plan.objective, gated, segments, removed)
    chunking_of = dict(zip(summary["config_id"], summary["chunking"]))
    retrieval = {
        entry["config_id"]: retrieval_seconds(answers.retrieval_latency, chunking_of.get(entry["config_id"]))
        for entry in outcome.record.get("configs", [])
    }
    block = answers_record(outcome.record, first, retrieval, record)
    return record | {"answers": block | {"headline": answers_verdict(block)}}


def _design(check: dict[str, Any], rows: pd.DataFrame, run_dir: Path) -> Any:
    """A stratified check's estimates for the gate's answer checks (the gate CLI builds the same from the files)."""
    if check.get("design") != "stratified":
        return None
    return design_estimates(rows, pd.read_parquet(run_dir / files.ANSWER_CHECK_DESIGN), check)


def equal_budget(results: Results, production: str, summary: pd.DataFrame, run_dir: Path) -> dict[str, Any]:
    """Every chunking at production's prompt-token budget (recall_at_budget.parquet), and the best of them."""
    budget = production_budget(config_rows(results, production), production)
    table = recall_at_budget(results, budget)
    write_table(run_dir / files.RECALL_AT_BUDGET, table, csv=True)
    row = summary.set_index("config_id").loc[production]
    own = table[(table["chunking"] == row["chunking"]) & np.isclose(table["threshold"], row["threshold"])]
    best = table.sort_values(["recall_at_budget", "chunking"], ascending=[False, True]).iloc[0]
    return {
        "budget_tokens": budget,
        "production": {"chunking": str(row["chunking"]), "recall_at_budget": float(own["recall_at_budget"].iloc[0])},
        "best": {k: (v.item() if hasattr(v, "item") else v) for k, v in best.to_dict().items()},
    }


def headline(record: dict[str, Any], run_dir: Path) -> str:
    """Three lines: the decision, the gain with its interval and the $/query change, the gate verdict."""
    label = MEASURES[record["objective"]["primary"]].label
    if record["decision"] == NO_PRODUCTION:
        return "evalkit: no recommendation: the production config (baseline:) is not in the grid"
    production = record["production"]
    if record["decision"] != RECOMMEND:
        misses = "; ".join(f"{m['config_id']} ({m['detail']})" for m in record["near_misses"][:2]) or "none"
        within = "nothing beats it within the objective"
        return f"evalkit: keep production {production['config_id']}: {within}; nearest: {misses}"
    pick = record["recommended"]
    gain, held = pick["gain_in_sample"], pick["gain_out_of_sample"]
    cost_now, cost_pick = production["values"].get("cost_per_query"), pick["values"].get("cost_per_query")
    cost = "" if not cost_now or cost_pick is None else f", $/query {100 * (cost_pick / cost_now - 1):+.1f}%"
    k = pick["top_k"]
    same_k = "" if k["same_k"] else f" (k {k['recommended']} vs production's {k['production']}: different k)"
    return (
        f"evalkit: recommend {pick['config_id']} over production {production['config_id']}{same_k}\n"
        f"evalkit:   {label} {100 * gain['delta']:+.1f} pts [{100 * gain['low']:+.1f}, {100 * gain['high']:+.1f}] "
        f"in sample, {100 * held['delta']:+.1f} pts out of sample{_replicates(held)}{_spread(held)}{cost}\n"
        f"evalkit:   gate: {record['gate']['verdict'].upper()} (python -m evalkit.gate --run {run_dir} "
        f"--candidate-config '{pick['config_id']}')"
    )


def _replicates(held: dict[str, Any]) -> str:
    """The share of splits where the selection, repeated on one half, shows a gain on the other (interval above 0),
    beside the share where its point estimate is merely positive (absent in older records)."""
    if held.get("holds_share") is None:
        return ""
    if held.get("positive_share") is None:  # a record before issue 47: its share counted any positive gain
        return f", positive on {held['holds_share']:.0%} of held-back halves (selection repeated on each split)"
    return (
        f", shown (interval above 0) on {held['holds_share']:.0%} of held-back halves, positive on "
        f"{held['positive_share']:.0%} (selection repeated on each split)"
    )


def _spread(held: dict[str, Any]) -> str:
    """The held-out gain's median and 5-95% range over the splits (absent in records written before them)."""
    if held.get("median") is None:
        return ""
    return f" (median {100 * held['median']:+.1f}, 5-95% [{100 * held['p05']:+.1f}, {100 * held['p95']:+.1f}])"


def _points(interval: dict[str, float] | None) -> str:
    if interval is None:
        return "n/a"
    if interval["low"] == interval["high"]:  # every question moved alike: a bootstrap has nothing to resample
        return f"{100 * interval['delta']:+.1f} pts (the same on every question: no interval)"
    return f"{100 * interval['delta']:+.1f} pts [{100 * interval['low']:+.1f}, {100 * interval['high']:+.1f}]"


def _pct(change: dict[str, float | None]) -> str:
    return "n/a" if change.get("change_pct") is None else f"{change['change_pct']:+.1f}%"


def answers_lines(record: dict[str, Any]) -> list[str]:
    """The answer check in the console: what the answers decided first, then per named config its evidence."""
    block = record.get("answers") or {}
    if not block.get("checked"):
        return [f"answers: not measured: {block.get('why', 'answer_check=off')}"]
    lines = [answers_verdict(block)]
    lines.append(f"answers ({block['preset']} check, {block['questions']} questions, {block['model']}):")
    production = next((n for n in block["named"] if n["config_id"] == block["production"]), None)
    base_p95 = ((production or {}).get("first_token") or {}).get("p95")
    for entry in block["named"]:
        lines.append(f"  {entry['config_id']} ({', '.join(entry['roles'])}): {_answer_text(entry, base_p95)}")
    latency = block.get("latency") or {}
    if latency.get("source"):
        use = "constrains the advice and the gate" if latency.get("constrains") else "shown only: it constrains nothing"
        lines.append(f"first-token latency: {latency['source']}: {use}")
    routing = block.get("routing") or {}
    if routing.get("rule"):
        lines.append(f"stuff or retrieve: {routing['rule']}")
    return lines


def answers_verdict(block: dict[str, Any]) -> str:
    """One line: what the answers changed, or that they changed nothing, and what size would decide."""
    changed = block.get("changed") or []
    if changed:
        return f"answers decided: {'; '.join(changed)} (a config shown worse than production is removed)"
    states = {n["config_id"]: n.get("state") for n in block.get("named", []) if n.get("state")}
    sizing = block.get("sizing") or {}
    margin = 100 * float(sizing.get("margin") or 0.05)
    if block.get("decides") and states and all(s == SHOWN_NOT_WORSE for s in states.values()):
        return f"answers changed nothing: every named config shown not worse than production (margin {margin:g} points)"
    shown = [c for c, s in states.items() if s == SHOWN_NOT_WORSE]
    why = ("a smoke check reports and never decides" if block.get("smoke") else
           f"{block.get('questions')} questions per config cannot show a {margin:g}-point difference"
           + (f" for the others ({', '.join(shown)} shown not worse)" if shown else ""))  # fmt: skip
    needed = sizing.get("questions_needed")
    estimate = block.get("powered_seconds_estimate")
    usd = block.get("powered_usd_estimate")
    if sizing.get("design") == "stratified":
        planned = [n for n in (sizing.get("planned_answers") or {}).values() if n is not None]
        many = "more questions than this set has (grow the set, or widen the answer margin)"
        powered = f"the stratified plan asks about {max(planned):.0f} questions per config" if planned else many
    elif needed:
        at = "" if estimate is None else f", about {estimate / 3600:.1f} h at this run's pace"
        cost = "" if usd is None else f", ${usd:,.2f}"
        powered = f"powered: {block.get('powered_command')} (about {needed} questions per config{at}{cost})"
    elif sizing.get("planning_discordance") is not None:
        powered = "powered: more questions than this set has (grow the set, or widen the answer margin)"
    else:
        powered = f"powered: {block.get('powered_command')}"
    return f"answers did not decide: {why}; the advice is answer_check=off's; {powered}"


def _answer_text(entry: dict[str, Any], base_p95: float | None) -> str:
    accuracy = entry.get("accuracy")
    text = "not answered" if accuracy is None else f"accuracy {100 * accuracy:.0f}% on {entry['n']}"
    delta = entry.get("accuracy_delta")
    if delta:
        text += f", Δ {_points(delta)} ({delta['verdict']})"
    if entry.get("state") and not delta:
        text += f" ({entry['state']})"
    first = entry.get("first_token") or {}
    if first.get("p50") is not None:
        text += f", first token p50 {first['p50']:.2f} s / p95 {first['p95']:.2f} s"
        if base_p95 and entry.get("accuracy_delta"):
            text += f" ({100 * (first['p95'] / base_p95 - 1):+.0f}% p95)"
    retrieval = entry.get("retrieval_seconds") or {}
    if retrieval.get("p50") is not None:
        text += f", retrieval p50 {milliseconds(retrieval['p50'])} / p95 {milliseconds(retrieval['p95'])}"
    if entry.get("cost_per_query") is not None:
        text += f", ${entry['cost_per_query']:.4f}/query"
    return text


def move_line(move: dict[str, Any]) -> str:
    """One knob's move in one line: the value, recall and context precision with intervals, the bill, the gate."""
    knob = move["knob"]
    if not move["swept"]:
        if move.get("own_chunking") or move.get("collapsed"):
            return f"{knob}: {move['detail']}"
        return f"{knob}: only production's value ({move['production_value']}) was swept"
    intervals = move["intervals"]
    step = "->" if move["beats_production"] else "stays; no other value beats it; best other"
    return (
        f"{knob} {move['production_value']} {step} {move['value']}: recall {_points(intervals.get('recall'))}, "
        f"context precision {_points(intervals.get('context_precision'))}, $/query {_pct(move['cost_per_query'])}, "
        f"prompt tokens {_pct(move['prompt_tokens'])}, gate {move['gate']['verdict'].upper()}"
    )


def tier_line(tier: dict[str, Any] | None) -> str | None:
    """The significance tier in one line: how many configs tie with the best, and the cheapest of them."""
    if not tier or not tier.get("best"):
        return None
    label = MEASURES[tier["metric"]].label if tier.get("metric") in MEASURES else tier.get("metric", "")
    cheapest = tier.get("cheapest")
    named = f"; cheapest of them ({tier['cost_kind']}): {cheapest}" if cheapest else ""
    distinct, points = tier.get("distinct"), tier.get("grid_points")
    copies = (
        f" ({distinct} distinct: the rest are collapsed grid points)" if distinct not in (None, tier["size"]) else ""
    )
    if points is not None and points != len(tier["configs"]):
        copies = f" distinct ({points} scored, grid points and advised thresholds; twins named once)"
    return (
        f"top tier: {tier['size']} of {len(tier['configs'])} configs{copies} not shown worse than the best on {label} "
        f"({tier['best']}; one-sided paired test at {tier['alpha_one_sided']:g}, Holm over every config): "
        f"ties, not a ranking{named}"
    )


def cheaper_line(pick: dict[str, Any] | None, run_dir: Path) -> str:
    """The cheaper pick and the gate command that accepts it, or "none" with the nearest and what it breaks."""
    if pick is None:
        return "cheaper pick: none (no production config)"
    if pick["config_id"] is None:
        nearest = "; ".join(f"{m['config_id']} {-m['saving_pct']:+.1f}% ({', '.join(m['breaks'])})" for m in
                            pick.get("nearest", [])[:2])  # fmt: skip
        return f"cheaper pick: none: {pick['why']}" + (f"; nearest: {nearest}" if nearest else "")
    return (
        f"cheaper pick: {pick['config_id']}: {pick['label']}, recall {_points(pick['intervals'].get('recall'))} "
        f"(gate PASS: python -m evalkit.gate --run {run_dir} --candidate-config '{pick['config_id']}')"
    )


LOW_RECALL, HIGH_ZERO_HIT = 0.30, 0.20
"""Production below this recall (or hit rate), or above this zero-hit rate on answerable questions: the labelled
set and the corpus may not match (questions that do not name what they ask about, documents missing), and any
recommendation is a small move on a broken base. Said before the recommendation."""


def absolute_quality(record: dict[str, Any]) -> str | None:
    """A warning when production's absolute retrieval quality is too low for relative advice to mean much."""
    values = ((record.get("production") or {}).get("values")) or {}
    recall, zero_hit = values.get("primary"), values.get("zero_hit_answerable")
    primary = (record.get("objective") or {}).get("primary", "recall")
    problems = []
    if primary in ("recall", "hit") and recall is not None and recall < LOW_RECALL:
        problems.append(f"production's {primary} is {100 * recall:.1f}%")
    if zero_hit is not None and zero_hit > HIGH_ZERO_HIT:
        problems.append(f"production returns nothing for {100 * zero_hit:.1f}% of answerable questions")
    if not problems:
        return None
    return (
        f"warning: {' and '.join(problems)}: the labelled set or the corpus may not match (do the questions name "
        "what they ask about? are the evidence documents in the corpus?); check that before acting on any move below"
    )


SHOWN_FLAGS = 8
"""Flags printed on the console; the rest are in recommendation.json and on the page (a threshold move worse on
every segment of a many-valued tag printed 60 lines on squad2-en)."""


def announce(record: dict[str, Any], run_dir: Path) -> None:
    warning = record.get("quality_warning")
    lines = [f"evalkit: {warning}"] if warning else []
    lines.append(headline(record, run_dir))
    if record.get("one_knob_moves"):
        lines.append("evalkit:   one knob at a time, the others at production:")
        lines += [f"evalkit:     {move_line(m)}" for m in record["one_knob_moves"]]
    if record["decision"] != NO_PRODUCTION:
        lines.append(f"evalkit:   {cheaper_line(record.get('cheaper_pick'), run_dir)}")
    if tier_line(record.get("tier")):
        lines.append(f"evalkit:   {tier_line(record.get('tier'))}")
    lines += [f"evalkit:   {line}" for line in answers_lines(record)]
    flags = record.get("flags", [])
    lines += [f"evalkit:   flag: {f['message']} ({f['config_id']})" for f in flags[:SHOWN_FLAGS]]
    if len(flags) > SHOWN_FLAGS:
        lines.append(f"evalkit:   ... {len(flags) - SHOWN_FLAGS} more flags (recommendation.json, the report)")
    print("\n".join(lines), file=sys.stderr)
