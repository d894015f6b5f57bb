"""A finished run folder logged to MLflow: one run per sweep, one nested run per config.

The sweep's run carries the sweep's settings as params (labelled set, chunker,
retriever, reranker, embedder, the grid, the production point), the production
and recommended configs' metrics (``production.recall``, ``recommended.recall``,
...), and ``summary.csv``, ``recommendation.json``, ``manifest.json`` and
``index.html`` as artefacts. Each config's nested run has its grid point as params
and every numeric summary column as a metric. Uses ``MlflowClient`` (no global
active run), so logging from a notebook or a multirun does not leak state.
"""

from __future__ import annotations

import importlib.util
import json
import math
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from evalkit.run import files
from evalkit.tracking.settings import TrackerSettings

TRACKING_JSON = "tracking.json"
PARAM_COLUMNS = ("config_id", "chunking", "chunker", "chunk_size", "chunk_overlap", "retriever", "reranker", "top_k",
                 "threshold", "cost_model")  # fmt: skip
ARTEFACTS = (files.SUMMARY_CSV, files.RECOMMENDATION_JSON, files.MANIFEST, files.REPORT_HTML)
_BATCH = 900  # MLflow accepts at most 1,000 metrics per log_batch call


class TrackingError(RuntimeError):
    """The tracker could not be reached or refused the run (one line)."""


@dataclass(frozen=True)
class Logged:
    """Where a sweep went: written to the run folder as tracking.json."""

    uri: str
    experiment_id: str
    run_id: str
    child_runs: int


def tracking_uri(settings: TrackerSettings, reports_dir: Path) -> str:
    """The URI to log to: ``tracker.uri``, else a local SQLite store in the reports folder."""
    if settings.uri:
        return settings.uri
    return f"sqlite:///{(reports_dir / 'mlflow.db').resolve()}"


def check_ready(settings: TrackerSettings, reports_dir: Path) -> None:
    """Before the sweep: MLflow is installed and a tracking server answers (a long sweep must not log to nowhere)."""
    if importlib.util.find_spec("mlflow") is None:
        raise TrackingError("tracker=mlflow needs MLflow: pip install 'evalkit-sweep[tracking]'")
    uri = tracking_uri(settings, reports_dir)
    if uri.startswith(("http://", "https://")):
        try:
            with urllib.request.urlopen(f"{uri.rstrip('/')}/health", timeout=settings.timeout_s) as reply:
                reply.read()
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise TrackingError(f"tracker.uri: no MLflow server answers at {uri} ({reason})") from None


def sweep_params(manifest: Mapping[str, Any]) -> dict[str, str]:
    """The sweep's settings as flat MLflow params (values as short strings)."""
    config = manifest.get("config", {})
    grid = manifest.get("grid", {})
    params = {
        "run_id": manifest.get("run_id"),
        "labelset": manifest.get("labelset", {}).get("name"),
        "labelset_fingerprint": str(manifest.get("labelset", {}).get("fingerprint", ""))[:16],
        "questions": manifest.get("labelset", {}).get("questions"),
        "chunker": (config.get("chunker") or {}).get("name"),
        "retriever": (config.get("retriever") or {}).get("name"),
        "reranker": (config.get("reranker") or {}).get("name"),
        "embedder": (config.get("embedder") or {}).get("name"),
        "chunkings": len(grid.get("chunkings", [])),
        "top_k": grid.get("top_k"),
        "threshold": grid.get("threshold"),
        "grid_points": grid.get("points"),
        "pool_size": config.get("pool_size"),
        "seed": manifest.get("seed"),
        "evalkit": manifest.get("packages", {}).get("evalkit"),
    }
    for key, value in (config.get("baseline") or {}).items():
        params[f"baseline.{key}"] = value
    return {k: _param(v) for k, v in params.items() if v is not None}


def headline_metrics(recommendation: Mapping[str, Any]) -> dict[str, float]:
    """``production.<m>`` and ``recommended.<m>`` from recommendation.json (finite numbers only)."""
    out: dict[str, float] = {}
    for side in ("production", "recommended"):
        values = (recommendation.get(side) or {}).get("values") or {}
        out.update({f"{side}.{k}": float(v) for k, v in values.items() if _finite(v)})
    out["recommends_change"] = float(recommendation.get("recommended") is not None)
    return out


def config_metrics(row: Mapping[str, Any]) -> dict[str, float]:
    return {str(k): float(v) for k, v in row.items() if k not in PARAM_COLUMNS and _finite(v)}


def log_run(run_dir: Path, settings: TrackerSettings, reports_dir: Path) -> Logged:
    """Log a finished run folder; writes tracking.json into it and returns where the run went."""
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    uri = tracking_uri(settings, reports_dir)
    manifest = _json(run_dir / files.MANIFEST)
    has_decision = (run_dir / files.RECOMMENDATION_JSON).is_file()
    recommendation = _json(run_dir / files.RECOMMENDATION_JSON) if has_decision else {}
    summary = pd.read_parquet(run_dir / files.SUMMARY)
    try:
        client = MlflowClient(tracking_uri=uri)
        experiment_id = _experiment(client, settings.experiment, uri, reports_dir)
        name = settings.run_name or str(manifest.get("run_id") or run_dir.name)
        run = client.create_run(experiment_id, run_name=name, tags={"evalkit.run_dir": str(run_dir.resolve())})
        parent = run.info.run_id
        _log(client, parent, sweep_params(manifest), headline_metrics(recommendation))
        for artefact in ARTEFACTS:
            if (run_dir / artefact).is_file():
                client.log_artifact(parent, str(run_dir / artefact))
        children = 0
        if settings.per_config:
            for row in summary.to_dict(orient="records"):
                child = client.create_run(
                    experiment_id, run_name=str(row["config_id"]), tags={"mlflow.parentRunId": parent}
                )
                params = {c: _param(row[c]) for c in PARAM_COLUMNS if c in row}
                _log(client, child.info.run_id, params, config_metrics(row))
                client.set_terminated(child.info.run_id)
                children += 1
        client.set_terminated(parent)
    except MlflowException as exc:
        raise TrackingError(f"tracker: MLflow at {uri} refused the run: {str(exc).splitlines()[0]}") from None
    logged = Logged(uri=uri, experiment_id=experiment_id, run_id=parent, child_runs=children)
    (run_dir / TRACKING_JSON).write_text(json.dumps(logged.__dict__, indent=2) + "\n", encoding="utf-8")
    return logged


def _experiment(client: Any, name: str, uri: str, reports_dir: Path) -> str:
    found = client.get_experiment_by_name(name)
    if found is not None:
        return str(found.experiment_id)
    # A local store keeps its artefacts beside the database, not in ./mlruns of whatever folder one runs in.
    remote = uri.startswith(("http://", "https://"))
    location = None if remote else (reports_dir / "mlflow-artifacts").resolve().as_uri()
    return str(client.create_experiment(name, artifact_location=location))


def _log(client: Any, run_id: str, params: Mapping[str, str], metrics: Mapping[str, float]) -> None:
    from mlflow.entities import Metric, Param

    now = int(time.time() * 1000)
    client.log_batch(run_id, params=[Param(k, v) for k, v in params.items()])
    items = [Metric(k, v, now, 0) for k, v in metrics.items()]
    for batch in _chunks(items, _BATCH):
        client.log_batch(run_id, metrics=batch)


def _chunks(items: list[Any], size: int) -> Iterable[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _param(value: Any) -> str:
    text = json.dumps(value) if isinstance(value, list | dict) else str(value)
    return text[:500]  # MLflow's limit on a param value is 6,000 characters; a grid list stays far below


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(float(value))


def _json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))
