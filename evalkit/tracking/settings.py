"""The tracker group (``+tracker=mlflow``), typed; no tracker library is imported here."""

from __future__ import annotations

from dataclasses import dataclass, field

from evalkit.plugins import Choices, Registry


@dataclass(frozen=True)
class TrackerBackend:
    """A built-in tracker as evalkit sees it: where its log function is and what it checks first."""

    target: str
    """``module:function`` of ``log(run_dir, settings, reports_dir) -> str | None`` (the tracker entry-point
    contract): logs a finished run folder, returns one line saying where it went."""
    ready: str | None = None
    """``module:function`` of ``check(settings, reports_dir)``, run before the sweep starts (a long sweep must not
    log to nowhere); None: it checks what it needs when it logs (as a plugin's does)."""


_MLFLOW = "evalkit.tracking.mlflow_log"
TRACKERS: Registry[TrackerBackend] = Registry(
    "tracker", {"mlflow": TrackerBackend(f"{_MLFLOW}:log_line", ready=f"{_MLFLOW}:check_ready")}
)
"""The registration table: the one place a built-in tracker's name is written in code; installed plugins after
evalkit's own (a plugin's entry point is its log function)."""


@dataclass(frozen=True)
class TrackerSettings:
    """Where a finished sweep is logged (``conf/tracker/<name>.yaml``)."""

    name: str = field(metadata={"choices": Choices("tracker", TRACKERS.builtin_names())})
    """The tracker: ``mlflow`` (pip install "evalkit-sweep[tracking]")."""
    uri: str | None = None
    """Tracking URI: ``http://host:5000``, ``sqlite:///path.db``, ...; None: ``sqlite:///<reports_dir>/mlflow.db``."""
    experiment: str = field(default="evalkit", metadata={"allow_empty": False})
    """The MLflow experiment the sweep's run goes into."""
    run_name: str | None = None
    """None: the sweep's run id."""
    per_config: bool = True
    """One nested run per config (its grid point as params, its metrics); False: the sweep's run only."""
    timeout_s: float = field(default=10.0, metadata={"above": 0.0})
    """How long to wait for a tracking server to answer before the sweep starts."""
    verbose: bool = False
    """Let MLflow's own console lines through (its "View run ... at" line per run); off: evalkit prints one line."""
