"""review.json from a finished run folder: every number the report shows that is computed, computed once.

:func:`compute_review` is pure given the files read; :func:`write_review` writes its result through
:mod:`evalkit.run.review`; :func:`ensure_review` computes it only when the folder lacks it (an older run)
or when other resampling is asked for. The focus config and production are chosen here, once, as the
decision (recommendation.json) names them, so the page, the comparison and the terminal follow the same two.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from evalkit.report.decision import NO_DECISION_OBJECTIVE, Decision, read_decision
from evalkit.report.labels import LabelledSet, read_labelset
from evalkit.review import analysis
from evalkit.review.advice_gate import GateWord, config_verdict, threshold_verdict
from evalkit.review.diagnostics import diagnose
from evalkit.review.items import items_of
from evalkit.review.position import position_from_rows, position_from_summary
from evalkit.review.production_log import logged_scores
from evalkit.review.synthetic import MEASURES as SYNTHETIC_MEASURES
from evalkit.review.synthetic import synthetic_ids, synthetic_rows
from evalkit.review.threshold_advice import advice_cells
from evalkit.run.clusters import read_clusters
from evalkit.run.folder import Run, load_run
from evalkit.run.labelset_path import find_labelset
from evalkit.run.review import (
    SCHEMA,
    Curve,
    Measure,
    PositionSummary,
    Review,
    Statistics,
    Step,
    inputs_digest,
    read_review,
)
from evalkit.run.review import write_review as write_review_file
from evalkit.scoring.aggregate import collapsed, collapsed_line
from evalkit.scoring.clusters import QUESTION, cluster_map
from evalkit.scoring.compare import Resampling
from evalkit.scoring.registry import COLUMNS, MEASURES, REPORTED, measure
from evalkit.scoring.thresholds import MIN_AUC

CURVE_MEASURES = ("recall", "context_precision")
NAMED_UNITS = {"prompt_tokens": "tokens", "abstention": "proportion", "cost_per_query": "usd", "cost_per_day": "usd"}
"""Units of the quantities recommendation.json names that are not a result column of the registry."""


def unit_of(name: str) -> str:
    """How a named quantity reads: ``proportion``, ``usd``, ``tokens``, ... (``score`` when unknown)."""
    if name in NAMED_UNITS:
        return NAMED_UNITS[name]
    if name in MEASURES:
        m = MEASURES[name]
        return "proportion" if m.proportion else COLUMNS.get(m.column, COLUMNS["n_returned"]).unit
    return COLUMNS[name].unit if name in COLUMNS else "score"


def _measures() -> dict[str, Measure]:
    return {
        name: Measure(name, m.label, unit_of(name), m.proportion, m.higher_is_better) for name, m in MEASURES.items()
    }


def _units() -> dict[str, str]:
    return {name: unit_of(name) for name in (*COLUMNS, *MEASURES, *NAMED_UNITS)}


def _production(run: Run, decision: Decision | None) -> str | None:
    """The production config: the decision's, else the manifest's baseline grid point when it is in the grid."""
    ids = set(run.summary["config_id"])
    if decision is not None and decision.production_id in ids:
        return decision.production_id
    return analysis.resolve_baseline(run.summary, run.baseline_point(), run.external)


def _focus(run: Run, decision: Decision | None, production_id: str | None) -> str:
    """The decision's focus config; without a decision, production, else the grid's first config."""
    if decision is not None and decision.focus_id in set(run.summary["config_id"]):
        return str(decision.focus_id)
    return production_id if production_id is not None else str(run.summary["config_id"].iloc[0])


def _k_curves(
    run: Run, chunking: str, threshold: float, statistics: Resampling
) -> tuple[dict[str, tuple[Step, ...]], dict[str, tuple[Curve, ...]]]:
    """Steps along top_k for the focus chunking, and one curve per chunking (intervals on the focus one)."""
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


def _zero_curves(run: Run, chunking: str, top_k: int, statistics: Resampling) -> tuple[Curve, Curve]:
    """Zero-hit on answerable, then unanswerable, questions against the threshold."""
    return tuple(  # type: ignore[return-value]
        analysis.curve(run.results, run.summary, measure(name), chunking, "threshold", top_k, statistics, True)
        for name in ("zero_hit_answerable", "zero_hit_unanswerable")
    )


def _position(run: Run, settings: Resampling) -> PositionSummary | None:
    """The experiment's own summary when it wrote one, else computed from its rows."""
    position = None
    if run.position_summary is not None:
        position = position_from_summary(run.position_summary, settings.level)
    if position is None and run.position_rows is not None:
        position = position_from_rows(run.position_rows, settings)
    return position


def _resampling(run: Run, statistics: Statistics) -> tuple[Statistics, Resampling]:
    """The run's clusters (clusters.parquet, the decision's and the gate's) in the review's resampling."""
    frame = read_clusters(run.root)
    cluster_by = QUESTION if frame is None or frame.empty else str(frame["cluster_by"].iloc[0])
    statistics = replace(statistics, cluster_by=cluster_by)
    return statistics, analysis.resampling(statistics, cluster_map(frame))


def _labelled(run: Run, labelset: Path | None) -> LabelledSet | None:
    """The run's labelled set, read once (None when it cannot be found)."""
    root = find_labelset(run.manifest, run.root, labelset)
    return read_labelset(root) if root is not None else None


def compute_review(run: Run, statistics: Statistics | None = None, labelset: Path | None = None) -> Review:
    """Every interval, comparison, MDE and finding the report shows (the level: the decision's confidence)."""
    decision = read_decision(run.recommendation)
    objective = decision.objective if decision is not None else NO_DECISION_OBJECTIVE
    statistics = statistics or Statistics()
    statistics = replace(statistics, level=objective.confidence or statistics.level)
    statistics, settings = _resampling(run, statistics)
    baseline_id = _production(run, decision)
    focus_id = _focus(run, decision, baseline_id)
    rec_row = run.config_row(focus_id)
    metric = objective.primary
    labelled = _labelled(run, labelset)
    comparison = None
    if baseline_id is not None:
        comparison = analysis.compare_with_baseline(run.results, run.summary, focus_id, baseline_id, metric, settings)
    chunking, k, t = str(rec_row["chunking"]), int(rec_row["top_k"]), float(rec_row["threshold"])
    k_steps, k_curves = _k_curves(run, chunking, t, settings)
    position = _position(run, settings)
    objective_steps = k_steps.get(metric) or analysis.steps(
        run.results, run.summary, measure(metric), chunking, "top_k", t, settings
    )
    # One gate for every piece of advice on the page (issue 47): a config is judged once, however many rules name it.
    judge = config_verdict(run.results, run.summary, baseline_id, objective, settings.clusters)

    def table_verdict(chunking_: str, threshold: float) -> GateWord | None:
        """The calibration table's advised threshold of a chunking, judged at the focus config's top_k."""
        focus = {"chunking": chunking_, "top_k": k}
        word = threshold_verdict(run.results, run.summary, baseline_id, focus, objective, settings.clusters, judge)
        return None if word is None else word(threshold)

    findings = diagnose(
        run.results, run.summary, run.chunkings, rec_row, objective, settings, objective_steps, None,
        position, calibration=run.calibration, manifest=run.manifest,
        moves=decision.moves if decision is not None else (),
        gate_verdict=threshold_verdict(run.results, run.summary, baseline_id, rec_row, objective, settings.clusters,
                                       judge),
        config_gate=judge,
    )  # fmt: skip
    return Review(
        schema=SCHEMA,
        inputs=inputs_digest(run.root),
        statistics=statistics,
        focus_id=focus_id,
        baseline_id=baseline_id,
        measures=_measures(),
        units=_units(),
        comparison=comparison,
        k_steps=k_steps,
        plateaus={name: analysis.plateau(s) for name, s in k_steps.items()},
        k_curves=k_curves,
        zero_curves=_zero_curves(run, chunking, k, settings),
        findings=findings,
        position=position,
        synthetic_measures=SYNTHETIC_MEASURES,
        reported=REPORTED,
        synthetic=synthetic_rows(
            run.results, synthetic_ids(labelled.questions) if labelled else set(), focus_id, baseline_id, settings
        ),
        calibration=advice_cells(run.calibration, table_verdict),
        min_auc=MIN_AUC,
        items=items_of(run.results, metric, run.root, labelled, run.position_rows),
        production_log=logged_scores(run, baseline_id, focus_id, statistics),
        collapsed=collapsed(run.summary),
        collapsed_text=collapsed_line(collapsed(run.summary), len(run.summary)) or "",
    )


def write_review(run_dir: str | Path, statistics: Statistics | None = None, labelset: str | Path | None = None) -> Path:
    """Compute review.json for a finished run folder and write it there.

    Raises:
        RunError: the folder is not a finished run (one-line message).
    """
    run = load_run(run_dir)
    review = compute_review(run, statistics, Path(labelset) if labelset is not None else None)
    return write_review_file(run.root, review)


def ensure_review(
    run_dir: str | Path, statistics: Statistics | None = None, labelset: str | Path | None = None
) -> None:
    """Compute review.json when the folder lacks it (a run before it) or ``statistics`` asks for other resampling."""
    existing = read_review(Path(run_dir))
    if existing is not None and (statistics is None or _same(existing.statistics, statistics)):
        return
    write_review(run_dir, statistics, labelset)


def _same(stored: Statistics, asked: Statistics) -> bool:
    """The resampling matches (the level is the decision's confidence, not the caller's)."""
    return stored.n_resamples == asked.n_resamples and stored.seed == asked.seed
