"""Carry out a plan: the retrieval sweep, the position experiment after it, or the dry run of both.

The driver owns the cache and the unit store; units of work go through an
executor. Errors a user can fix propagate as their own types for the entry
point to print as one line.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from evalkit.answers.position.experiment import choose_chunking, position_experiment, write_status
from evalkit.answers.position.notes import sweep_command
from evalkit.cache import Cache
from evalkit.cost.budget import SpendGuard
from evalkit.labels.read import LabelSet
from evalkit.pipeline.auto import resolve_auto_thresholds
from evalkit.pipeline.calibrate import calibrates, describe_rates, generator_rate
from evalkit.pipeline.counters import RunStats
from evalkit.pipeline.dryrun import (
    answer_check_estimate,
    describe_calls,
    detectable_line,
    plan_calls,
    position_estimate,
    stage_rates,
    with_times,
)
from evalkit.pipeline.errors import CALL_ERRORS, NotStarted
from evalkit.pipeline.executor import Executor, LocalExecutor, make_executor
from evalkit.pipeline.plan import SweepPlan
from evalkit.pipeline.sweep import run_sweep, scoped_questions, token_family, unit_store
from evalkit.pipeline.work import WorkContext, plan_units
from evalkit.retrieval.embedding.base import Embedder
from evalkit.retrieval.embedding.registry import make_embedder
from evalkit.retrieval.rerank.base import Reranker
from evalkit.retrieval.rerank.factory import make_reranker
from evalkit.run import files
from evalkit.run.disk import probe_file, probe_folder
from evalkit.run.files import POSITION_DIR
from evalkit.run.folder import mark_complete, read_json
from evalkit.run.lock import run_lock
from evalkit.scoring.aggregate import collapsed, collapsed_line

T = TypeVar("T")


def check_paths(plan: SweepPlan) -> None:
    """reports_dir and cache_path take files (a probe written and removed): an UnwritableError (one line) if not;
    a ``production_log`` that cannot be read is a ConfigError (one line)."""
    probe_folder(plan.options.reports_dir, "reports_dir")
    if str(plan.options.cache_path) != ":memory:":
        probe_file(plan.options.cache_path, "cache_path")
    if plan.options.production_log is not None:  # an unreadable log stops before the sweep, not after it
        from evalkit.pipeline.production_log import read_production_log

        read_production_log(plan.options.production_log)


def position_failure(run_dir: Path) -> str | None:
    """Why the run's position experiment failed (position/status.json), or None when it did not."""
    path = run_dir / files.POSITION_STATUS
    status = read_json(path) if path.is_file() else {}
    if status.get("state") != "failed":
        return None
    why, command = status.get("why"), status.get("command")
    return f"the position experiment failed ({why}); its status is in {path}; rerun: {command}"


def run_dir_of(plan: SweepPlan, labelset: LabelSet) -> Path:
    run_id = plan.options.run_id or f"{labelset.name}-{plan.fingerprint(labelset.fingerprint)}"
    return plan.options.reports_dir / run_id


def execute(
    plan: SweepPlan,
    labelset: LabelSet,
    config_record: dict[str, Any],
    executor: Executor | None = None,
) -> Path:
    """Run (or resume, or dry-run) the plan; returns the run folder.

    A backend that fails while being built (a missing model file or key, a plugin's factory) is
    :class:`NotStarted`: nothing ran, so its line carries no resume hint.
    """
    executor, embedder = _before_work(lambda: _backends(plan, executor))
    # One cache, one reranker and one work context per run: threshold=auto reads the first chunking's
    # pool through the same ones the sweep then uses (only the plan's threshold grid changes).
    with Cache(plan.options.cache_path) as cache:
        reranker = _before_work(lambda: make_reranker(plan.reranker, cache, plan.pricing_dir))
        ctx = work_context(plan, labelset, embedder, reranker, cache)
        if plan.thresholds_auto:
            plan = resolve_auto_thresholds(plan, ctx, embedder.identity)
            ctx = replace(ctx, plan=plan)
        run_dir = run_dir_of(plan, labelset)
        print(
            f"evalkit: run {run_dir.name}: {len(labelset.questions)} questions, {len(labelset.documents)} documents, "
            f"{len(plan.chunkings)} chunkings x {len(plan.top_ks)} top_k x {len(plan.thresholds)} thresholds "
            f"= {plan.grid_points} grid points -> {run_dir}",
            file=sys.stderr,
        )
        with run_lock(run_dir):
            if plan.options.dry_run:
                dry_run(ctx, embedder, run_dir, executor)
                return run_dir
            # The spend ledger lives in the run folder, known once the plan (and so its run id) is final; what
            # threshold=auto paid for before that (the first chunking's embeddings) is carried into it.
            ctx.stats.spend = ctx.stats.spend.into_ledger(run_dir / files.SPEND_JSON)
            summary = run_sweep(ctx, embedder, run_dir, executor, config_record)
            print(f"evalkit: wrote {len(summary)} configs to {run_dir}/summary.csv", file=sys.stderr)
            same = collapsed_line(collapsed(summary), len(summary))
            if same is not None:
                print(f"evalkit: {same}", file=sys.stderr)
            run_position_part(plan, labelset, cache, run_dir, ctx.stats)
            mark_complete(run_dir)  # until here a reader sees a run that is still being written
            write_review_of(run_dir)
    return run_dir


def _backends(plan: SweepPlan, executor: Executor | None) -> tuple[Executor, Embedder]:
    executor = executor or make_executor(plan.options.executor)  # first: a missing extra stops before anything
    ready = getattr(executor, "ready", None)  # an executor plugin may have no check of its own
    if ready is not None and not plan.options.dry_run:
        ready()  # a cluster that cannot be reached stops before the run folder is announced
    return executor, make_embedder(plan.embedder_config, plan.pricing_dir)


def _before_work(build: Callable[[], T]) -> T:
    try:
        return build()
    except CALL_ERRORS as exc:
        raise NotStarted(str(exc)) from None


def write_review_of(run_dir: Path) -> None:
    """review.json: the report's intervals, comparisons, MDE and advice, computed once from the finished folder."""
    from evalkit.review import write_review  # imported when a run finishes: --help and config errors stay fast
    from evalkit.review.items import item_line
    from evalkit.run.review import read_review

    write_review(run_dir)
    review = read_review(run_dir)
    logged = review.production_log if review is not None else None
    if logged is not None and logged.gap_line() is not None:
        print(f"evalkit: {logged.gap_line()}", file=sys.stderr)
    # Here, not with the report: review.json is written with or without report=true, and so is its line.
    line = item_line(review.items) if review is not None else None
    if line is not None:
        print(f"evalkit: {line}", file=sys.stderr)


def run_position_part(plan: SweepPlan, labelset: LabelSet, cache: Cache, run_dir: Path, stats: RunStats) -> None:
    """The position experiment after the sweep; when it is off or a model call fails, position/status.json says so.

    A failed experiment keeps the sweep's results and report, and the same command resumes it (answers
    already generated are cached); the entry point then exits non-zero (:func:`position_failure`).
    """
    out_dir = run_dir / POSITION_DIR
    if plan.position is None:
        write_status(out_dir, "off", "position=off: this sweep ran retrieval only", sweep_command("default"))
        return
    try:
        out = position_experiment(plan.position_job(), labelset, cache, run_dir, spend=stats.spend)
    except CALL_ERRORS as exc:
        command = sweep_command(None)
        write_status(out_dir, "failed", f"{type(exc).__name__}: {exc}", command)  # the sweep exits non-zero on it
        return
    print(f"evalkit: position experiment -> {out}", file=sys.stderr)


def work_context(
    plan: SweepPlan, labelset: LabelSet, embedder: Embedder, reranker: Reranker | None, cache: Cache
) -> WorkContext:
    return WorkContext(
        plan=plan,
        labelset=labelset,
        questions=scoped_questions(plan, labelset),
        embedder=embedder if plan.uses_embedder else None,
        reranker=reranker,
        cache=cache,
        store=unit_store(plan),
        stats=RunStats(spend=SpendGuard(plan.options.budget_usd)),
        token_family=token_family(plan),
        progress=plan.options.progress,
    )


def dry_run(ctx: WorkContext, embedder: Embedder, run_dir: Path, executor: Executor) -> None:
    """Print the planned calls of the sweep and, with ``+experiment=position``, of the experiment.

    Each stage gets an estimated wall time from its model's throughput on this machine
    (measured once by a short calibration, then read from the cache: :mod:`evalkit.pipeline.calibrate`).
    """
    plan, labelset, reranker, cache = ctx.plan, ctx.labelset, ctx.reranker, ctx.cache
    units = plan_units(plan, labelset, ctx.questions, embedder.identity, ctx.token_family)
    finished = sum(ctx.store.has("score", u.ids.score) for u in units)
    planned = plan_calls(units, ctx)
    rates = stage_rates(planned, ctx)
    print(describe_calls(with_times(planned, rates), finished))
    for line in describe_rates(list(rates.values())):
        print(line)
    print(detectable_line(ctx.questions, plan.stats.cluster_by))
    if plan.answer_check.enabled and plan.generator is not None:
        from evalkit.answers.generation import make_generator

        local = calibrates(plan.generator.name)
        rate = generator_rate(make_generator(plan.generator), cache) if local else None
        print(answer_check_estimate(plan, len(ctx.questions), rate))
    if plan.position is None:
        return
    if reranker is not None and reranker.request_cost_usd(plan.pool_size) > 0:
        print("evalkit dry run: the position plan needs the reranked pools; run without dry_run to build them")
        return
    # Planning answers needs the ranked pool of the one chunking the experiment reads. Its stages are
    # free (local models, no paid call), so they run; nothing else of the sweep does.
    chunking = choose_chunking(plan.position_job(), [u.spec.key for u in units])
    unit = next(u for u in units if u.spec.key == chunking)
    print(f"evalkit dry run: retrieving chunking {chunking} (free: local stages only) to plan the answers")
    (result,) = LocalExecutor(plan.options.executor).run([unit], ctx)  # never start a cluster to plan
    position_dry_run(plan, labelset, cache, run_dir, {chunking: result.pool})
    if plan.generator is not None and calibrates(plan.generator.name):
        from evalkit.answers.generation import make_generator

        rate = generator_rate(make_generator(plan.generator), cache)
        print(position_estimate(plan, read_json(run_dir / POSITION_DIR / "plan.json"), rate), file=sys.stderr)


def position_dry_run(plan: SweepPlan, labelset: LabelSet, cache: Cache, run_dir: Path, pools: dict[str, Any]) -> None:
    from evalkit.answers.generation import make_generator
    from evalkit.answers.generation.settings import generator_backend

    assert plan.position is not None and plan.generator is not None
    settings = replace(plan.position, dry_run=True)
    overrides: dict[str, Any] = {}
    key_env = generator_backend(plan.generator.name).api_key_env
    if key_env is not None and not os.environ.get(key_env):
        # No key: the client is built for its model and window only and is never called.
        overrides["api_key"] = "dry-run-without-a-key"
        settings = replace(settings, count_with_model=False)
    own_env = getattr(plan.generator, "api_key_env", None)  # an endpoint whose key variable is its own setting
    if key_env is None and own_env and not os.environ.get(own_env):
        overrides["api_key_env"] = None  # no key: nothing is sent in a dry run, the plan needs none
    generator = make_generator(plan.generator, **overrides)
    job = replace(plan.position_job(), settings=settings)
    position_experiment(job, labelset, cache, run_dir, pools=pools, generator=generator)
