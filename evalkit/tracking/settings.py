"""The tracker group (``+tracker=mlflow``), typed; no tracker library is imported here."""

from __future__ import annotations

from dataclasses import dataclass, field

from evalkit.plugins import Choices


@dataclass(frozen=True)
class TrackerSettings:
    """Where a finished sweep is logged (``conf/tracker/<name>.yaml``)."""

    name: str = field(metadata={"choices": Choices("tracker", ("mlflow",))})
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
