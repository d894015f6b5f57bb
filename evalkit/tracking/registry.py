"""Log a finished run folder to the configured tracker (``TRACKERS``: evalkit's own names and plugins').

A tracker is ``log(run_dir, settings, reports_dir) -> str | None``: it reads the finished run folder
(never the sweep's memory, so ``python -m evalkit.tracking RUN`` can log a run later) and returns one
line saying where the run went. A failure the user can act on is a ``TrackingError``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from evalkit.plugins import resolve
from evalkit.tracking.settings import TRACKERS, TrackerSettings

TrackerLog = Callable[[Path, TrackerSettings, Path], "str | None"]


def check_tracker(settings: TrackerSettings, reports_dir: Path) -> None:
    """The tracker's own check before the sweep (a built-in's ``ready``); a plugin's checks when it logs."""
    ready = TRACKERS[settings.name].ready if TRACKERS.builtin(settings.name) else None
    if ready is not None:
        resolve(ready)(settings, reports_dir)  # type: ignore[operator]


def log_to_tracker(run_dir: Path, settings: TrackerSettings, reports_dir: Path) -> object:
    """What the tracker's log function returned (a line for the user when it is a non-empty string)."""
    log: TrackerLog = TRACKERS.implementation(settings.name)  # type: ignore[assignment]
    return log(run_dir, settings, reports_dir)
