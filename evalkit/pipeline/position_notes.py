"""What the position plan can detect, and the smoke run's note: numbers from the exact power functions.

Pipeline-side because it joins the plan (answering) with the statistics (scoring).
"""

from __future__ import annotations

from evalkit.answering.position.plan import PositionPlan
from evalkit.scoring.stats import paired_binary_mde, questions_for_paired_binary

ASSUMED_DISCORDANCE = (0.15, 0.2, 0.3)
"""Head-vs-mid discordance the plan states its detectable effect at before any is measured (issue 22: 0.15-0.3)."""
POWERED_COMMAND = "python -m evalkit.sweep position=powered"


def placed_questions(plan: PositionPlan, arm: str) -> int:
    """Answerable questions with every gold_at placement planned on ``arm``: the paired comparison's n."""
    by_question: dict[str, set[str]] = {}
    for entry in plan.to_send:
        if entry.arm == arm and entry.placement.startswith("gold_at:") and entry.answerable:
            by_question.setdefault(entry.question_id, set()).add(entry.placement)
    return sum(1 for placements in by_question.values() if len(placements) >= 2)


def detectable(n: int, discordance: float) -> str:
    """The exact McNemar 80%-power MDE at n questions and a discordance, or 'not detectable'."""
    mde = paired_binary_mde(n, discordance) if n else None
    return "not detectable" if mde is None else f"{mde:.0%}"


def detectable_lines(plan: PositionPlan) -> list[str]:
    """Per controlled arm: the paired head-vs-mid effect detectable at this size, at the assumed discordances."""
    lines = []
    for arm in plan.settings.arms:
        n = placed_questions(plan, arm.name)
        if not plan.settings.is_controlled(arm) or not n:
            continue
        at = ", ".join(f"{detectable(n, psi)} at {psi:.2f}" for psi in ASSUMED_DISCORDANCE)
        lines.append(f"  detectable head vs mid on {arm.name} ({n} questions, exact McNemar, 80% power): {at}")
    unclean = len(plan.unclean)
    if unclean:
        lines.append(f"  skipped for want of a clean placement: {unclean} (question, arm) pairs (plan.json: unclean)")
    return lines


def smoke_note(plan: PositionPlan, seconds_per_question: float) -> str:
    """What a smoke run cannot detect, and the powered run's command with its time at the speed measured here."""
    s = plan.settings
    n = placed_questions(plan, "retrieve-5")
    sizes = [questions_for_paired_binary(s.target_mde, psi, max_n=100_000) for psi in ASSUMED_DISCORDANCE]
    reachable = [size for size in sizes if size is not None]
    cannot = ", ".join(f"{detectable(n, psi)} at discordance {psi:.2f}" for psi in ASSUMED_DISCORDANCE)
    span = (
        f"~{min(reachable)}-{max(reachable)} questions (discordance {ASSUMED_DISCORDANCE[0]:.2f}-"
        f"{ASSUMED_DISCORDANCE[-1]:.2f}), ~{min(reachable) * seconds_per_question / 60:.0f}-"
        f"{max(reachable) * seconds_per_question / 60:.0f} min"
        if reachable
        else "more questions than any set holds"
    )
    return (
        f"position: SMOKE RUN ({n} placed questions): it checks that the answer side works; it cannot detect a "
        f"position effect (smallest detectable head vs mid: {cannot}). Powered run: {POWERED_COMMAND} "
        f"(a pilot of {s.pilot_questions} questions ~{s.pilot_questions * seconds_per_question / 60:.0f} min at "
        f"the {seconds_per_question:.0f} s per question measured here; a {s.target_mde:.0%} effect needs {span}; "
        f"retrieve-10 and stuff on a subsample add more: `{POWERED_COMMAND} position.dry_run=true` prints the plan)"
    )
