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
    artefacts = {a.path for a in client.list_artifacts(logged["run_id"])}
    assert {"summary.csv", "recommendation.json", "manifest.json"} <= artefacts
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
        # The server's background job runner needs packages the skinny install lacks (huey); no test uses it.
        env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},
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


def test_a_sweep_logs_to_a_tracking_server(tmp_path: Path, small_demo: Path, server: str) -> None:
    reports = tmp_path / "reports"
    run = evalkit.run_sweep(
        *sweep_args(small_demo, reports), "+tracker=mlflow", f"tracker.uri={server}", "tracker.experiment=quarterly",
        quiet=True,
    )  # fmt: skip
    assert not (reports / "mlflow.db").exists()
    check_logged(MlflowClient(tracking_uri=server), run.path, "quarterly")
    # A finished run logged again by hand goes into a second MLflow run.
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
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


def test_an_unreachable_server_stops_the_sweep_before_any_work(tmp_path: Path, small_demo: Path) -> None:
    reports = tmp_path / "reports"
    closed = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(evalkit.SweepError, match="no MLflow server answers") as caught:
        evalkit.run_sweep(*sweep_args(small_demo, reports), "+tracker=mlflow", f"tracker.uri={closed}", quiet=True)
    assert caught.value.exit_code == 2
    assert not reports.exists() or not any(p.name != ".hydra" for p in reports.iterdir())
    with pytest.raises(evalkit.SweepError, match=r"tracker\.per_config"):
        evalkit.run_sweep(*sweep_args(small_demo, reports), "+tracker=mlflow", "tracker.per_confg=false")
