"""The report's numbers, computed once from a finished run folder and written beside it.

Every interval, paired comparison, minimum detectable effect, plateau and piece of advice the report
shows is computed here (from :mod:`evalkit.scoring`) and written as review.json (the schema:
:mod:`evalkit.run.review`); a run-over-run comparison of two folders is written as
``compare/<earlier>.json`` (:mod:`evalkit.run.comparison`). The report (:mod:`evalkit.report`) renders
those files and computes nothing. :func:`write_report` is the front door the sweep and
``python -m evalkit.report`` use: compute what the folder lacks, then render.
"""

from __future__ import annotations

from pathlib import Path

from evalkit.review.build import compute_review, ensure_review, write_review
from evalkit.run.comparison import RunDelta
from evalkit.run.review import Statistics

__all__ = [
    "Statistics",
    "compare_folders",
    "compute_review",
    "ensure_review",
    "items_line",
    "write_report",
    "write_review",
]


def items_line(run_dir: str | Path) -> str | None:
    """The console's line about the item analysis of review.json (None without one)."""
    from evalkit.review.items import item_line
    from evalkit.run.review import read_review

    review = read_review(Path(run_dir))
    return item_line(review.items) if review is not None else None


def compare_folders(run_dir: str | Path, earlier_dir: str | Path) -> RunDelta:
    """Compare ``run_dir`` with an earlier run folder and write ``compare/<earlier>.json`` into ``run_dir``.

    The configs followed (focus, production) are review.json's, computed first when the folder lacks it.

    Raises:
        RunError: either folder is not a finished run (one-line message).
    """
    from evalkit.review.compare import compare_runs
    from evalkit.run.comparison import write_comparison
    from evalkit.run.folder import load_run
    from evalkit.run.review import read_review

    ensure_review(run_dir)
    review = read_review(Path(run_dir))
    assert review is not None  # ensure_review wrote it
    now, earlier = load_run(run_dir), load_run(earlier_dir)
    delta = compare_runs(now, earlier, [c for c in (review.focus_id, review.baseline_id) if c])
    write_comparison(now.root, Path(earlier_dir), delta)
    return delta


def write_report(
    run_dir: str | Path,
    compare: str | Path | None = None,
    statistics: Statistics | None = None,
    max_questions: int = 50,
    labelset: str | Path | None = None,
    progress: bool = True,
) -> Path:
    """Compute what the folder lacks (review.json; the comparison with ``compare``), then write index.html.

    ``statistics``: resample with these settings (review.json is computed again when it used others);
    None renders the folder's review.json as it is (computing it with the defaults when absent).

    Raises:
        RunError: the folder (or ``compare``) is not a finished run (one-line message).
    """
    from evalkit.report.build import write_report as render

    ensure_review(run_dir, statistics, labelset)
    if compare is not None:
        compare_folders(run_dir, compare)
    return render(run_dir, compare=compare, max_questions=max_questions, labelset=labelset, progress=progress)
