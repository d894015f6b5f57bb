"""The answer check after the retrieval decision: choose, plan, answer, measure; writes answer_check/.

The pipeline calls :func:`answer_check` once with an :class:`AnswerCheckJob` (what it needs of the sweep,
handed down) and the decision's record; nothing here reads the sweep's plan. ``powered`` asks a pilot, sizes
the check from the pilot's discordance (:func:`evalkit.scoring.answer_check.sizing`) and grows the same
seeded sample to that size in one invocation (answers already given are cached: nothing is asked twice).
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from evalkit.answers.check.plan import CheckedConfig, configs_to_check, plan_requests, sample_questions
from evalkit.answers.check.run import answer_check_rows
from evalkit.answers.check.settings import AnswerCheckSettings
from evalkit.answers.check.stratified import design_table, stratified_check
from evalkit.answers.context import Budget
from evalkit.answers.generation import make_generator, refusal_for
from evalkit.answers.generation.base import Generator
from evalkit.answers.generation.latency_profile import read_profile
from evalkit.answers.generation.settings import GeneratorSettings
from evalkit.answers.pools import pool_items
from evalkit.answers.requests import RequestSpec
from evalkit.cost.budget import SpendGuard
from evalkit.cost.model import TokenUsage, call_cost
from evalkit.cost.prices import ModelPrice, model_price_or_none
from evalkit.cost.tokens import estimate_tokens
from evalkit.records import Question
from evalkit.run import files
from evalkit.run.folder import RunFolder, write_json, write_table
from evalkit.scoring.answer_check import candidate_effects, config_summary, design_effect, effect_line, sizing
from evalkit.scoring.latency import MIN_POINTS, LatencyModel, fit_latency, latency_percentiles
from evalkit.scoring.routing import RoutingCaps, stuff_or_retrieve
from evalkit.settings import ConfigError

if TYPE_CHECKING:
    from evalkit.cache import Cache
    from evalkit.labels.read import LabelSet


@dataclass(frozen=True)
class AnswerCheckJob:
    """What the answer check needs of the sweep (``SweepPlan.answer_check_job``)."""

    settings: AnswerCheckSettings
    generator: GeneratorSettings
    pricing_dir: Path
    labelset_limit: int | None
    progress: bool
    level: float
    """The gate's confidence: every interval of the check is at this level."""
    accuracy_margin: float
    """The gate's ``answer_accuracy`` margin (points as a share): non-inferiority is shown against it."""
    f1_margin: float
    cost_max_rise_pct: float | None
    """The gate's ``cost_per_query`` margin: what stuffing may cost over retrieval."""
    latency_max_rise_pct: float | None
    """The gate's ``first_token_s`` margin: how much slower stuffing may start answering."""
    cost_model: str
    """The production model ``cost:`` prices (the routing table's $/day)."""
    queries_per_day: float
    output_tokens: int
    token_family: str
    """Family of the local token estimates the sweep's prompt tokens use (the latency model's x)."""
    command: str = "python -m evalkit.sweep answer_check=powered"
    clusters: pd.Series | None = field(default=None, compare=False, repr=False)
    """question_id -> cluster (the gate's, from the sweep's clusters.parquet): the effects resample them."""


@dataclass(frozen=True)
class CheckOutcome:
    """The rows, the record written to check.json, and the latency model (None: no request was timed)."""

    rows: pd.DataFrame
    record: dict[str, Any]
    latency: LatencyModel | None
    system_tokens: float


def answer_check(
    job: AnswerCheckJob,
    record: Mapping[str, Any],
    summary: pd.DataFrame,
    config_frame: Callable[[str], pd.DataFrame],
    labelset: LabelSet,
    cache: Cache,
    run_dir: Path,
    *,
    generator: Generator | None = None,
    spend: SpendGuard | None = None,
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
) -> CheckOutcome | None:
    """Answer production and the decision's configs; None when the decision names no production config.

    ``config_frame(config_id)``: the config's per-question results (question_id, question_tokens,
    returned_tokens, hit, ...): its prompt tokens give its first-token percentiles, its hits the design effect
    the powered size plans with.
    """
    settings = job.settings
    rows_by_id = {str(r["config_id"]): r for r in summary.to_dict("records")}
    configs = configs_to_check(record, rows_by_id, settings)
    if not configs:
        return None
    generator = generator or make_generator(job.generator)
    spec = RequestSpec.from_config(job.generator.as_config(), str(generator.model or job.generator.model),
                                   generator.backend)  # fmt: skip
    spec = replace(spec, max_tokens=min(spec.max_tokens, settings.max_tokens))
    price = model_price_or_none(spec.model, job.pricing_dir)
    budget = _budget(generator, price, spec.max_tokens, settings.context_share)
    documents = {d.doc_id: d for d in labelset.documents}
    ranked = {c: pool_items(pd.read_parquet(RunFolder(run_dir).pool_path(c)), documents) for c in
              dict.fromkeys(cfg.chunking for cfg in configs)}  # fmt: skip
    asked = labelset.questions[: job.labelset_limit] if job.labelset_limit else labelset.questions
    count = functools.lru_cache(maxsize=4096)(lambda text: estimate_tokens(text, job.token_family))
    n = settings.pilot_questions if settings.preset == "powered" else settings.questions
    refusals = tuple(refusal_for(job.generator.as_config(), lang) for lang in ("en", "zh"))

    def answer_questions(questions: tuple[Question, ...]) -> pd.DataFrame:
        planned = plan_requests(configs, questions, ranked, documents, spec, budget, count, stuff=settings.stuff)
        return answer_check_rows(
            planned, {q.id: q for q in questions}, {k: d.text for k, d in documents.items()}, generator, cache,
            run_dir / files.ANSWER_CHECK_ROWS, refusals=refusals, price=price, flush_every=settings.flush_every,
            workers=settings.workers, progress=job.progress, spend=spend,
        )  # fmt: skip

    def answer(size: int) -> tuple[pd.DataFrame, tuple[Any, ...]]:
        questions = sample_questions(asked, size, settings.unanswerable_share, int(settings.seed or 0))
        return answer_questions(questions), questions

    production = configs[0].config_id
    candidates = [c.config_id for c in configs[1:]]
    effect = design_effect(config_frame, production, candidates, job.clusters)
    if settings.preset == "powered" and settings.design == "stratified" and candidates:
        log(f"answer check: {len(configs)} configs, stratified by retrieval, with {spec.model} (powered)")
        design = design_table(configs, asked, ranked, config_frame, job.clusters, int(settings.seed or 0))
        found = stratified_check(
            configs, asked, design, answer_questions, pilot=settings.pilot_questions, margin=job.accuracy_margin,
            f1_margin=job.f1_margin, level=job.level, power=settings.target_power, set_design_effect=effect,
            max_questions=settings.max_questions, log=log,
        )  # fmt: skip
        write_table(run_dir / files.ANSWER_CHECK_DESIGN, found.design)
        rows, questions, sized, effects = found.rows, found.questions, found.sizing, found.effects
        return _finish(job, rows, configs, config_frame, float(count(spec.prompts("en")["system"])), sized,
                       labelset, len(questions), run_dir, log, effects)  # fmt: skip

    log(f"answer check: {len(configs)} configs x {min(n, len(asked))} questions with {spec.model} ({settings.preset})")
    rows, questions = answer(n)
    sized = sizing(rows, production, candidates, job.accuracy_margin, job.level, settings.target_power,
                   settings.max_questions or len(asked), effect, len(asked))  # fmt: skip
    if settings.preset == "powered" and sized["questions_needed"] and sized["questions_needed"] > len(questions):
        grown = min(int(sized["questions_needed"]), settings.max_questions or len(asked), len(asked))
        log(f"answer check: the pilot's discordance asks {sized['questions_needed']} questions; answering {grown}")
        rows, questions = answer(grown)  # the pilot's answers come from the cache with their answer_s
    return _finish(job, rows, configs, config_frame, float(count(spec.prompts("en")["system"])), sized, labelset,
                   len(questions), run_dir, log)  # fmt: skip


def _finish(
    job: AnswerCheckJob,
    rows: pd.DataFrame,
    configs: tuple[CheckedConfig, ...],
    config_frame: Callable[[str], pd.DataFrame],
    system_tokens: float,
    sized: dict[str, Any],
    labelset: LabelSet,
    n_questions: int,
    run_dir: Path,
    log: Callable[[str], None],
    effects: dict[str, Any] | None = None,
) -> CheckOutcome:
    """check.json written from the answers (and a stratified check's effects), its effects logged."""
    candidates = [c.config_id for c in configs[1:]]
    outcome = _measure(job, rows, configs, candidates, config_frame, system_tokens, sized, labelset, effects)
    # Every run's generating time (rows carry it across a resume), not this run's cache reads alone.
    seconds = float(rows["answer_s"].fillna(0.0).sum())
    outcome["run"] = _run_record(rows, seconds, n_questions, job.settings, job, len(configs), sized)
    write_json(run_dir / files.ANSWER_CHECK_JSON, outcome)
    for config_id, effect in outcome["effects"].items():
        log(f"answer check: {config_id}: {effect_line(config_id, effect['accuracy'])}")
    return CheckOutcome(rows, outcome, LatencyModel.from_record(outcome["latency"]), system_tokens)


def _measure(
    job: AnswerCheckJob,
    rows: pd.DataFrame,
    configs: tuple[CheckedConfig, ...],
    candidates: list[str],
    config_frame: Callable[[str], pd.DataFrame],
    system_tokens: float,
    sized: dict[str, Any],
    labelset: LabelSet,
    effects: dict[str, Any] | None = None,
) -> dict[str, Any]:
    measured = fit_latency(*timed_requests(rows))
    latency, source = latency_source(measured, job)
    summaries = []
    for config in configs:
        entry = config_summary(rows, config.config_id, job.level, job.clusters) | {"roles": list(config.roles)}
        if latency is not None:
            frame = config_frame(config.config_id)
            tokens = frame["question_tokens"].astype(float) + frame["returned_tokens"].astype(float) + system_tokens
            entry["first_token"] = latency_percentiles(latency, tokens)
        summaries.append(entry)
    price = model_price_or_none(job.cost_model, job.pricing_dir)
    caps = RoutingCaps(job.accuracy_margin, job.cost_max_rise_pct, job.latency_max_rise_pct, job.level, job.clusters)
    acl = sum(1 for d in labelset.documents if (d.meta or {}).get("acl"))
    production_latency = latency if source["constrains"] else None  # a stand-in's speed caps nothing
    routing = stuff_or_retrieve(rows, configs[0].config_id, caps, _cost_of(price, job.output_tokens),
                                job.queries_per_day, production_latency, acl)  # fmt: skip
    return {
        "decides": job.settings.preset != "smoke",
        "production": configs[0].config_id,
        "configs": summaries,
        "effects": effects
        if effects is not None
        else candidate_effects(
            rows, configs[0].config_id, candidates, job.level, job.accuracy_margin, job.f1_margin, job.clusters
        ),
        "design": "stratified" if effects is not None else "uniform",
        "margins": {"answer_accuracy": job.accuracy_margin, "answer_f1": job.f1_margin},
        "level": job.level,
        "sizing": sized,
        "latency": None if latency is None else latency.record() | {"x": "prompt tokens (local estimate)"} | source,
        "system_tokens": system_tokens,
        "routing": routing,
    }


def timed_requests(rows: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Prompt tokens and first-token seconds of the requests this run sent and timed itself, one at a time.

    A cached answer carries the timing of the run that made it (another load, maybe another machine), and a
    request sent while others were in flight waited behind them on a server with fewer slots: neither is a
    request's latency. Rows sent with others in flight are kept only when no request ran alone.
    """
    fresh = rows[rows["sent"] & ~rows["cached"].astype("boolean").fillna(False).astype(bool)
                 & rows["first_token_s"].notna()]  # fmt: skip
    alone = fresh[fresh["in_flight"].fillna(1) <= 1] if "in_flight" in fresh.columns else fresh
    chosen = alone if len(alone) >= MIN_POINTS else fresh
    return chosen["planned_tokens"].astype(float), chosen["first_token_s"].astype(float)


def latency_source(measured: LatencyModel | None, job: AnswerCheckJob) -> tuple[LatencyModel | None, dict[str, Any]]:
    """The latency the check reports, where it comes from, and whether it may constrain a config.

    Production's generator (the answering model is the one ``cost:`` prices) or a latency profile measured
    against it (``answer_check.latency_profile``, written by ``python -m evalkit.latency probe``) constrains;
    a local stand-in's speed is shown, labelled, and never constrains the objective or the gate.
    """
    model, production = str(job.generator.model), job.cost_model
    profile = job.settings.latency_profile
    if profile:
        return read_profile(profile), {"source": f"latency profile {profile} ({production})", "constrains": True,
                                       "stand_in": None if measured is None else measured.record()}  # fmt: skip
    if model == production:
        return measured, {"source": f"production's generator ({model})", "constrains": True}
    return measured, {"source": f"stand-in {model} (production serves {production})", "constrains": False}


def _run_record(rows: pd.DataFrame, seconds: float, n_questions: int, settings: AnswerCheckSettings,
                job: AnswerCheckJob, n_configs: int, sized: Mapping[str, Any]) -> dict[str, Any]:  # fmt: skip
    """What ran, at what pace, and what the powered check would cost in time at that pace (answers per question:
    one per config, plus the stuffed one)."""
    sent = rows[rows["sent"]]
    fresh = int((~sent["cached"].astype(bool)).sum())
    timed = int((sent["answer_s"].fillna(0.0) > 0).sum())  # generated in this run or an earlier one of its folder
    pace = seconds / timed if timed else None
    per_question = len(sent) / n_questions if n_questions else n_configs
    needed = usd = None
    if pace is not None and sized.get("questions_needed"):
        needed = round(pace * per_question * int(sized["questions_needed"]), 0)
        spent = pd.to_numeric(sent.loc[~sent["cached"].astype(bool), "cost_usd"], errors="coerce")
        if spent.notna().any():  # a priced generator: dollars per fresh answer times the answers needed
            usd = round(float(spent.mean()) * per_question * int(sized["questions_needed"]), 2)
    return {
        "preset": settings.preset,
        "questions": n_questions,
        "answers": len(sent),
        "answers_generated": fresh,
        "seconds": round(seconds, 1),
        "seconds_per_answer": None if pace is None else round(pace, 2),
        "powered_command": job.command,
        "powered_seconds_estimate": needed,
        "powered_usd_estimate": usd,
        "model": str(job.generator.model),
        "configs": n_configs,
        "seed": settings.seed,
        "unanswerable_share": settings.unanswerable_share,
    }


def _cost_of(price: ModelPrice | None, output_tokens: int) -> Callable[[float], float]:
    def cost(tokens: float) -> float:
        if price is None or not math.isfinite(tokens):
            return math.nan
        return call_cost(TokenUsage(round(tokens), output_tokens, estimated=True), price).usd

    return cost


def _budget(generator: Generator, price: ModelPrice | None, max_output: int, context_share: float) -> Budget:
    window = generator.window or (price.context_window if price is not None else None)
    if not window:
        raise ConfigError("answer_check: the generator has no window and its model is not in conf/pricing")
    return Budget(int(window), max_output, max(256, int(generator.headroom or 0)), context_share)
