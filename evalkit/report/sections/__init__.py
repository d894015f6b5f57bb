"""The report's sections, one module per section family, and the order the page shows them in.

Each module renders from a computed :class:`~evalkit.report.model.ReportModel`
(text, tables and plots through :mod:`evalkit.report.plots`); none reads a file
or computes a statistic. :data:`SECTIONS` is the one list of what the page holds:
its order is the page's order, and its anchors and labels are the table of contents.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from evalkit.report.html import Markup
from evalkit.report.model import ReportModel
from evalkit.report.sections import (
    about,
    answers,
    calibration,
    checks,
    chunkings,
    configs,
    cost,
    frontier,
    grid,
    items,
    labelset,
    position,
    production_log,
    questions,
    recommendation,
    run_over_run,
    synthetic,
)
from evalkit.run import files


@dataclass(frozen=True)
class Section:
    """One section of the page and its entry in the table of contents."""

    anchor: str
    """The section element's id (the ``#anchor`` the contents link to)."""
    label: str
    """Its short name in the table of contents."""
    render: Callable[[ReportModel], Markup | None]
    """The section's HTML; None leaves it (and its contents entry) out of the page."""


SECTIONS: tuple[Section, ...] = (
    Section("recommendation", "Recommendation", recommendation.recommendation),
    Section("gate", "Gate", checks.gate),
    Section("answers", "Answers", answers.answers),
    Section("configs", "vs baseline", configs.family_table),
    Section("production-log", "Production logs", production_log.production_log),
    Section("frontier", "Frontier", frontier.frontier),
    Section("diagnostics", "Diagnostics", checks.diagnostics),
    Section("grid", "Grid", grid.grid),
    Section("top-k", "top_k", grid.top_k),
    Section("zero-hit", "Zero-hit", grid.zero_hit),
    Section("index", "Index size", chunkings.index_size),
    Section(files.RERANK.key, "Calibration", calibration.calibration),
    Section(files.POSITION.key, "Position", position.position),
    Section(files.COST.key, "Cost", cost.cost),
    Section(files.CHUNK_HEALTH.key, "Chunk health", chunkings.chunk_health),
    Section("compare", "Run over run", run_over_run.run_over_run),
    Section("labelset", "Labelled set", labelset.labelset),
    Section("items", "Item analysis", items.items),
    Section("synthetic", "Synthetic", synthetic.synthetic),
    Section("questions", "Questions", questions.questions),
    Section("run", "About", about.about),
)
"""Every section in page order."""


def page_order(model: ReportModel) -> tuple[Section, ...]:
    """The sections as the page shows them: a run made for a gate (its folder holds gate.json) opens with the
    gate's verdict, so the report a CI job uploads says what the check said before the sweep's recommendation."""
    if model.run.gate is None:
        return SECTIONS
    return tuple(s for s in SECTIONS if s.anchor == "gate") + tuple(s for s in SECTIONS if s.anchor != "gate")


__all__ = ["SECTIONS", "Section", "page_order"]
