"""Everything the report shows, computed once from a run folder (pure given the files read)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from evalkit.report import analysis
from evalkit.report.analysis import BaselineComparison, Curve, Statistics, Step
from evalkit.report.compare import RunDelta, compare_runs
from evalkit.report.decision import NO_DECISION_OBJECTIVE, Decision, Objective, read_decision
from evalkit.report.diagnostics import Finding, diagnose
from evalkit.report.drilldown import Views, question_views
from evalkit.report.experiments import (
    PositionSummary,
    calibrated_threshold,
    position_from_rows,
    position_from_summary,
)
from evalkit.report.fonts import FontStatus
from evalkit.report.labels import LabelledSet, read_documents, read_labelset
from evalkit.run.folder import Run, load_pool, load_run, returned_chunks
from evalkit.run.labelset_path import find_labelset
from evalkit.scoring.registry import measure

CURVE_MEASURES = ("recall", "context_precision")


@dataclass(frozen=True)
class ReportOptions:
    """What the reviewer can choose on the command line."""

    statistics: Statistics = field(default_factory=Statistics)
    """Resampling of the report's intervals; the level is the decision's confidence when it states one."""
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
    """recommendation.json, when the sweep wrote one; it decides which config the report centres on."""
    objective: Objective
    """The sweep's objective as recommendation.json states it (recall, no caps, for a run before the file)."""
    statistics: Statistics
    """The resampling behind every interval of the report (level: the decision's confidence)."""
    focus_id: str
    """The config the report centres on: the decision's pick, else production (the decision keeps it, or a run
    before recommendation.json), else the grid's first config. Never chosen by the report."""
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


def _production(run: Run, decision: Decision | None) -> str | None:
    """The production config: the decision's, else the manifest's baseline grid point when it is in the grid."""
    ids = set(run.summary["config_id"])
    if decision is not None and decision.production_id in ids:
        return decision.production_id
    return analysis.resolve_baseline(run.summary, run.baseline_point())


def focus_and_production(run: Run) -> tuple[str, str | None]:
    """The configs the report follows (its focus and production), read as the report reads them.

    One home for the choice, so ``python -m evalkit.report --compare`` on the terminal names the same configs,
    and so the same flipped questions, as the page (an external retriever's production is the decision's, not
    a grid point of the manifest's baseline).
    """
    decision = read_decision(run.recommendation)
    production_id = _production(run, decision)
    return _focus(run, decision, production_id), production_id


def _focus(run: Run, decision: Decision | None, production_id: str | None) -> str:
    """The decision's focus config; without a decision, production, else the grid's first config."""
    if decision is not None and decision.focus_id in set(run.summary["config_id"]):
        return str(decision.focus_id)
    return production_id if production_id is not None else str(run.summary["config_id"].iloc[0])


def _k_curves(
    run: Run, chunking: str, threshold: float, statistics: Statistics
) -> tuple[dict[str, tuple[Step, ...]], dict[str, tuple[Curve, ...]]]:
    """Steps along top_k for the recommended chunking, and one curve per chunking (CIs on the recommended one)."""
    k_steps = {
        name: analysis.steps(run.results, run.summary, measure(name), chunking, "top_k", threshold, statistics)
        for name in CURVE_MEASURES
    }
    chunkings = list(dict.fromkeys(run.summary["chunking"]))
    k_curves = {
        name: tuple(
            analysis.curve(
                run.results, run.summary, measure(name), c, "top_k", threshold, statistics, with_ci=c == chunking
            )
            for c in chunkings
        )
        for name in CURVE_MEASURES
    }
    return k_steps, k_curves


def _zero_curves(run: Run, chunking: str, top_k: int, statistics: Statistics) -> tuple[Curve, Curve]:
    """Zero-hit on answerable, then unanswerable, questions against the threshold."""
    return (
        analysis.curve(
            run.results, run.summary, measure("zero_hit_answerable"), chunking, "threshold", top_k, statistics, True
        ),
        analysis.curve(
            run.results, run.summary, measure("zero_hit_unanswerable"), chunking, "threshold", top_k, statistics, True
        ),
    )


def _position(run: Run, statistics: Statistics) -> PositionSummary | None:
    """The experiment's own summary when it wrote one, else computed from its rows."""
    position = None
    if run.position_summary is not None:
        position = position_from_summary(run.position_summary, statistics.level)
    if position is None and run.position_rows is not None:
        position = position_from_rows(run.position_rows, statistics.level, statistics.n_resamples, statistics.seed)
    return position


def build_model(run_dir: str | Path, options: ReportOptions, font: FontStatus) -> ReportModel:
    """Read the run (and the earlier one, and the labelled set) and compute every section's numbers."""
    run = load_run(run_dir)
    decision = read_decision(run.recommendation)
    objective = decision.objective if decision is not None else NO_DECISION_OBJECTIVE
    statistics = replace(options.statistics, level=objective.confidence or options.statistics.level)
    baseline_id = _production(run, decision)
    focus_id = _focus(run, decision, baseline_id)
    rec_row = run.config_row(focus_id)
    metric = objective.primary
    comparison = None
    if baseline_id is not None:
        comparison = analysis.compare_with_baseline(run.results, run.summary, focus_id, baseline_id, metric, statistics)
    chunking, k, t = str(rec_row["chunking"]), int(rec_row["top_k"]), float(rec_row["threshold"])
    k_steps, k_curves = _k_curves(run, chunking, t, statistics)
    plateaus = {name: analysis.plateau(s) for name, s in k_steps.items()}
    zero_curves = _zero_curves(run, chunking, k, statistics)
    calibrated = calibrated_threshold(run.calibration, chunking)
    position = _position(run, statistics)
    objective_steps = k_steps.get(metric) or analysis.steps(
        run.results, run.summary, measure(metric), chunking, "top_k", t, statistics
    )
    findings = diagnose(
        run.results, run.summary, run.chunkings, rec_row, objective, statistics, objective_steps, calibrated,
        position, calibration=run.calibration, manifest=run.manifest,
        moves=decision.moves if decision is not None else (),
    )  # fmt: skip
    run_delta = None
    if options.compare is not None:
        earlier = load_run(options.compare)
        run_delta = compare_runs(run, earlier, [c for c in (focus_id, baseline_id) if c])
    root = find_labelset(run.manifest, run.root, options.labelset)
    labelset = read_labelset(root) if root is not None else None
    focus_label = "production" if focus_id == baseline_id else "first config"  # no decision, no production
    if decision is not None and decision.recommended is not None and decision.recommended.config_id == focus_id:
        focus_label = "recommended"
    drill = _drilldown(run, (focus_label, focus_id), baseline_id, labelset, options)
    return ReportModel(
        run,
        options,
        font,
        decision,
        objective,
        statistics,
        focus_id,
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
