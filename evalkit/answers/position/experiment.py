"""The position experiment on a finished sweep's pool: choose, size, plan, answer, score; writes position/.

The pipeline calls :func:`position_experiment` once with a :class:`PositionJob` (what the experiment needs of
the sweep, handed down); nothing here reads the sweep's plan or calls back into the pipeline.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from evalkit.answers.context import (
    DOES_NOT_FIT,
    PROMPT_TOO_LONG,
    Budget,
)
from evalkit.answers.generation import make_generator
from evalkit.answers.generation.base import Generator
from evalkit.answers.generation.cached import count_tokens_cached
from evalkit.answers.generation.request import GenerationRequest
from evalkit.answers.generation.settings import GeneratorSettings
from evalkit.answers.generation.tally import GenerationCounter
from evalkit.cost.budget import SpendGuard
from evalkit.cost.prices import ModelPrice, model_price_or_none
from evalkit.run import files
from evalkit.run.folder import RunFolder, read_json, write_json
from evalkit.settings import ConfigError

if TYPE_CHECKING:
    from evalkit.answers.judge.llm import JudgeConfig
    from evalkit.cache import Cache
    from evalkit.labels.read import LabelSet

from evalkit.answers.pools import pool_items
from evalkit.answers.position.describe import describe
from evalkit.answers.position.items import choose_subset
from evalkit.answers.position.notes import (
    detectable_lines,
    measured_pace,
    outlook,
    pending_line,
    smoke_run_note,
    sweep_command,
)
from evalkit.answers.position.plan import PositionPlan, QuestionPlanner, RequestSpec
from evalkit.answers.position.powered import describe_size, powered_size
from evalkit.answers.position.run import run_position, still_to_send
from evalkit.answers.position.settings import STATUS_JSON, BudgetSpec, PositionSettings
from evalkit.answers.position.sizing import Sized, candidate_order, fit_budget, planned_seconds, subsample_ids
from evalkit.records import Question
from evalkit.scoring.clusters import cluster_map, question_clusters


@dataclass(frozen=True)
class PositionJob:
    """What the experiment needs of the sweep, handed down by the pipeline (``SweepPlan.position_job``)."""

    settings: PositionSettings
    generator: GeneratorSettings
    pricing_dir: Path
    """``cost.pricing_dir`` resolved: the model's price and tokenizer family."""
    labelset_limit: int | None
    progress: bool
    judge: JudgeConfig | None = None
    """The advisory judge (``+judge=claude``), None: none."""
    production_chunking: str | None = None
    """The production (baseline) chunking's key, None when production names no chunk size."""
    cluster_by: str = "document"
    """The unit the experiment's intervals resample (the sweep's ``stats.cluster_by``)."""


def choose_chunking(job: PositionJob, available: Sequence[str]) -> str:
    """The chunking whose pool the experiment reads.

    ``position.chunking`` when set; else production's chunking when the sweep ran it; else the first
    chunking of the sweep's grid.
    """
    wanted = job.settings.chunking
    if wanted is not None:
        if wanted not in available:
            raise ConfigError(f"position.chunking: no pool for {wanted!r}; swept: {', '.join(available)}")
        return wanted
    if not available:
        raise ConfigError("position: the sweep holds no candidate pool; run the retrieval sweep first")
    if job.production_chunking in available:
        return str(job.production_chunking)
    return available[0]


def swept_chunkings(run_dir: Path) -> list[str]:
    """Chunkings of a finished sweep whose pools are in the run folder, in grid order."""
    folder = RunFolder(run_dir)
    manifest = run_dir / files.MANIFEST
    grid = list(read_json(manifest).get("grid", {}).get("chunkings", [])) if manifest.exists() else []
    return [key for key in grid if folder.pool_path(key).exists()] or sorted(
        p.stem for p in (run_dir / files.POOLS_DIR).glob("*.parquet")
    )


def resolve_budget(
    spec: BudgetSpec,
    generator: Generator,
    generator_cfg: Mapping[str, Any],
    price: ModelPrice | None,
    max_tokens: int | None = None,
) -> Budget:
    """The :class:`Budget` of every prompt: configured values, else the generator's, else the price table's."""
    window = spec.window or generator.window or (price.context_window if price is not None else None)
    if not window:
        raise ConfigError("position.budget.window: the generator has no window; set position.budget.window")
    generated = int(generator_cfg.get("max_tokens", 256))  # validated when the plan was read
    max_output = spec.max_output or (generated if max_tokens is None else min(max_tokens, generated))
    headroom = max(spec.headroom, int(generator.headroom or 0))
    budget = Budget(int(window), max_output, headroom, spec.context_share)
    if budget.input_tokens <= 0:
        raise ConfigError(f"position.budget: window {window} leaves no input after {max_output} + {headroom}")
    return budget


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def position_experiment(
    job: PositionJob,
    labelset: LabelSet,
    cache: Cache,
    run_dir: Path,
    *,
    pools: Mapping[str, pd.DataFrame] | None = None,
    generator: Generator | None = None,
    log: Callable[[str], None] = _stderr,
    out_dir: Path | None = None,
    spend: SpendGuard | None = None,
) -> Path:
    """Run the position experiment of ``job`` after its retrieval sweep; returns its folder (``run_dir/position``).

    ``pools`` are the sweep's candidate pools by chunking key, as the units of work
    returned them; without them the pools are read from the run folder. Draws the
    subset, plans, prints :func:`describe` through ``log``, and (unless
    ``position.dry_run``) runs. ``spend`` is the sweep's spending cap
    (``budget_usd``), charged before every uncached paid answer.
    """
    settings, generator_settings = job.settings, job.generator
    available = list(pools) if pools is not None else swept_chunkings(run_dir)
    chunking = choose_chunking(job, available)
    documents = {doc.doc_id: doc for doc in labelset.documents}
    pool = pools[chunking] if pools is not None else pd.read_parquet(RunFolder(run_dir).pool_path(chunking))
    ranked = pool_items(pool, documents)
    limit = job.labelset_limit
    asked = labelset.questions[:limit] if limit else labelset.questions
    generator = generator or make_generator(generator_settings)
    model = str(generator.model or generator_settings.model)
    price = model_price_or_none(model, job.pricing_dir)
    family = settings.tokenizer_family or (price.tokenizer_family if price is not None else "generic")
    generator_cfg = generator_settings.as_config()
    budget = resolve_budget(settings.budget, generator, generator_cfg, price, settings.max_tokens)
    counter = GenerationCounter()
    count_request = None
    if settings.count_with_model:

        def count_request(request: GenerationRequest) -> int | None:
            return count_tokens_cached(generator, request, cache, counter)

    request_spec = _request_spec(settings, generator_cfg, model, generator.backend)
    out_dir = out_dir or run_dir / files.POSITION_DIR
    subsample = subsample_ids(settings, asked)
    planner = QuestionPlanner(settings, ranked, documents, request_spec, budget, family, count_request, subsample)
    clusters = cluster_map(question_clusters(asked, job.cluster_by))
    questions, sizing, pilot = choose_questions(settings, asked, planner, out_dir, clusters)
    rounds: list[dict[str, Any]] = []
    for _ in range(settings.rounds if settings.preset == "powered" else 1):
        position_plan = _announce(planner, questions, chunking, price, sizing, pilot, out_dir, log)
        position_plan = replace(position_plan, cluster_by=job.cluster_by)
        log(_pending(position_plan, generator, out_dir))
        if settings.dry_run:
            write_status(out_dir, "dry_run", "a dry run plans the experiment and sends nothing", "")
            return out_dir
        if not questions:
            write_status(out_dir, "empty", "position.time_budget_s fits no question at the planning speeds", "")
            return out_dir
        run_position(position_plan, generator, cache, out_dir, job.progress, counter=counter, spend=spend)
        rounds.append(_round_record(position_plan, out_dir))
        if settings.preset != "powered":
            break
        # powered: re-measure the discordance on every answer so far and grow until the size stops growing
        grown, sizing, pilot = choose_questions(settings, asked, planner, out_dir, clusters)
        if len(grown) <= len(questions):
            log(sizing)
            break
        questions = grown
    _keep_rounds(out_dir, rounds)
    note = smoke_run_note(position_plan, planner, asked, chunking, price, out_dir, log)
    write_status(out_dir, "ran", f"{len(questions)} questions, {len(position_plan.to_send)} answers", "", note)
    if job.judge:  # +judge=claude: advisory ragas scores beside evalkit's own
        from evalkit.answers.position.judging import judge_position

        judged = judge_position(out_dir, labelset, job.judge, cache)
        log(f"position: answers judged by {job.judge.model} (advisory) -> {judged}")
    return out_dir


def _pending(position_plan: PositionPlan, generator: Generator, out_dir: Path) -> str:
    """What this folder still has to send and its time, at the planning speeds and at its measured pace."""
    stats_path = out_dir / "run_stats.json"
    pace = measured_pace(read_json(stats_path)) if stats_path.exists() else None
    return pending_line(position_plan, still_to_send(position_plan, generator, out_dir), pace)


def _round_record(position_plan: PositionPlan, out_dir: Path) -> dict[str, Any]:
    """One round of this invocation: its questions, planned and measured seconds, requests sent (cumulative)."""
    stats = read_json(out_dir / "run_stats.json")
    planned = planned_seconds(position_plan.prompt_tokens, position_plan.n_distinct, position_plan.settings)
    return {
        "questions": len(position_plan.questions),
        "sizing": position_plan.sizing,
        "planned_seconds": round(planned, 1),
        "seconds": stats.get("seconds"),
        "answers_pending_at_start": stats.get("answers_pending_at_start"),
        "requests_sent_so_far": stats.get("requests_sent"),
    }


def _keep_rounds(out_dir: Path, rounds: list[dict[str, Any]]) -> None:
    """run_stats.json describes the last round; the invocation's rounds and their total time go beside it."""
    stats = read_json(out_dir / "run_stats.json")
    stats["rounds"] = rounds
    stats["seconds_all_rounds"] = round(sum(float(r["seconds"] or 0) for r in rounds), 3)
    write_json(out_dir / "run_stats.json", stats)


def _announce(
    planner: QuestionPlanner,
    questions: Sequence[Question],
    chunking: str,
    price: ModelPrice | None,
    sizing: str,
    pilot: bool,
    out_dir: Path,
    log: Callable[[str], None],
) -> PositionPlan:
    """Plan ``questions``, print the plan (and for a powered pilot the road to its target), keep it in plan.json."""
    if sizing:
        log(sizing)
    position_plan = replace(planner.plan_all(questions, chunking=chunking, price=price), sizing=sizing)
    lines = [describe(position_plan), *detectable_lines(position_plan)]
    if pilot:
        lines.append(f"  {outlook(position_plan)}")
    text = "\n".join(lines)
    log(text)
    write_json(out_dir / "plan.json", _plan_record(position_plan, text))
    return position_plan


def _request_spec(
    settings: PositionSettings, generator_cfg: Mapping[str, Any], model: str, backend: str
) -> RequestSpec:
    """The generator's request settings, with ``position.max_tokens`` capping the answer length."""
    spec = RequestSpec.from_config(generator_cfg, model, backend)
    if settings.max_tokens is not None and settings.max_tokens < spec.max_tokens:
        spec = replace(spec, max_tokens=settings.max_tokens)
    return spec


def choose_questions(
    settings: PositionSettings,
    asked: Sequence[Question],
    planner: QuestionPlanner,
    out_dir: Path,
    clusters: pd.Series | None = None,
) -> tuple[tuple[Question, ...], str, bool]:
    """The questions of this round, in labelled-set order, the sizing line to print ('' for none), and whether
    they are a powered run's pilot (no discordance measured yet).

    ``powered``: the pilot, then the size the measured discordance needs (:mod:`~evalkit.answers.position.powered`);
    with a time budget: as many as it holds; else ``position.subset``.
    """
    if settings.preset == "powered":
        rows_path = out_dir / "rows.parquet"
        earlier = pd.read_parquet(rows_path) if rows_path.exists() else None
        # the questions answered so far, from the rows (not plan.json, which a dry run rewrites)
        before = 0 if earlier is None or earlier.empty else int(earlier["question_id"].nunique())
        size = powered_size(settings, len(asked), earlier, before, clusters)
        kept = {q.id for q in candidate_order(asked, settings.subset)[: size.n_candidates]}
        return tuple(q for q in asked if q.id in kept), describe_size(size, settings), size.pilot
    if settings.time_budget_s is None:
        return choose_subset(asked, settings.subset), "", False
    sized = size_to_budget(settings, asked, planner)
    return sized.questions, describe_sizing(settings, sized), False


def size_to_budget(settings: PositionSettings, asked: Sequence[Question], planner: QuestionPlanner) -> Sized:
    """The questions that fit ``position.time_budget_s``, planned one at a time in the seeded stratified order."""

    def cost_of(question: Question) -> tuple[int, int]:
        distinct = {e.context_key: e.prompt_tokens for e in planner.plan(question).entries if e.fits}
        return sum(distinct.values()), len(distinct)

    sized = fit_budget(candidate_order(asked, settings.subset), cost_of, settings)
    kept = {q.id for q in sized.questions}
    return Sized(tuple(q for q in asked if q.id in kept), sized.seconds, sized.next_seconds, sized.candidates)


def describe_sizing(settings: PositionSettings, sized: Sized) -> str:
    """One line: how many questions the time budget holds, and why not more."""
    why = (
        f"the next would take ~{sized.next_seconds:.0f} s more"
        if sized.next_seconds is not None
        else ("every question fits" if len(sized.questions) == sized.candidates else "position.subset.size caps it")
    )
    return (
        f"position: time budget {settings.time_budget_s:g} s at {settings.prompt_tokens_per_s:g} prompt tok/s and "
        f"{settings.output_tokens_per_s:g} output tok/s holds {len(sized.questions)} of {sized.candidates} questions "
        f"(~{sized.seconds:.0f} s planned; {why}); position.time_budget_s=<seconds> asks more"
    )


def skipped_unclean(plan: PositionPlan) -> dict[str, dict[str, int]]:
    """Questions skipped for want of a clean placement, by arm and reason."""
    counts: dict[str, dict[str, int]] = {}
    for _, arm, reason in plan.unclean:
        counts.setdefault(arm, {}).setdefault(reason, 0)
        counts[arm][reason] += 1
    return counts


def write_status(out_dir: Path, state: str, why: str, command: str, smoke: str = "") -> Path:
    """``position/status.json``: ``state`` (ran, off, dry_run, empty, failed), why, the command that runs it, and
    ``smoke``: for a smoke run, what it cannot detect and the powered run's command with its time ('' otherwise)."""
    command = command or f"{sweep_command('powered')}  # sized to detect a 10-point position effect"
    path = out_dir / STATUS_JSON
    write_json(path, {"state": state, "ran": state == "ran", "why": why, "command": command, "smoke": smoke})
    return path


def _plan_record(plan: PositionPlan, text: str) -> dict[str, Any]:
    """What the plan promised, kept beside the results (the report shows planned against done)."""
    return {
        "chunking": plan.chunking,
        "model": plan.request_spec.model,
        "backend": plan.request_spec.backend,
        "budget": {
            "window": plan.budget.window_tokens,
            "max_output": plan.budget.max_output_tokens,
            "headroom": plan.budget.headroom_tokens,
            "context_share": plan.budget.context_share,
        },
        "questions": [q.id for q in plan.questions],
        "arms": [arm.name for arm in plan.settings.arms],
        "placements": [p.name for p in plan.settings.placements],
        "repeats": plan.settings.repeats,
        "rows": len(plan.entries),
        "answers": len(plan.to_send),
        "distinct_requests": plan.n_distinct,
        "prompt_tokens": plan.prompt_tokens,
        "prompt_tokens_estimated": plan.tokens_estimated,
        "tokenizer_family": plan.tokenizer_family,
        "does_not_fit": plan.count(DOES_NOT_FIT),
        "prompt_too_long": plan.count(PROMPT_TOO_LONG),
        "over_budget": plan.n_over_budget,
        "skipped_no_gold": plan.skipped_no_gold,
        "preset": plan.settings.preset,
        "sizing": plan.sizing,
        "clean": plan.settings.clean,
        "stuff_scope": plan.settings.stuff.scope,
        "skipped_unclean": skipped_unclean(plan),
        "unclean": [{"question_id": q, "arm": a, "reason": r} for q, a, r in plan.unclean],
        "description": text,
    }
