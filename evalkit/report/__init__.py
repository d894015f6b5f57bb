"""The review report: one self-contained HTML file per run folder.

``write_report(run_dir)`` reads only the files of ``reports/<run_id>/`` (and
the labelled set it names) and imports nothing from the sweep pipeline. May import:
records, labels, run; until the one recommender lands, the modules that ``EXCEPTIONS`` in
``tests/test_architecture.py`` lists also import scoring.
"""

from __future__ import annotations

from evalkit.report.analysis import Statistics
from evalkit.report.build import write_report
from evalkit.run.folder import RunError

__all__ = ["RunError", "Statistics", "write_report"]
