"""The review report: one self-contained HTML file per run folder.

``write_report(run_dir)`` renders the files of ``reports/<run_id>/`` (review.json's numbers included) and
the labelled set it names; it computes nothing and imports no stage. May import: records, console,
labels, run. :func:`evalkit.review.write_report` computes what a folder lacks, then calls it.
"""

from __future__ import annotations

from evalkit.report.build import write_report
from evalkit.run.folder import RunError

__all__ = ["RunError", "write_report"]
