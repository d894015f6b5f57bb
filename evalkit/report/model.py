"""Everything the report shows, computed once from a run folder (pure given the files read)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from evalkit.report import analysis
from evalkit.report.analysis import BaselineComparison, Curve, Objective, Recommendation, Step
from evalkit.report.compare import RunDelta, compare_runs
from evalkit.report.data import Run, load_pool, load_run, returned_chunks
from evalkit.report.diagnostics import Finding, diagnose
from evalkit.report.drilldown import Selection, select_questions
from evalkit.report.experiments import (
    PositionSummary,
    calibrated_threshold,
    position_from_rows,
    position_from_summary,
)
from evalkit.report.fonts import FontStatus
from evalkit.report.labels import LabelledSet, find_labelset, read_documents, read_labelset
from evalkit.scoring.registry import measure

CURVE_MEASURES = ("recall", "context_precision")


@dataclass(frozen=True)
class ReportOptions:
    """What the reviewer can choose on the command line."""

    objective: Objective = field(default_factory=Objective)
    max_questions: int = 200
    """Most questions in the drill-down table."""
    labelset: Path | None = None
    """The labelled set folder, when the manifest's path no longer resolves."""
    compare: Path | None = None
    """An earlier run folder to compare with."""


@dataclass(frozen=True)
class Drilldown:
    """The selected questions with the text and chunks to show."""

    selection: Selection
    configs: tuple[tuple[str, str], ...]
    """(label, config_id) shown per question: recommended, then baseline."""
    rows: Mapping[str, pd.DataFrame]
    """config_id -> its result rows for the selected questions, indexed by question_id."""
    chunks: Mapping[str, pd.DataFrame]
    """config_id -> returned chunks of the selected questions."""
    documents: Mapping[str, str]


@dataclass(frozen=True)
class ReportModel:
    """The computed report, ready to render."""

    run: Run
    options: ReportOptions
    font: FontStatus
    rec: Recommendation
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
    run: Run, rec_id: str, baseline_id: str | None, labelset: LabelledSet | None, options: ReportOptions
) -> Drilldown:
    selection = select_questions(run.results, rec_id, baseline_id, options.max_questions, options.objective.seed)
    configs = [("recommended", rec_id)]
    if baseline_id is not None and baseline_id != rec_id:
        configs.append(("baseline", baseline_id))
    wanted = list(selection.question_ids)
    rows: dict[str, pd.DataFrame] = {}
    chunks: dict[str, pd.DataFrame] = {}
    for _, config_id in configs:
        row = run.config_row(config_id)
        selected = run.results[(run.results["config_id"] == config_id) & run.results["question_id"].isin(wanted)]
        rows[config_id] = selected.set_index("question_id")
        pool = load_pool(run.root, str(row["chunking"]), wanted)
        chunks[config_id] = returned_chunks(pool, int(row["top_k"]), float(row["threshold"]))
    doc_ids: set[str] = set()
    for frame in chunks.values():
        doc_ids.update(str(d) for d in frame["doc_id"])
    if labelset is not None:
        for qid in wanted:
            question = labelset.questions.get(qid)
            if question is not None:
                doc_ids.update(s.doc_id for s in question.evidence)
    documents = read_documents(labelset, doc_ids) if labelset is not None else {}
    return Drilldown(selection, tuple(configs), rows, chunks, documents)


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
    objective = options.objective
    rec = analysis.recommend(run.summary, run.results, objective)
    rec_row = run.config_row(rec.config_id)
    baseline_id = analysis.resolve_baseline(run.summary, run.baseline_point())
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
        run.results, run.summary, run.chunkings, rec_row, objective, objective_steps, calibrated, position
    )
    run_delta = None
    if options.compare is not None:
        earlier = load_run(options.compare)
        run_delta = compare_runs(run, earlier, [c for c in (rec.config_id, baseline_id) if c])
    root = find_labelset(run.manifest, run.root, options.labelset)
    labelset = read_labelset(root) if root is not None else None
    drill = _drilldown(run, rec.config_id, baseline_id, labelset, options)
    return ReportModel(
        run,
        options,
        font,
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
