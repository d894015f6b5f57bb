"""``dry_run=true``: what a sweep will call, and what it will cost, before a cent is spent.

The dry run walks the same units of work as the sweep. It runs only the free
stage (chunking, which is pure; a finished chunk stage is read from the unit
store) and prices the rest: embedding is counted exactly against the cache,
rerank pairs are an upper bound (the pool's members are known only after
retrieval), and units the store already holds cost nothing. Local models cost
$0 but their calls are listed, since they cost time: each stage's wall time is
estimated from its model's throughput measured on this machine
(:mod:`evalkit.pipeline.calibrate`; measured once, then cached).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from evalkit.cost.model import TokenUsage, call_cost
from evalkit.cost.prices import model_price_or_none
from evalkit.cost.tokens import estimate_tokens
from evalkit.pipeline.calibrate import TextRate, TokenRate, embedder_rate, reranker_rate
from evalkit.pipeline.plan import SweepPlan
from evalkit.pipeline.work import UnitOfWork, WorkContext, chunk_stage
from evalkit.records import EXTERNAL_CHUNKING, Chunk, Question
from evalkit.retrieval.external.calls import NAMESPACE as EXTERNAL_NAMESPACE
from evalkit.retrieval.external.calls import query_key, where_of
from evalkit.retrieval.external.hits import query_record
from evalkit.scoring.clusters import DOCUMENT, QUESTION, question_clusters, unit_words
from evalkit.scoring.stats import paired_binary_mde
from evalkit.scoring.stats.cluster_intervals import planning_design_effect


@dataclass(frozen=True)
class PlannedCalls:
    """Calls one backend will receive in a sweep."""

    backend: str
    what: str
    calls: int
    tokens: int
    usd: float
    note: str = ""
    stage: str = ""
    """``embed`` or ``rerank``: which measured throughput times it."""
    items: int = 0
    """Texts to embed, or (query, chunk) pairs to score (an upper bound)."""
    chars: int = 0
    """Characters of those texts (of the pairs' chunks)."""
    seconds: float | None = None
    """Estimated wall time on this machine from the measured throughput; None: not measured (a paid API)."""


def plan_calls(units: Sequence[UnitOfWork], ctx: WorkContext) -> list[PlannedCalls]:
    """Embedding and rerank calls of the retrieval sweep's unfinished units, with tokens and dollars."""
    todo = [u for u in units if not ctx.store.has("score", u.ids.score)]
    planned: list[PlannedCalls] = []
    embedder, reranker = ctx.embedder, ctx.reranker
    if embedder is not None:
        texts: dict[str, str] = {}
        for unit in (u for u in todo if not ctx.store.has("retrieve", u.ids.retrieve)):
            for chunk in chunk_stage(unit, ctx):
                texts[embedder.key(chunk.embed_text, "passage")] = chunk.embed_text
            for question in ctx.questions:
                texts[embedder.key(question.question, "query")] = question.question
        cached = ctx.cache.get_many(f"embed:{embedder.identity}", list(texts))
        missing = [text for key, text in texts.items() if key not in cached]
        planned.append(
            PlannedCalls(
                backend=embedder.identity,
                what="embed (local model, $0)",
                calls=math.ceil(len(missing) / embedder.batch_size),
                tokens=sum(estimate_tokens(t, ctx.token_family) for t in missing),
                usd=0.0,
                note=f"{len(missing)} texts to embed, {len(texts) - len(missing)} cached",
                stage="embed",
                items=len(missing),
                chars=sum(map(len, missing)),
            )
        )
    if any(u.spec.chunker == EXTERNAL_CHUNKING and not ctx.store.has("retrieve", u.ids.retrieve) for u in todo):
        planned.append(external_calls(ctx))
    if reranker is not None:
        reranking = [u for u in todo if not ctx.store.has("rerank", u.ids.rerank)]
        n, pool = len(reranking) * len(ctx.questions), ctx.plan.pool_size
        lengths = [len(c.text) for unit in reranking for c in free_chunks(unit, ctx)]
        mean_chars = sum(lengths) / len(lengths) if lengths else 0.0
        planned.append(
            PlannedCalls(
                backend=reranker.identity,
                what="rerank",
                calls=n * math.ceil(pool / reranker.max_documents_per_request),
                tokens=0,
                usd=n * reranker.request_cost_usd(pool),
                note=f"at most {n * pool} (query, chunk) pairs; cached pairs are not sent",
                stage="rerank",
                items=n * pool,
                chars=round(n * pool * mean_chars),
            )
        )
    return planned


def free_chunks(unit: UnitOfWork, ctx: WorkContext) -> tuple[Chunk, ...]:
    """The unit's chunks where they cost nothing: chunked here, or stored; production's only once asked."""
    if unit.spec.chunker == EXTERNAL_CHUNKING and not ctx.store.has("chunk", unit.ids.chunk):
        return ()  # a dry run never calls production's retriever
    return chunk_stage(unit, ctx)


def external_calls(ctx: WorkContext) -> PlannedCalls:
    """The queries production's retriever will be asked (those its cached replies do not hold)."""
    settings, k = ctx.plan.retriever, ctx.plan.pool_size
    keys = [query_key(settings, k, query_record(q)) for q in ctx.questions]
    missing = len(keys) - len(ctx.cache.get_many(EXTERNAL_NAMESPACE, keys))
    return PlannedCalls(
        backend=where_of(settings),
        what="external retriever (production's own cost, not priced here)",
        calls=math.ceil(missing / settings.batch_size),
        tokens=0,
        usd=0.0,
        note=f"{missing} queries to ask for {k} hits each, {len(keys) - missing} cached",
        items=missing,
    )


def stage_rates(planned: Sequence[PlannedCalls], ctx: WorkContext) -> dict[str, TextRate]:
    """Measured throughput (calibrated now, or cached) of each stage's model that has work and costs nothing.

    A paid reranker is not measured: its time is the network's, and a dry run sends nothing.
    """
    rates: dict[str, TextRate] = {}
    stages = {item.stage for item in planned if item.items > 0}
    if "embed" in stages and ctx.embedder is not None:
        rates["embed"] = embedder_rate(ctx.embedder, ctx.cache)
    reranker = ctx.reranker
    if "rerank" in stages and reranker is not None and reranker.request_cost_usd(ctx.plan.pool_size) == 0:
        rates["rerank"] = reranker_rate(reranker, ctx.cache)
    return rates


def with_times(planned: Sequence[PlannedCalls], rates: Mapping[str, TextRate]) -> list[PlannedCalls]:
    """Each stage's estimated wall time from the throughput measured for it (``rates`` by stage)."""
    timed = []
    for item in planned:
        rate = rates.get(item.stage)
        if item.items == 0:
            timed.append(replace(item, seconds=0.0))
        else:
            timed.append(item if rate is None else replace(item, seconds=rate.seconds(item.items, item.chars)))
    return timed


def position_estimate(plan: SweepPlan, record: Mapping[str, Any], rate: TokenRate) -> str:
    """The position experiment's time at the generator's measured speed, beside the planning-speed estimate."""
    assert plan.position is not None
    prompt = int(record.get("prompt_tokens", 0))
    output = int(record.get("distinct_requests", 0)) * plan.position.expected_output_tokens
    return (
        f"  ≈ {minutes(rate.seconds(prompt, output)).lstrip('~')} measured on this machine: "
        f"{rate.prompt_tokens_per_s:,.0f} prompt tok/s and {rate.output_tokens_per_s:,.1f} output tok/s "
        f"at {rate.threads} threads ({rate.identity}) [{rate.source}], before cache hits"
    )


DISCORDANCES = (0.05, 0.1, 0.2)
"""Shares of questions whose hit differs between two configs, at which the dry run states the gate's reach."""
PLANNING_RHO = 0.2
"""Intra-cluster correlation of the paired recall difference the dry run plans with: the upper end of what the
shared sets showed (their document-clustered intervals were 1.26-1.49x the question-level ones: rho 0.09-0.2)."""


def detectable_line(questions: Sequence[Question], cluster_by: str = DOCUMENT) -> str:
    """The smallest recall difference the gate shows at 80% power on this set (exact McNemar, alpha 0.05), before
    a sweep is paid for; per discordance, since no pilot has measured it yet.

    The gate resamples clusters (``stats.cluster_by``: the question's source document by default), so the size
    is the set's effective one: answerable questions over Kish's design effect ``1 + (m_w - 1) rho`` from the
    set's own cluster sizes at :data:`PLANNING_RHO`; the line also states the reach if questions were
    independent and if every cluster moved as one (``rho = 1``: the cluster count's bound).
    """
    answerable = [q for q in questions if q.answerable]
    n = len(answerable)
    sizes = question_clusters(answerable, cluster_by)["cluster"].value_counts().to_numpy()
    effect = planning_design_effect(sizes, PLANNING_RHO) if n else 1.0
    worst = planning_design_effect(sizes, 1.0) if n else 1.0

    def reach(size: float, psi: float) -> float | None:
        return paired_binary_mde(int(size), psi) if size >= 2 else None

    def words(value: float | None) -> str:
        return f"{100 * value:.1f} points" if value else "none"

    parts = [f"{words(reach(n / effect, psi))} when {psi:.0%} of questions differ" for psi in DISCORDANCES]
    middle = DISCORDANCES[1]
    if cluster_by == QUESTION:
        return (
            f"evalkit dry run: {n} answerable questions: the smallest recall difference the gate can show at 80% "
            f"power is {'; '.join(parts)} (exact McNemar; stats.cluster_by=question: questions as the unit)"
        )
    unit = unit_words(cluster_by).removeprefix("by ")
    return (
        f"evalkit dry run: {n} answerable questions in {len(sizes)} clusters ({unit}): the smallest recall "
        f"difference the gate can show at 80% power is {'; '.join(parts)} (exact McNemar at {n / effect:.0f} "
        f"effective questions: design effect {effect:.2f} from these cluster sizes at an intra-cluster correlation "
        f"of {PLANNING_RHO}; at {middle:.0%} differing, {words(reach(n, middle))} if questions were independent, "
        f"{words(reach(n / worst, middle))} if every cluster moved as one)"
    )


def answer_check_estimate(plan: SweepPlan, n_questions: int, rate: TokenRate | None) -> str:
    """The answer check's upper bound before anything is sent: answers, prompt tokens (local estimate, at
    production's top_k of chunk_size-character chunks), dollars when the generator is priced, and time at
    the local generator's measured speed (a remote endpoint's turnaround is its own: not estimated here)."""
    check, baseline = plan.answer_check, plan.baseline
    questions = min(n_questions, check.pilot_questions if check.preset == "powered" else check.questions)
    answers = questions * check.max_configs + (questions if check.stuff else 0)
    chunk_chars = (baseline.chunk_size or max(c.chunk_size for c in plan.chunkings) or 512) * (baseline.top_k or 5)
    prompt = answers * (plan.cost.system_tokens + 30 + chunk_chars // 4)
    output = answers * check.max_tokens
    price = None if plan.generator is None else model_price_or_none(str(plan.generator.model), plan.pricing_dir)
    dollars = "" if price is None else f", ${call_cost(TokenUsage(prompt, output, estimated=True), price).usd:.2f}"
    timing = (
        f", {minutes(rate.seconds(prompt, output)).lstrip('~')} at this machine's measured speed"
        if rate is not None
        else ", time: the endpoint's (not estimated from this machine)"
    )
    powered = (
        " (the pilot; powered grows it to the size the pilot's discordance needs)" if check.preset == "powered" else ""
    )
    return (
        f"evalkit dry run: answer check ({check.preset}): at most {answers} answers ({check.max_configs} configs x "
        f"{questions} questions{' + stuffed' if check.stuff else ''}){powered}, ~{prompt:,} prompt tokens "
        f"(est.){dollars}{timing}, before cache hits"
    )


def minutes(seconds: float | None) -> str:
    """``~3.2 min``; ``<0.1 min`` for work too short to matter; blank when not estimated."""
    if seconds is None:
        return ""
    return "<0.1 min" if seconds < 6 else f"~{seconds / 60:.1f} min"


def describe_calls(planned: Sequence[PlannedCalls], finished_units: int = 0) -> str:
    """The dry-run table printed before any paid call, with each stage's estimated wall time."""
    lines = [
        "evalkit dry run: nothing below has been sent"
        + (f" ({finished_units} finished units of work are reused and cost nothing)" if finished_units else ""),
        f"{'backend':34} {'what':28} {'calls':>8} {'tokens (est.)':>14} {'dollars':>10} {'time (est.)':>11}  note",
    ]
    for item in planned:
        lines.append(
            f"{item.backend:34} {item.what:28} {item.calls:8d} {item.tokens:14d} {item.usd:10.4f} "
            f"{minutes(item.seconds):>11}  {item.note}"
        )
    total = sum(item.usd for item in planned)
    known = [i.seconds for i in planned if i.seconds is not None]
    lines.append(
        f"{'total':34} {'':28} {sum(i.calls for i in planned):8d} {'':14} {total:10.4f} "
        f"{minutes(sum(known) if known else None):>11}  (token counts and times are estimates)"
    )
    return "\n".join(lines)
