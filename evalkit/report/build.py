"""``write_report``: compute the model, render every section, write one self-contained index.html."""

from __future__ import annotations

from pathlib import Path

from evalkit.report import figures, sections
from evalkit.report.analysis import Objective
from evalkit.report.fonts import cjk_font
from evalkit.report.html import Markup, page
from evalkit.report.model import ReportModel, ReportOptions, build_model
from evalkit.run import files

TOC = (
    ("recommendation", "Recommendation"),
    ("gate", "Gate"),
    ("configs", "vs baseline"),
    ("diagnostics", "Diagnostics"),
    ("grid", "Grid"),
    ("top-k", "top_k"),
    ("zero-hit", "Zero-hit"),
    ("index", "Index size"),
    ("calibration", "Calibration"),
    ("position", "Position"),
    ("cost", "Cost"),
    ("chunk-health", "Chunk health"),
    ("compare", "Run over run"),
    ("labelset", "Labelled set"),
    ("questions", "Questions"),
    ("run", "About"),
)


def render(model: ReportModel) -> str:
    """The whole HTML document for a computed model."""
    parts: list[Markup | None] = [
        sections.recommendation(model),
        sections.gate(model),
        sections.family_table(model),
        sections.diagnostics(model),
        figures.grid(model),
        figures.top_k(model),
        figures.zero_hit(model),
        figures.index_size(model),
        figures.calibration(model),
        figures.position(model),
        figures.cost(model),
        figures.chunk_health(model),
        sections.run_over_run(model),
        figures.labelset(model),
        sections.questions(model),
        sections.about(model),
    ]
    toc = [(anchor, label) for anchor, label in TOC if anchor != "gate" or model.run.gate is not None]
    title = f"evalkit review — {model.run.run_id}"
    subtitle = (
        f"labelled set {model.run.labelset_name} · {len(model.run.summary)} configs · "
        f"{model.run.results['question_id'].nunique()} questions"
    )
    return page(title, subtitle, toc, [p for p in parts if p is not None])


def write_report(
    run_dir: str | Path,
    compare: str | Path | None = None,
    objective: Objective | None = None,
    max_questions: int = 200,
    labelset: str | Path | None = None,
) -> Path:
    """Write ``<run_dir>/index.html`` and return its path.

    Raises:
        RunError: the folder is not a finished run (one-line message).
    """
    options = ReportOptions(
        objective=objective or Objective(),
        max_questions=max_questions,
        labelset=Path(labelset) if labelset is not None else None,
        compare=Path(compare) if compare is not None else None,
    )
    model = build_model(run_dir, options, cjk_font())
    target = Path(run_dir) / files.REPORT_HTML
    tmp = target.with_suffix(".html.tmp")
    tmp.write_text(render(model), encoding="utf-8")
    tmp.replace(target)
    return target
