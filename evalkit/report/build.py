"""``write_report``: read the run folder (review.json included), render every section, write one index.html.

Computes nothing: a folder without review.json is refused with the command that computes it
(:func:`evalkit.review.write_report`, which the sweep and ``python -m evalkit.report`` call, computes it first).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from evalkit.console import warn
from evalkit.report import webfont
from evalkit.report.fonts import cjk_font, missing_glyphs, missing_glyphs_warning
from evalkit.report.html import page
from evalkit.report.model import ReportModel, ReportOptions, build_model
from evalkit.report.sections import SECTIONS, page_order
from evalkit.run import files
from evalkit.run.progress import steps_bar


def render(model: ReportModel, on_section: Callable[[str], None] | None = None) -> str:
    """The whole HTML document for a computed model; ``on_section(anchor)`` is told as each section starts.

    Warns (one line) when a plot holds characters no font could draw.
    """
    rendered = []
    with missing_glyphs() as undrawn:
        for s in page_order(model):
            if on_section is not None:
                on_section(s.anchor)
            rendered.append((s, s.render(model)))
    message = missing_glyphs_warning(undrawn)
    if message:
        warn(message)
    parts = [part for _, part in rendered if part is not None]
    toc = [(s.anchor, s.label) for s, part in rendered if part is not None]
    title = f"evalkit review — {model.run.run_id}"
    subtitle = (
        f"labelled set {model.run.labelset_name} · {len(model.run.summary)} configs · "
        f"{model.run.results['question_id'].nunique()} questions"
    )
    font_css = webfont.font_face(title + subtitle + "".join(parts), model.font)
    return page(title, subtitle, toc, parts, font_css)


def write_report(
    run_dir: str | Path,
    compare: str | Path | None = None,
    max_questions: int = 50,
    labelset: str | Path | None = None,
    progress: bool = True,
) -> Path:
    """Write ``<run_dir>/index.html`` and return its path.

    ``max_questions``: questions per page of the drill-down (the page holds every question of its filters).
    ``progress``: a bar over reading the run and rendering each section (stderr, on a terminal only).

    Raises:
        RunError: the folder is not a finished run (one-line message).
    """
    options = ReportOptions(
        max_questions=max_questions,
        labelset=Path(labelset) if labelset is not None else None,
        compare=Path(compare) if compare is not None else None,
    )
    # Steps: reading the run, one per section, writing the file.
    with steps_bar(len(SECTIONS) + 2, "report", progress) as shown:
        shown.set_postfix_str("reading the run", refresh=False)
        model = build_model(run_dir, options, cjk_font())  # a folder that is not a finished run: one line
        shown.update(1)

        started: list[str] = []

        def on_section(anchor: str) -> None:  # a section starts: the one before it is done
            shown.update(1 if started else 0)
            started.append(anchor)
            shown.set_postfix_str(anchor)

        html = render(model, on_section)
        shown.update(1)  # the last section
        shown.set_postfix_str("writing", refresh=False)
        target = Path(run_dir) / files.REPORT_HTML
        tmp = target.with_suffix(".html.tmp")
        tmp.write_text(html, encoding="utf-8")
        tmp.replace(target)
        shown.update(1)
    return target
