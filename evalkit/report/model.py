"""Everything the report shows, computed once from a run folder (pure given the files read)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from evalkit.report import analysis
from evalkit.report.analysis import BaselineComparison, Curve, Objective, Recommendation, Step
from evalkit.report.compare import RunDelta, compare_runs
from evalkit.report.decision import Decision, read_decision
from evalkit.report.diagnostics import Finding, diagnose
from evalkit.report.drilldown import Views, question_views
from evalkit.report.experiments import (
    PositionSummary,
    calibrated_threshold,
    position_from_rows,
    position_from_summary,
)
from evalkit.report.fonts import FontStatus
from evalkit.report.labels import LabelledSet, find_labelset, read_documents, read_labelset
from evalkit.run.folder import Run, load_pool, load_run, returned_chunks
from evalkit.scoring.registry import MEASURES, measure

CURVE_MEASURES = ("recall", "context_precision")


@dataclass(frozen=True)
class ReportOptions:
    """What the reviewer can choose on the command line."""

    objective: Objective = field(default_factory=Objective)
    max_questions: int = 50
    """Questions per page of the drill-down (every question of its filters is in the page, a page at a time)."""
    labelset: Path | None = None
    """The labelled set folder, when the manifest's path no longer resolves."""
    compare: Path | None = None
    """An earlier run folder to compare with."""


@dataclass(frozen=True)
class Drilldown:
    """Every question of the drill-down's filters, with the rows and chunks of each config shown."""

    views: Views
    configs: tuple[tuple[str, str], ...]
    """(label, config_id) shown per question: the focus config, then production."""
    rows: Mapping[str, pd.DataFrame]
    """config_id -> its result rows for every question, indexed by question_id."""
    chunks: Mapping[str, pd.DataFrame]
    """config_id -> returned chunks of every question."""
    documents: Mapping[str, str]
    page_size: int
    pool_size: int | None
    """Candidates per question in the pool (the manifest's pool_size), for reading gold ranks."""


@dataclass(frozen=True)
class ReportModel:
    """The computed report, ready to render."""

    run: Run
    options: ReportOptions
    font: FontStatus
    decision: Decision | None
    """recommendation.json, when the sweep wrote one; it then decides which config the report centres on."""
    rec: Recommendation
    """The config the report centres on (``rec.config_id``): the decision's pick, or production when the
    decision keeps it; computed by :func:`analysis.recommend` only for a run without recommendation.json."""
    rec_row: Mapping[str, Any]
    baseline_id: str | None
    comparison: BaselineComparison | None
    k_steps: Mapping[str, tuple[Step, ...]]
    plateaus: Mapping[str, float | None]
    k_curves: Mapping[str, tuple[Curve, ...]]
    """measure -> one curve per chunking at the recommended threshold (the recommended one with CIs)."""
    zero_curves: tuple[Curve, Curve]
    """zero-hit on answerable / unanswerable questions against the threshold (recommended chunking and k)."""
    findings: tuple[Finding, ...]
    position: PositionSummary | None
    calibrated: float | None
    run_delta: RunDelta | None
    labelset: LabelledSet | None
    drilldown: Drilldown


def _drilldown(
    run: Run,
    focus: tuple[str, str],
    baseline_id: str | None,
    labelset: LabelledSet | None,
    options: ReportOptions,
) -> Drilldown:
    label, focus_id = focus
    views = question_views(run.results, focus_id, baseline_id, label)
    configs = [(label, focus_id)]
    if baseline_id is not None and baseline_id != focus_id:
        configs.append(("production", baseline_id))
    wanted = list(views.views[0].question_ids)
    rows: dict[str, pd.DataFrame] = {}
    chunks: dict[str, pd.DataFrame] = {}
    for _, config_id in configs:
        row = run.config_row(config_id)
        rows[config_id] = run.results[run.results["config_id"] == config_id].set_index("question_id")
        pool = load_pool(run.root, str(row["chunking"]), wanted)
        chunks[config_id] = returned_chunks(pool, int(row["top_k"]), float(row["threshold"]))
    doc_ids: set[str] = set()
    for frame in chunks.values():
        doc_ids.update(str(d) for d in frame["doc_id"].unique())
    if labelset is not None:
        for qid in wanted:
            question = labelset.questions.get(qid)
            if question is not None:
                doc_ids.update(s.doc_id for s in question.evidence)
    documents = read_documents(labelset, doc_ids) if labelset is not None else {}
    pool_size = (run.manifest.get("config") or {}).get("pool_size")
    return Drilldown(
        views,
        tuple(configs),
        rows,
        chunks,
        documents,
        max(1, options.max_questions),
        int(pool_size) if isinstance(pool_size, int | float) else None,
    )


def _decided(run: Run, decision: Decision, objective: Objective) -> Recommendation | None:
    """The decision's focus config in the shape every section reads (``rec.config_id``, ``rec.objective``).

    The sweep chose it; the counts say how many configs meet the zero-hit cap, as the sweep's
    objective states it. None when the focus config is not in this run's summary.
    """
    focus = decision.focus_id
    if focus is None or focus not in set(run.summary["config_id"]):
        return None
    cap = objective.max_zero_hit_answerable
    within = len(run.summary)
    if cap is not None and "zero_hit_answerable" in run.summary.columns:
        within = int((run.summary["zero_hit_answerable"].fillna(0.0) <= cap + 1e-12).sum())
    return Recommendation(
        config_id=focus,
        leader_id=focus,
        objective=objective,
        n_configs=len(run.summary),
        n_eligible=within,
        n_over_zero_hit_cap=len(run.summary) - within,
        n_over_cost_cap=0,
        caps_relaxed=within == 0,
        ties=((focus, None),),
    )


def _objective(options: ReportOptions, decision: Decision | None) -> Objective:
    """The reviewer's objective, or the sweep's own when recommendation.json states it."""
    objective = options.objective
    if decision is None:
        return objective
    primary = decision.objective.primary if decision.objective.primary in MEASURES else objective.metric
    return replace(
        objective,
        metric=primary,
        max_zero_hit_answerable=decision.objective.zero_hit_answerable_max,
        level=decision.objective.confidence or objective.level,
    )


def _k_curves(
    run: Run, chunking: str, threshold: float, objective: Objective
) -> tuple[dict[str, tuple[Step, ...]], dict[str, tuple[Curve, ...]]]:
    """Steps along top_k for the recommended chunking, and one curve per chunking (CIs on the recommended one)."""
    k_steps = {
        name: analysis.steps(run.results, run.summary, measure(name), chunking, "top_k", threshold, objective)
        for name in CURVE_MEASURES
    }
    chunkings = list(dict.fromkeys(run.summary["chunking"]))
    k_curves = {
        name: tuple(
            analysis.curve(
                run.results, run.summary, measure(name), c, "top_k", threshold, objective, with_ci=c == chunking
            )
            for c in chunkings
        )
        for name in CURVE_MEASURES
    }
    return k_steps, k_curves


def _zero_curves(run: Run, chunking: str, top_k: int, objective: Objective) -> tuple[Curve, Curve]:
    """Zero-hit on answerable, then unanswerable, questions against the threshold."""
    return (
        analysis.curve(
            run.results, run.summary, measure("zero_hit_answerable"), chunking, "threshold", top_k, objective, True
        ),
        analysis.curve(
            run.results, run.summary, measure("zero_hit_unanswerable"), chunking, "threshold", top_k, objective, True
        ),
    )


def _position(run: Run, objective: Objective) -> PositionSummary | None:
    """The experiment's own summary when it wrote one, else computed from its rows."""
    position = None
    if run.position_summary is not None:
        position = position_from_summary(run.position_summary, objective.level)
    if position is None and run.position_rows is not None:
        position = position_from_rows(run.position_rows, objective.level, objective.n_resamples, objective.seed)
    return position


def build_model(run_dir: str | Path, options: ReportOptions, font: FontStatus) -> ReportModel:
    """Read the run (and the earlier one, and the labelled set) and compute every section's numbers."""
    run = load_run(run_dir)
    decision = read_decision(run.recommendation)
    objective = _objective(options, decision)
    decided = _decided(run, decision, objective) if decision is not None else None
    rec = decided or analysis.recommend(run.summary, run.results, objective)
    rec_row = run.config_row(rec.config_id)
    baseline_id = analysis.resolve_baseline(run.summary, run.baseline_point())
    if decision is not None and decision.production_id in set(run.summary["config_id"]):
        baseline_id = decision.production_id
    comparison = None
    if baseline_id is not None:
        comparison = analysis.compare_with_baseline(run.results, run.summary, rec, baseline_id)
    chunking, k, t = str(rec_row["chunking"]), int(rec_row["top_k"]), float(rec_row["threshold"])
    k_steps, k_curves = _k_curves(run, chunking, t, objective)
    plateaus = {name: analysis.plateau(s) for name, s in k_steps.items()}
    zero_curves = _zero_curves(run, chunking, k, objective)
    calibrated = calibrated_threshold(run.calibration, chunking)
    position = _position(run, objective)
    objective_steps = k_steps.get(objective.metric) or analysis.steps(
        run.results, run.summary, measure(objective.metric), chunking, "top_k", t, objective
    )
    findings = diagnose(
        run.results, run.summary, run.chunkings, rec_row, objective, objective_steps, calibrated, position,
        calibration=run.calibration, manifest=run.manifest,
    )  # fmt: skip
    run_delta = None
    if options.compare is not None:
        earlier = load_run(options.compare)
        run_delta = compare_runs(run, earlier, [c for c in (rec.config_id, baseline_id) if c])
    root = find_labelset(run.manifest, run.root, options.labelset)
    labelset = read_labelset(root) if root is not None else None
    focus_label = "production" if decision is not None and decision.keeps_production else "recommended"
    drill = _drilldown(run, (focus_label, rec.config_id), baseline_id, labelset, options)
    return ReportModel(
        run,
        options,
        font,
        decision,
        rec,
        rec_row,
        baseline_id,
        comparison,
        k_steps,
        plateaus,
        k_curves,
        zero_curves,
        findings,
        position,
        calibrated,
        run_delta,
        labelset,
        drill,
    )
