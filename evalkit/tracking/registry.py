"""The tracker registry: ``+tracker=<name>`` to the function that logs a finished run folder.

A tracker is ``log(run_dir, settings, reports_dir) -> str | None``: it reads the finished run folder
(never the sweep's memory, so ``python -m evalkit.tracking RUN`` can log a run later) and returns one
line saying where the run went. A failure the user can act on is a ``TrackingError``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from evalkit.plugins import Registry
from evalkit.tracking.settings import TrackerSettings

TrackerLog = Callable[[Path, TrackerSettings, Path], "str | None"]


def _mlflow(run_dir: Path, settings: TrackerSettings, reports_dir: Path) -> str:
    from evalkit.tracking.mlflow_log import log_run

    logged = log_run(run_dir, settings, reports_dir)
    return f"logged to MLflow run {logged.run_id} ({logged.child_runs} configs) at {logged.uri}"


TRACKERS: Mapping[str, TrackerLog] = Registry("tracker", {"mlflow": _mlflow})
"""evalkit's own trackers, then installed plugins'."""
