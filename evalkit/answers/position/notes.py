"""What the position plan can detect, and the smoke run's note: numbers from the exact power functions.

It joins the plan with the exact power functions of scoring.stats, which answers/ may call directly.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from evalkit.answers.generation.turnaround import hosted_time, is_hosted, uses_batches
from evalkit.answers.position.plan import PlannedAnswer, PositionPlan, QuestionPlanner
from evalkit.answers.position.settings import PositionSettings
from evalkit.answers.position.sizing import candidate_order, planned_seconds, subsample_ids
from evalkit.confdir import conf_dir
from evalkit.cost.prices import ModelPrice
from evalkit.records import Question
from evalkit.run.folder import read_json
from evalkit.scoring.stats import paired_binary_mde, questions_for_paired_binary

ASSUMED_DISCORDANCE = (0.15, 0.2, 0.3)
"""Head-vs-mid discordance the plan states its detectable effect at before any is measured (issue 22: 0.15-0.3)."""
POSITION_OVERRIDE = re.compile(r"^[+~]*position([.=]|$)")
"""A command-line override that chooses or tunes the position experiment (replaced in a suggested command)."""


def sweep_command(preset: str | None) -> str:
    """The command that re-runs this sweep with the position preset ``preset`` (None: as it was chosen).

    It carries the run's own overrides (Hydra's task overrides: the labelled set, the run folder, ...), so it
    works in the project it was run in; inside an ``evalkit init`` project, whose project.yaml turns position
    off, an explicit ``position=`` choice is what turns it on. Outside a Hydra run (a library call) there are no
    overrides to carry.
    """
    try:
        from hydra.core.hydra_config import HydraConfig

        task = list(HydraConfig.get().overrides.task)
    except ValueError:  # not inside a Hydra run
        task = []
    kept = task if preset is None else [o for o in task if not POSITION_OVERRIDE.match(o)]
    chosen = [] if preset is None else [f"position={preset}"]
    return shlex.join(["python", "-m", "evalkit.sweep", *kept, *chosen])


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


def planned_seconds_of(plan: PositionPlan, entries: Sequence[PlannedAnswer]) -> float:
    """Planned seconds of these answers at the planning speeds (identical contexts of a question sent once)."""
    distinct = {entry.context_key: entry.prompt_tokens for entry in entries}
    return planned_seconds(sum(distinct.values()), len(distinct), plan.settings)


MIN_PACE_SECONDS = 120.0
"""A folder's measured pace is used once its earlier run sent at least this many planned seconds of answers."""


def measured_pace(run_stats: Mapping[str, Any]) -> float | None:
    """Measured over planned seconds of the answers this folder's last run sent, or None (too few, or none)."""
    planned, seconds = run_stats.get("planned_seconds_pending"), run_stats.get("seconds")
    if not planned or not seconds or float(planned) < MIN_PACE_SECONDS:
        return None
    return float(seconds) / float(planned)


def pending_line(plan: PositionPlan, pending: Sequence[PlannedAnswer], pace: float | None = None) -> str:
    """How much of the plan this folder still has to answer and its time: what the run will actually spend.

    ``pace``: this folder's measured seconds per planned second (:func:`measured_pace`), which also carries
    what the planning speeds leave out (long-context slowdown, log-likelihood scoring, a loaded machine).
    """
    minutes = planned_seconds_of(plan, pending) / 60
    answered = len(plan.to_send) - len(pending)
    paced = "" if pace is None else f"; ≈ {minutes * pace:.1f} min at this folder's measured pace ({pace:.2f}x)"
    done = f"  already answered in this folder: {answered} of {len(plan.to_send)}; to send: {len(pending)} answers"
    spec = plan.request_spec
    if is_hosted(spec.backend):  # the planning speeds are the local model's: never an endpoint's time
        if uses_batches(spec.backend, spec.generator_cfg):
            paced = ""  # a batch's turnaround is the provider's queue, not a pace measured here
        requests = len({entry.context_key for entry in pending})
        return f"{done} ({hosted_time(spec.backend, spec.generator_cfg, requests)}){paced}"
    return f"{done} ≈ {minutes:.1f} min at the planning speeds{paced}"


def seconds_per_question_by_arm(plan: PositionPlan) -> dict[str, float]:
    """Planned seconds one question costs on each arm (its distinct requests at the planning speeds)."""
    out: dict[str, float] = {}
    for arm in plan.settings.arms:
        distinct = {e.context_key: e.prompt_tokens for e in plan.to_send if e.arm == arm.name}
        asked = {e.question_id for e in plan.to_send if e.arm == arm.name}
        if asked:
            out[arm.name] = planned_seconds(sum(distinct.values()), len(distinct), plan.settings) / len(asked)
    return out


def seconds_for(plan: PositionPlan, n_questions: int) -> float:
    """Planned seconds of ``n_questions`` questions with this plan's arms (subsample arms on their subsample only)."""
    s = plan.settings
    by_arm = seconds_per_question_by_arm(plan)
    total = 0.0
    for arm in s.arms:
        per_question = by_arm.get(arm.name, 0.0)
        asked = min(n_questions, s.subsample_size or n_questions) if s.on_subsample(arm) else n_questions
        total += per_question * asked
    return total


def questions_to_target(plan: PositionPlan, discordance: float) -> int | None:
    """Candidate questions a powered run needs for its target at ``discordance`` (skips for unclean placements
    included at this plan's rate), or None when the target exceeds what any size can detect."""
    s = plan.settings
    needed = questions_for_paired_binary(s.target_mde, discordance, max_n=100_000)
    placed = placed_questions(plan, "retrieve-5") / max(len(plan.questions), 1)
    return None if needed is None or not placed else math.ceil(needed / placed)


def outlook(plan: PositionPlan, speed: float = 1.0) -> str:
    """The powered run from a pilot plan: the pilot's time and the time to the target at the assumed discordances.

    ``speed``: measured over planned seconds where a run measured it (1.0: the planning speeds)."""
    s, spec = plan.settings, plan.request_spec
    hosted = is_hosted(spec.backend)
    # An endpoint is timed only by a pace measured against it (speed != 1.0), never by the planning speeds.
    measured = hosted and speed != 1.0 and not uses_batches(spec.backend, spec.generator_cfg)

    def took(n_questions: int) -> str:
        if hosted and not measured:
            return ""
        return f" ≈ {seconds_for(plan, n_questions) * speed / 60:.0f} min"

    parts = []
    for psi in ASSUMED_DISCORDANCE:
        n = questions_to_target(plan, psi)
        parts.append(f"not detectable at {psi:.2f}" if n is None else f"~{n} questions{took(n)} at {psi:.2f}")
    turnaround = ""
    if hosted and not measured:
        turnaround = f"; {hosted_time(spec.backend, spec.generator_cfg, plan.n_distinct, s.rounds)}"
    return (
        f"pilot of {len(plan.questions)} questions{took(len(plan.questions))}; to a {s.target_mde:.0%} head-vs-mid "
        f"effect at 80% exact power: {', '.join(parts)} (discordance measured by the pilot decides){turnaround}"
    )


def smoke_note(plan: PositionPlan, pilot: PositionPlan | None, speed: float) -> str:
    """What a smoke run cannot detect, and the powered run's command with its time at the speed measured here.

    ``pilot``: the powered preset's pilot planned on this set (None when it cannot be planned)."""
    n = placed_questions(plan, "retrieve-5")
    cannot = ", ".join(f"{detectable(n, psi)} at discordance {psi:.2f}" for psi in ASSUMED_DISCORDANCE)
    timing = f"{outlook(pilot, speed)}; " if pilot is not None else ""
    powered = sweep_command("powered")
    return (
        f"position: SMOKE RUN ({n} placed questions): it checks that the answer side works; it cannot detect a "
        f"position effect (smallest detectable head vs mid: {cannot}). Powered run: {powered} "
        f"({timing}at the speed measured here; `{powered} position.dry_run=true` prints the plan)"
    )


def smoke_run_note(
    plan: PositionPlan,
    planner: QuestionPlanner,
    asked: Sequence[Question],
    chunking: str,
    price: ModelPrice | None,
    out_dir: Path,
    log: Callable[[str], None],
) -> str:
    """A smoke run's note (printed, and kept in status.json for the report); '' for any other preset.

    The powered run's time comes from the powered preset's own pilot planned on this set, at the speed this run
    measured (measured over planned seconds), so the note and ``position=powered position.dry_run=true`` agree."""
    if plan.settings.preset != "smoke":
        return ""
    powered = powered_preset(plan.settings.seed)
    pilot_questions = candidate_order(asked, powered.subset)[: powered.pilot_questions]
    pilot_planner = replace(planner, settings=powered, subsample=subsample_ids(powered, asked))
    pilot = pilot_planner.plan_all(pilot_questions, chunking=chunking, price=price)
    note = smoke_note(plan, pilot, measured_speed(plan, read_json(out_dir / "run_stats.json")))
    log(note)
    return note


def powered_preset(seed: int) -> PositionSettings:
    """The settings of ``position=powered`` as evalkit ships them (conf/position/powered.yaml: the one place)."""
    from omegaconf import OmegaConf

    preset = OmegaConf.merge({"seed": seed}, OmegaConf.load(conf_dir() / "position" / "powered.yaml"))
    return PositionSettings.from_config(preset.position, seed=seed)


def measured_speed(plan: PositionPlan, run_stats: Mapping[str, Any]) -> float:
    """This run's seconds over its planned seconds (1.0 unless every answer was generated here)."""
    planned = planned_seconds(plan.prompt_tokens, plan.n_distinct, plan.settings)
    if run_stats.get("requests_sent", 0) >= plan.n_distinct and run_stats.get("seconds") and planned:
        return float(run_stats["seconds"]) / planned
    return 1.0
