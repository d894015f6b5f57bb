"""``write_report``: compute the model, render every section, write one self-contained index.html."""

from __future__ import annotations

from pathlib import Path

from evalkit.report.analysis import Objective
from evalkit.report.fonts import cjk_font
from evalkit.report.html import page
from evalkit.report.model import ReportModel, ReportOptions, build_model
from evalkit.report.sections import SECTIONS
from evalkit.run import files


def render(model: ReportModel) -> str:
    """The whole HTML document for a computed model."""
    rendered = [(s, s.render(model)) for s in SECTIONS]
    parts = [part for _, part in rendered if part is not None]
    toc = [(s.anchor, s.label) for s, part in rendered if part is not None]
    title = f"evalkit review — {model.run.run_id}"
    subtitle = (
        f"labelled set {model.run.labelset_name} · {len(model.run.summary)} configs · "
        f"{model.run.results['question_id'].nunique()} questions"
    )
    return page(title, subtitle, toc, parts)


def write_report(
    run_dir: str | Path,
    compare: str | Path | None = None,
    objective: Objective | None = None,
    max_questions: int = 50,
    labelset: str | Path | None = None,
) -> Path:
    """Write ``<run_dir>/index.html`` and return its path.

    ``max_questions``: questions per page of the drill-down (the page holds every question of its filters).

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
