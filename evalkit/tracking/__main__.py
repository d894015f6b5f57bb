"""``python -m evalkit.tracking reports/<run_id> [--uri URI] [--experiment NAME]``: log a finished run to MLflow.

The sweep does this itself with ``+tracker=mlflow``; this logs a run made without it, or again.
Exit codes: 0 logged, 2 bad input or the tracker refused (one line on stderr).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from evalkit.run import files
from evalkit.settings import ConfigError, parse_settings
from evalkit.tracking.mlflow_log import TrackingError, check_ready, log_run
from evalkit.tracking.settings import TrackerSettings


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evalkit.tracking", description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", help="a finished run folder, reports/<run_id>")
    parser.add_argument("--uri", help="tracking URI (default: sqlite:///<run folder's parent>/mlflow.db)")
    parser.add_argument("--experiment", default="evalkit")
    parser.add_argument("--no-per-config", action="store_true", help="log the sweep's run only, no nested runs")
    args = parser.parse_args(argv)
    run_dir = Path(args.run_dir)
    if not (run_dir / files.SUMMARY).is_file():
        print(f"evalkit.tracking: error: {run_dir}: not a finished run folder (no {files.SUMMARY})", file=sys.stderr)
        return 2
    raw = {"name": "mlflow", "uri": args.uri, "experiment": args.experiment, "per_config": not args.no_per_config}
    try:  # the same strict reader as +tracker=mlflow: --experiment "" is refused, not logged under ""
        settings = parse_settings(TrackerSettings, raw, "tracker")
    except ConfigError as exc:
        print(f"evalkit.tracking: error: {exc}", file=sys.stderr)
        return 2
    try:
        check_ready(settings, run_dir.parent)
        logged = log_run(run_dir, settings, run_dir.parent)
    except TrackingError as exc:
        print(f"evalkit.tracking: error: {exc}", file=sys.stderr)
        return 2
    where = f"{logged.run_id} ({logged.child_runs} configs) to {logged.uri}"
    print(f"evalkit.tracking: logged MLflow run {where}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
