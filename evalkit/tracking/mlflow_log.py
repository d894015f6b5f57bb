"""A finished run folder logged to MLflow: one run per sweep, one nested run per config.

The sweep's run carries the sweep's settings as params (labelled set, chunker, retriever, reranker,
embedder, every grid value: chunk sizes, overlaps, top_k, thresholds; the production point), the
decision and the production, recommended and cheaper config ids as tags (``evalkit.decision``, ...:
a team filters its quarterly runs on them), the production and recommended configs' metrics
(``production.recall``, ``recommended.recall``, ...), and the run's files a reviewer opens as
artefacts (:data:`ARTEFACTS`). Each config's nested run has its grid point as params and every numeric
summary column as a metric. Uses ``MlflowClient`` (no global active run), so logging from a notebook or
a multirun does not leak state. MLflow's own console lines ("View run ... at", one per run) are off
unless ``tracker.verbose``.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import math
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from evalkit.http_call import HttpError, request
from evalkit.records import EXTERNAL_CHUNKING
from evalkit.run import files
from evalkit.tracking.settings import TrackerSettings

TRACKING_JSON = "tracking.json"
SUPPRESS_URLS = "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"
CALIBRATION_CSV = Path(files.CALIBRATION_TABLE).with_suffix(".csv").name
PARAM_COLUMNS = ("config_id", "chunking", "chunker", "chunk_size", "chunk_overlap", "retriever", "reranker", "top_k",
                 "threshold", "cost_model")  # fmt: skip
ARTEFACTS = (
    files.REPORT_HTML, files.RECOMMENDATION_JSON, files.REVIEW_JSON, files.SUMMARY_CSV, files.RESULTS, CALIBRATION_CSV,
    files.COSTS_JSON, files.GATE_MD, files.MANIFEST,
)  # fmt: skip
"""Logged when present (gate.md only after ``python -m evalkit.gate``; results.parquet holds every question)."""
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


def log_line(run_dir: Path, settings: TrackerSettings, reports_dir: Path) -> str:
    """``tracker=mlflow``'s log function: the run folder logged, one line saying where."""
    logged = log_run(run_dir, settings, reports_dir)
    return f"logged to MLflow run {logged.run_id} ({logged.child_runs} configs) at {logged.uri}"


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
        try:  # the whole request within timeout_s: a server that accepts and never answers cannot hold the sweep
            reply = request("GET", f"{uri.rstrip('/')}/health", None, timeout_s=settings.timeout_s, max_bytes=1 << 20)
        except HttpError as exc:
            raise TrackingError(f"tracker.uri: no MLflow server answers at {uri} ({exc.reason})") from None
        if not 200 <= reply.status < 300:
            raise TrackingError(f"tracker.uri: no MLflow server answers at {uri} (HTTP {reply.status} on /health)")


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
        "chunk_size": _grid_value(config, grid, "chunk_size"),
        "chunk_overlap": _grid_value(config, grid, "chunk_overlap"),
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


def _grid_value(config: Mapping[str, Any], grid: Mapping[str, Any], key: str) -> Any:
    """A chunking knob as swept; production's own chunking (an external retriever, built in or installed: the
    plan's one chunking is then :data:`EXTERNAL_CHUNKING`) has no value of evalkit's."""
    if grid.get("chunkings") == [EXTERNAL_CHUNKING]:
        return EXTERNAL_CHUNKING
    value = config.get(key)
    return sorted(value) if isinstance(value, list) else value


def decision_tags(recommendation: Mapping[str, Any]) -> dict[str, str]:
    """``evalkit.decision`` and the config ids behind it (absent ones left out)."""
    cheaper = recommendation.get("cheaper_pick") or {}
    ids = {
        "evalkit.decision": recommendation.get("decision"),
        "evalkit.production_config": (recommendation.get("production") or {}).get("config_id"),
        "evalkit.recommended_config": (recommendation.get("recommended") or {}).get("config_id"),
        "evalkit.cheaper_config": cheaper.get("config_id"),
    }
    return {k: str(v)[:5000] for k, v in ids.items() if v}


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
    with _quiet_mlflow(settings.verbose):
        return _log_run(run_dir, settings, reports_dir)


@contextmanager
def _quiet_mlflow(verbose: bool) -> Iterator[None]:
    """MLflow writes "View run ... at" and "View experiment at" to stdout per terminated run (2 lines x configs)."""
    if verbose:
        yield
        return
    previous = os.environ.get(SUPPRESS_URLS)
    os.environ[SUPPRESS_URLS] = "true"
    level = logging.getLogger("mlflow").level
    logging.getLogger("mlflow").setLevel(logging.WARNING)
    try:
        yield
    finally:
        logging.getLogger("mlflow").setLevel(level)
        if previous is None:
            os.environ.pop(SUPPRESS_URLS, None)
        else:
            os.environ[SUPPRESS_URLS] = previous


def _log_run(run_dir: Path, settings: TrackerSettings, reports_dir: Path) -> Logged:
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
        tags = {"evalkit.run_dir": str(run_dir.resolve()), **decision_tags(recommendation)}
        run = client.create_run(experiment_id, run_name=name, tags=tags)
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
