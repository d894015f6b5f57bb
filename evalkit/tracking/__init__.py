"""Experiment tracking: a finished sweep's run folder logged to a tracker (MLflow).

Reads the run folder only (summary, recommendation, manifest, report), so a run can be
logged again later: ``python -m evalkit.tracking reports/<run_id>``.
"""

from evalkit.tracking.settings import TrackerSettings

__all__ = ["TrackerSettings"]
