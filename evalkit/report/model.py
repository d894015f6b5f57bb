"""Everything the report shows, read from a run folder (its files, review.json and the labelled set)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from evalkit.report.decision import NO_DECISION_OBJECTIVE, Decision, Objective, read_decision
from evalkit.report.drilldown import Views, question_views
from evalkit.report.experiments import calibrated_threshold
from evalkit.report.fonts import FontStatus
from evalkit.report.labels import LabelledSet, read_documents, read_labelset
from evalkit.run import files
from evalkit.run.comparison import RunDelta, read_comparison
from evalkit.run.folder import Run, RunError, load_pool, load_run, returned_chunks
from evalkit.run.labelset_path import find_labelset
from evalkit.run.review import (
    BaselineComparison,
    Curve,
    Finding,
    PositionSummary,
    Review,
    Statistics,
    Step,
    read_review,
)


@dataclass(frozen=True)
class ReportOptions:
    """What the reviewer can choose on the command line."""

    max_questions: int = 50
    """Questions per page of the drill-down (every question of its filters is in the page, a page at a time)."""
    labelset: Path | None = None
    """The labelled set folder, when the manifest's path no longer resolves."""
    compare: Path | None = None
    """An earlier run folder to compare with (its comparison: compare/<earlier>.json in this folder)."""


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
    """The run as the report renders it: its files and review.json, read, nothing computed."""

    run: Run
    options: ReportOptions
    font: FontStatus
    review: Review
    """review.json: every interval, comparison and finding the page shows (evalkit/review computed it)."""
    decision: Decision | None
    """recommendation.json, when the sweep wrote one; it decides which config the report centres on."""
    objective: Objective
    """The sweep's objective as recommendation.json states it (recall, no caps, for a run before the file)."""
    rec_row: Mapping[str, Any]
    """The focus config's summary row."""
    calibrated: float | None
    run_delta: RunDelta | None
    labelset: LabelledSet | None
    drilldown: Drilldown

    @property
    def statistics(self) -> Statistics:
        """The resampling behind every interval of the page (level: the decision's confidence)."""
        return self.review.statistics

    @property
    def focus_id(self) -> str:
        """The config the report centres on: the decision's pick, else production, else the grid's first config."""
        return self.review.focus_id

    @property
    def baseline_id(self) -> str | None:
        return self.review.baseline_id

    @property
    def comparison(self) -> BaselineComparison | None:
        return self.review.comparison

    @property
    def k_steps(self) -> Mapping[str, tuple[Step, ...]]:
        return self.review.k_steps

    @property
    def plateaus(self) -> Mapping[str, float | None]:
        return self.review.plateaus

    @property
    def k_curves(self) -> Mapping[str, tuple[Curve, ...]]:
        return self.review.k_curves

    @property
    def zero_curves(self) -> tuple[Curve, Curve]:
        return self.review.zero_curves

    @property
    def findings(self) -> tuple[Finding, ...]:
        return self.review.findings

    @property
    def position(self) -> PositionSummary | None:
        return self.review.position


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


def build_model(run_dir: str | Path, options: ReportOptions, font: FontStatus) -> ReportModel:
    """Read the run, its review.json (and the comparison asked for, and the labelled set).

    Raises:
        RunError: not a finished run, or no review.json (``python -m evalkit.report RUN`` computes it).
    """
    run = load_run(run_dir)
    review = read_review(run.root)
    if review is None:
        raise RunError(
            f"{run.root} holds no current {files.REVIEW_JSON} (a run before it, or files changed since): "
            f"python -m evalkit.report {run.root} computes it and writes the report"
        )
    decision = read_decision(run.recommendation)
    objective = decision.objective if decision is not None else NO_DECISION_OBJECTIVE
    focus_id, baseline_id = review.focus_id, review.baseline_id
    rec_row = run.config_row(focus_id)
    calibrated = calibrated_threshold(run.calibration, str(rec_row["chunking"]))
    run_delta = read_comparison(run.root, options.compare) if options.compare is not None else None
    root = find_labelset(run.manifest, run.root, options.labelset)
    labelset = read_labelset(root) if root is not None else None
    focus_label = "production" if focus_id == baseline_id else "first config"  # no decision, no production
    if decision is not None and decision.recommended is not None and decision.recommended.config_id == focus_id:
        focus_label = "recommended"
    drill = _drilldown(run, (focus_label, focus_id), baseline_id, labelset, options)
    return ReportModel(run, options, font, review, decision, objective, rec_row, calibrated, run_delta, labelset, drill)
