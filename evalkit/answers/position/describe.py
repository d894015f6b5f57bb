"""What a planned experiment will do, in words, printed before anything is sent (pure)."""

from __future__ import annotations

from evalkit.answers.context import DOES_NOT_FIT, PROMPT_TOO_LONG
from evalkit.answers.generation.turnaround import hosted_time, is_hosted, timed_by_planning_speeds
from evalkit.answers.position.plan import PositionPlan
from evalkit.answers.position.sizing import FORCED_ANSWER_SECONDS, planned_seconds
from evalkit.cost.model import TokenUsage, call_cost


def _thousands(n: float) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else f"{n:.0f}"


def describe(plan: PositionPlan) -> str:
    """What the run will do, printed before it starts: answers, prompt tokens, time or cost, what does not fit."""
    s, b = plan.settings, plan.budget
    entries, send = plan.entries, plan.to_send
    repeated = [p.name for p in s.placements if p.policy != "score"]
    once = [p.name for p in s.placements if p.policy == "score"]
    shape = f"{len(plan.questions)} questions x {len(s.arms)} arms"
    on = "every arm" if s.controlled_arms is None else "/".join(s.controlled_arms)
    parts = [f"{'/'.join(repeated)} x {s.repeats} shuffles on {on}"] if repeated else []
    if once:
        parts.append(f"{'/'.join(once)} x 1 on {on}")
    others = [a.name for a in s.arms if not s.is_controlled(a)]
    if others:
        parts.append(f"shuffle x {s.arm_repeats or s.repeats} on {'/'.join(others)}")
    tokens = plan.prompt_tokens
    label = "estimated, " + plan.tokenizer_family + " heuristic" if plan.tokens_estimated else "counted by the model"
    lines = [
        f"position: chunking {plan.chunking}; budget {b.window_tokens} window - {b.max_output_tokens} output - "
        f"{b.headroom_tokens} headroom = {b.input_tokens} input tokens, retrieved items <= {b.share_tokens}",
        f"planned: {shape} ({'; '.join(parts)}) = {len(entries)} rows"
        + (f" ({plan.skipped_no_gold} gold_at contexts skipped: no gold to place)" if plan.skipped_no_gold else ""),
        f"  does not fit: {plan.count(DOES_NOT_FIT)} (stuff, not sent), prompt too long: {plan.count(PROMPT_TOO_LONG)}"
        f", over budget (items dropped): {plan.n_over_budget}",
        f"  answers: {len(send)} ({plan.n_distinct} distinct requests), ~{_thousands(tokens)} prompt tokens ({label})",
    ]
    output = plan.n_distinct * s.expected_output_tokens
    if timed_by_planning_speeds(plan.request_spec.backend):
        minutes = planned_seconds(tokens, plan.n_distinct, s) / 60
        scored = f", {FORCED_ANSWER_SECONDS:g} s per gold log-likelihood" if s.loglik else ""
        lines.append(
            f"  ≈ {minutes:.1f} min at {s.prompt_tokens_per_s:g} prompt tok/s and {s.output_tokens_per_s:g} output "
            f"tok/s (~{s.expected_output_tokens} output tokens per answer{scored}), before cache hits"
        )
    elif is_hosted(plan.request_spec.backend):  # an endpoint's time is its own: never the local tokens/s
        spec = plan.request_spec
        lines.append(f"  {hosted_time(spec.backend, spec.generator_cfg, plan.n_distinct)}")
    if plan.price is not None:
        usage = TokenUsage(tokens, output, estimated=plan.tokens_estimated)
        cost = call_cost(usage, plan.price)
        lines.append(f"  ≈ ${cost.usd:.2f} at list price for {plan.price.model_id}, before cache hits")
    for arm in s.arms:
        mine = [e for e in entries if e.arm == arm.name]
        sent = [e for e in mine if e.fits]
        lines.append(
            f"  {arm.name}: {len(sent)} answers, ~{_thousands(sum(e.prompt_tokens for e in sent))} tokens"
            + (f", {len(mine) - len(sent)} not sent ({DOES_NOT_FIT})" if len(mine) > len(sent) else "")
        )
    return "\n".join(lines)
