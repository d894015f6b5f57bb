"""+tracker=mlflow against a real local MLflow store and a real ``mlflow server`` on 127.0.0.1."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

import evalkit

mlflow = pytest.importorskip("mlflow", reason="the tracking extra: pip install -e '.[tracking]'")
from mlflow.tracking import MlflowClient  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def sweep_args(labelset: Path, reports: Path) -> list[str]:
    return [f"labelset.path={labelset}", f"reports_dir={reports}", "sweep=quick", "top_k=[3,5]", "position=off",
        "answer_check=off",
            "progress=false", "report=false"]  # fmt: skip


def check_logged(client: MlflowClient, run_dir: Path, experiment: str = "evalkit") -> None:
    logged = json.loads((run_dir / "tracking.json").read_text(encoding="utf-8"))
    summary = pd.read_parquet(run_dir / "summary.parquet")
    parent = client.get_run(logged["run_id"])
    assert client.get_experiment(parent.info.experiment_id).name == experiment
    assert parent.info.run_name == run_dir.name and parent.info.status == "FINISHED"
    assert parent.data.params["labelset"] == json.loads((run_dir / "manifest.json").read_text())["labelset"]["name"]
    assert parent.data.params["top_k"] == "[3, 5]" and parent.data.params["baseline.top_k"] == "5"
    assert parent.data.metrics["production.recall"] == pytest.approx(
        json.loads((run_dir / "recommendation.json").read_text())["production"]["values"]["recall"]
    )
    manifest = json.loads((run_dir / "manifest.json").read_text())
    swept = manifest["config"]
    assert parent.data.params["chunk_size"] == json.dumps(sorted(swept["chunk_size"]))
    assert parent.data.params["chunk_overlap"] == json.dumps(sorted(swept["chunk_overlap"]))
    assert parent.data.params["threshold"] == json.dumps(manifest["grid"]["threshold"])
    assert {parent.data.params[k] for k in ("retriever", "reranker", "embedder")} == {"bm25", "none", "e5"}
    decision = json.loads((run_dir / "recommendation.json").read_text())
    assert parent.data.tags["evalkit.decision"] == decision["decision"]
    assert parent.data.tags["evalkit.production_config"] == decision["production"]["config_id"]
    if decision["recommended"]:
        assert parent.data.tags["evalkit.recommended_config"] == decision["recommended"]["config_id"]
    if decision["cheaper_pick"].get("config_id"):
        assert parent.data.tags["evalkit.cheaper_config"] == decision["cheaper_pick"]["config_id"]
    artefacts = {a.path for a in client.list_artifacts(logged["run_id"])}
    expected = {"summary.csv", "recommendation.json", "manifest.json", "results.parquet", "calibration.csv"}
    expected |= {"costs.json", "review.json"}  # review.json: the report's numbers, logged with it
    assert expected <= artefacts, artefacts
    children = client.search_runs(
        [parent.info.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{logged['run_id']}'"
    )
    assert len(children) == len(summary) == logged["child_runs"]
    by_name = {c.info.run_name: c for c in children}
    for row in summary.itertuples(index=False):
        child = by_name[row.config_id]
        assert child.data.params["top_k"] == str(row.top_k)
        assert child.data.metrics["recall"] == pytest.approx(row.recall)
        assert child.data.metrics["n_questions"] == row.n_questions


def test_a_sweep_logs_to_a_local_store_by_default(tmp_path: Path, small_demo: Path) -> None:
    reports = tmp_path / "reports"
    run = evalkit.run_sweep(*sweep_args(small_demo, reports), "+tracker=mlflow", quiet=True)
    assert (reports / "mlflow.db").is_file() and (reports / "mlflow-artifacts").is_dir()
    check_logged(MlflowClient(tracking_uri=f"sqlite:///{reports / 'mlflow.db'}"), run.path)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("mlflow-server")
    port = free_port()
    mlflow_cli = shutil.which("mlflow") or sys.executable
    args = [mlflow_cli] if mlflow_cli != sys.executable else [sys.executable, "-m", "mlflow"]
    process = subprocess.Popen(
        [*args, "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
         "--backend-store-uri", f"sqlite:///{root / 'server.db'}", "--artifacts-destination", str(root / "artefacts")],
        stdout=subprocess.DEVNULL, stderr=open(root / "server.log", "w"), cwd=root,  # noqa: SIM115
    )  # fmt: skip
    uri = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(f"{uri}/health", timeout=2) as reply:
                if reply.status == 200:
                    break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"mlflow server did not start: {(root / 'server.log').read_text()[-2000:]}")
            time.sleep(0.5)
    yield uri
    process.terminate()
    process.wait(timeout=30)
    # The tracking extra is complete for `mlflow server`: its job runner found what it imports.
    assert "No module named" not in (root / "server.log").read_text(encoding="utf-8", errors="replace")


def test_a_sweep_logs_to_a_tracking_server(
    tmp_path: Path, small_demo: Path, server: str, capfd: pytest.CaptureFixture[str]
) -> None:
    reports = tmp_path / "reports"
    run = evalkit.run_sweep(
        *sweep_args(small_demo, reports), "+tracker=mlflow", f"tracker.uri={server}", "tracker.experiment=quarterly",
        quiet=True,
    )  # fmt: skip
    assert not (reports / "mlflow.db").exists()
    printed = capfd.readouterr()
    assert "View run" not in printed.out + printed.err, "MLflow's own line per run is off unless tracker.verbose"
    check_logged(MlflowClient(tracking_uri=server), run.path, "quarterly")
    # Gated, then logged again by hand: a second MLflow run, which now carries gate.md.
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    gated = subprocess.run(
        [sys.executable, "-m", "evalkit.gate", "--run", str(run.path), "--candidate-config",
         json.loads((run.path / "recommendation.json").read_text())["production"]["config_id"]],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert gated.returncode == 0 and (run.path / "gate.md").is_file(), gated.stderr
    done = subprocess.run(
        [sys.executable, "-m", "evalkit.tracking", str(run.path), "--uri", server, "--experiment", "quarterly"],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    experiment = MlflowClient(tracking_uri=server).get_experiment_by_name("quarterly")
    parents = MlflowClient(tracking_uri=server).search_runs(
        [experiment.experiment_id], filter_string=f"attributes.run_name = '{run.path.name}'"
    )
    assert len(parents) == 2
    latest = max(parents, key=lambda r: r.info.start_time)
    assert "gate.md" in {a.path for a in MlflowClient(tracking_uri=server).list_artifacts(latest.info.run_id)}


def test_an_unreachable_server_stops_the_sweep_before_any_work(tmp_path: Path, small_demo: Path) -> None:
    reports = tmp_path / "reports"
    closed = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(evalkit.SweepError, match="no MLflow server answers") as caught:
        evalkit.run_sweep(*sweep_args(small_demo, reports), "+tracker=mlflow", f"tracker.uri={closed}", quiet=True)
    assert caught.value.exit_code == 2
    assert not reports.exists() or not any(p.name != ".hydra" for p in reports.iterdir())
    with pytest.raises(evalkit.SweepError, match=r"tracker\.per_config"):
        evalkit.run_sweep(*sweep_args(small_demo, reports), "+tracker=mlflow", "tracker.per_confg=false")


def test_production_chunking_is_named_for_any_external_retriever_not_by_its_name() -> None:
    """An installed retriever (any name) chunks as production does, as ``retriever=external`` does: the plan's one
    chunking says so, so its chunk sizes are logged as ``external``, not as evalkit's grid it never used."""
    from evalkit.tracking.mlflow_log import sweep_params

    config = {"retriever": {"name": "mystore"}, "chunk_size": [512, 256], "chunk_overlap": [0]}
    external = sweep_params({"config": config, "grid": {"chunkings": ["external"]}})
    assert external["retriever"] == "mystore"
    assert (external["chunk_size"], external["chunk_overlap"]) == ("external", "external")
    own = sweep_params({"config": config, "grid": {"chunkings": ["recursive-s256-o0", "recursive-s512-o0"]}})
    assert (own["chunk_size"], own["chunk_overlap"]) == ("[256, 512]", "[0]")
