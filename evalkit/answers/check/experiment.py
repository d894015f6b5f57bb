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
from evalkit.answers.context import Budget
from evalkit.answers.generation import make_generator, refusal_for
from evalkit.answers.generation.base import Generator
from evalkit.answers.generation.settings import GeneratorSettings
from evalkit.answers.position.items import pool_items
from evalkit.answers.position.requests import RequestSpec
from evalkit.cost.budget import SpendGuard
from evalkit.cost.model import TokenUsage, call_cost
from evalkit.cost.prices import ModelPrice, model_price_or_none
from evalkit.cost.tokens import estimate_tokens
from evalkit.run import files
from evalkit.run.folder import RunFolder, write_json
from evalkit.scoring.answer_check import candidate_effects, config_summary, effect_line, sizing
from evalkit.scoring.latency import LatencyModel, fit_latency, latency_percentiles
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
    prompt_tokens: Callable[[str], pd.Series],
    labelset: LabelSet,
    cache: Cache,
    run_dir: Path,
    *,
    generator: Generator | None = None,
    spend: SpendGuard | None = None,
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
) -> CheckOutcome | None:
    """Answer production and the decision's configs; None when the decision names no production config.

    ``prompt_tokens(config_id)``: the config's per-question prompt tokens without the system prompt (question
    and returned chunks, the sweep's estimate), for its first-token percentiles.
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

    def answer(size: int) -> tuple[pd.DataFrame, tuple[Any, ...]]:
        questions = sample_questions(asked, size, settings.unanswerable_share, int(settings.seed or 0))
        planned = plan_requests(configs, questions, ranked, documents, spec, budget, count, stuff=settings.stuff)
        frame = answer_check_rows(
            planned, {q.id: q for q in questions}, {k: d.text for k, d in documents.items()}, generator, cache,
            run_dir / files.ANSWER_CHECK_ROWS, refusals=refusals, price=price, flush_every=settings.flush_every,
            workers=settings.workers, progress=job.progress, spend=spend,
        )  # fmt: skip
        return frame, questions

    log(f"answer check: {len(configs)} configs x {min(n, len(asked))} questions with {spec.model} ({settings.preset})")
    rows, questions = answer(n)
    production = configs[0].config_id
    candidates = [c.config_id for c in configs[1:]]
    sized = sizing(rows, production, candidates, job.accuracy_margin, job.level, settings.target_power,
                   settings.max_questions or len(asked))  # fmt: skip
    if settings.preset == "powered" and sized["questions_needed"] and sized["questions_needed"] > len(questions):
        grown = min(int(sized["questions_needed"]), settings.max_questions or len(asked), len(asked))
        log(f"answer check: the pilot's discordance asks {sized['questions_needed']} questions; answering {grown}")
        rows, questions = answer(grown)  # the pilot's answers come from the cache with their answer_s
    # Every run's generating time (rows carry it across a resume), not this run's cache reads alone.
    seconds = float(rows["answer_s"].fillna(0.0).sum())
    system_tokens = float(count(spec.prompts("en")["system"]))
    outcome = _measure(job, rows, configs, candidates, prompt_tokens, system_tokens, sized, labelset)
    outcome["run"] = _run_record(rows, seconds, len(questions), settings, job, len(configs), sized)
    write_json(run_dir / files.ANSWER_CHECK_JSON, outcome)
    for config_id, effect in outcome["effects"].items():
        log(f"answer check: {config_id}: {effect_line(config_id, effect['accuracy'])}")
    return CheckOutcome(rows, outcome, LatencyModel.from_record(outcome["latency"]), system_tokens)


def _measure(
    job: AnswerCheckJob,
    rows: pd.DataFrame,
    configs: tuple[CheckedConfig, ...],
    candidates: list[str],
    prompt_tokens: Callable[[str], pd.Series],
    system_tokens: float,
    sized: dict[str, Any],
    labelset: LabelSet,
) -> dict[str, Any]:
    sent = rows[rows["sent"] & rows["first_token_s"].notna()]
    latency = fit_latency(sent["planned_tokens"].to_numpy(float), sent["first_token_s"].to_numpy(float))
    summaries = []
    for config in configs:
        entry = config_summary(rows, config.config_id, job.level, job.clusters) | {"roles": list(config.roles)}
        if latency is not None:
            entry["first_token"] = latency_percentiles(latency, (prompt_tokens(config.config_id) + system_tokens))
        summaries.append(entry)
    price = model_price_or_none(job.cost_model, job.pricing_dir)
    caps = RoutingCaps(job.accuracy_margin, job.cost_max_rise_pct, job.latency_max_rise_pct, job.level, job.clusters)
    acl = sum(1 for d in labelset.documents if (d.meta or {}).get("acl"))
    routing = stuff_or_retrieve(rows, configs[0].config_id, caps, _cost_of(price, job.output_tokens),
                                job.queries_per_day, latency, acl)  # fmt: skip
    return {
        "version": 1,
        "production": configs[0].config_id,
        "configs": summaries,
        "effects": candidate_effects(
            rows, configs[0].config_id, candidates, job.level, job.accuracy_margin, job.f1_margin, job.clusters
        ),
        "margins": {"answer_accuracy": job.accuracy_margin, "answer_f1": job.f1_margin},
        "level": job.level,
        "sizing": sized,
        "latency": None if latency is None else latency.__dict__ | {"x": "prompt tokens (local estimate)"},
        "system_tokens": system_tokens,
        "routing": routing,
    }


def _run_record(rows: pd.DataFrame, seconds: float, n_questions: int, settings: AnswerCheckSettings,
                job: AnswerCheckJob, n_configs: int, sized: Mapping[str, Any]) -> dict[str, Any]:  # fmt: skip
    """What ran, at what pace, and what the powered check would cost in time at that pace (answers per question:
    one per config, plus the stuffed one)."""
    sent = rows[rows["sent"]]
    fresh = int((~sent["cached"].astype(bool)).sum())
    timed = int((sent["answer_s"].fillna(0.0) > 0).sum())  # generated in this run or an earlier one of its folder
    pace = seconds / timed if timed else None
    per_question = len(sent) / n_questions if n_questions else n_configs
    needed = None
    if pace is not None and sized.get("questions_needed"):
        needed = round(pace * per_question * int(sized["questions_needed"]), 0)
    return {
        "preset": settings.preset,
        "questions": n_questions,
        "answers": len(sent),
        "answers_generated": fresh,
        "seconds": round(seconds, 1),
        "seconds_per_answer": None if pace is None else round(pace, 2),
        "powered_command": job.command,
        "powered_seconds_estimate": needed,
        "model": str(job.generator.model),
        "configs": n_configs,
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
