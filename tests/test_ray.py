"""``executor=ray`` against a real Ray cluster the tests start on 127.0.0.1 (a head and a second node).

Same numbers as ``executor=local``; a worker killed mid-task is retried with no paid call repeated;
a killed driver resumes from the finished units; a node lost mid-sweep leaves the sweep to finish on
the other; without Ray installed, ``executor=ray`` is one line and exit 2.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pytest

from tests.blas_env import in_other_core_child, other_core_env
from tests.loopback.cohere_server import CohereServer
from tests.loopback.ray_cluster import (
    Cluster,
    cluster_pids,
    free_port,
    is_loopback,
    listening_sockets,
    process_tree,
    start_cluster,
    stop_cluster,
)
from tests.test_sweep import REPO, run_in_process

ray = pytest.importorskip("ray", reason='the ray extra is not installed: pip install -e ".[ray]"')

SHARED_SETS = REPO.parent / "shared" / "labelsets"
QUIET = ["progress=false", "report=false", "position=off", "answer_check=off"]
KEY = "loopback-cohere-key-do-not-log"
GRID5 = ["chunk_size=[256,384,512,768,1024]", "chunk_overlap=[0]"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    started = start_cluster(tmp_path_factory.mktemp("ray"))
    try:
        yield started
    finally:
        stop_cluster(started)


def run_on_ray(cluster: Cluster, overrides: list[str], env: dict[str, str] | None = None) -> Path:
    """A sweep with executor=ray as its own driver process (authenticated like the nodes); its run folder."""
    command = [sys.executable, "-m", "evalkit.sweep", *QUIET, *overrides, "executor=ray"]
    command.append(f"executor.address={cluster.address}")
    done = subprocess.run(command, cwd=REPO, env={**cluster.driver_env, **(env or {})}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    reports = next(o.split("=", 1)[1] for o in overrides if o.startswith("reports_dir="))
    return Path(reports) / "r"


def assert_same_run(local: Path, other: Path) -> None:
    for name in ("results.parquet", "summary.parquet"):
        pd.testing.assert_frame_equal(pd.read_parquet(local / name), pd.read_parquet(other / name), check_exact=True)
    pools = sorted(p.name for p in (local / "pools").glob("*.parquet"))
    assert pools and pools == sorted(p.name for p in (other / "pools").glob("*.parquet"))
    for name in pools:
        pd.testing.assert_frame_equal(pd.read_parquet(local / "pools" / name), pd.read_parquet(other / "pools" / name))


def sweep_pair(tmp_path: Path, cluster: Cluster, overrides: list[str]) -> tuple[Path, Path]:
    """The same sweep with executor=local and executor=ray, each with a cold cache of its own."""
    local = run_in_process([*QUIET, *overrides, f"reports_dir={tmp_path / 'local'}", "run_id=r"])
    return local, run_on_ray(cluster, [*overrides, f"reports_dir={tmp_path / 'ray'}", "run_id=r"])


def test_ray_equals_local_on_the_demo_set_bm25(tmp_path: Path, cluster: Cluster) -> None:
    local, on_ray = sweep_pair(tmp_path, cluster, [])
    assert_same_run(local, on_ray)


# The fake embedder runs the same fan-out (batches, cache, object store) in CI; the real e5 model on
# the workers is the slow variant (benchmarks/scale.py runs it on squad2-en too).
@pytest.mark.parametrize("embedder", ["fake", pytest.param("e5", marks=pytest.mark.slow)])
def test_ray_equals_local_hybrid_with_embeddings_fanned_out(
    tmp_path: Path, cluster: Cluster, small_demo: Path, embedder: str
) -> None:
    grid = [f"labelset.path={small_demo}", "retriever=hybrid", "chunk_size=[256,512]", "chunk_overlap=[0]"]
    local, on_ray = sweep_pair(tmp_path, cluster, [*grid, f"embedder={embedder}"])
    assert_same_run(local, on_ray)
    stats_local, stats_ray = (json.loads((run / "run_stats.json").read_text()) for run in (local, on_ray))
    # Both embedded every distinct text once (the cache of each saw the same misses), on the cluster for ray.
    assert stats_local["texts_embedded_total"] > 0
    assert stats_local["texts_embedded"] == stats_ray["texts_embedded"]


@pytest.mark.parametrize("name", [pytest.param("squad2-en", marks=pytest.mark.slow), "cmrc2018-zh"])
def test_ray_equals_local_on_the_shared_sets_bm25(tmp_path: Path, cluster: Cluster, name: str) -> None:
    if not (SHARED_SETS / name).exists():
        pytest.skip(f"{SHARED_SETS / name} is not here")
    local, on_ray = sweep_pair(tmp_path, cluster, [f"labelset.path={SHARED_SETS / name}", "chunk_size=[512,1024]"])
    assert_same_run(local, on_ray)


def _watch_sockets(driver: subprocess.Popen[str], pids: Callable[[], set[int]]) -> list[tuple[int, str, str, int]]:
    """Every listening socket of ``pids()`` and of the driver's process tree, sampled until the driver ends."""
    seen: set[tuple[int, str, str, int]] = set()
    while driver.poll() is None:
        seen.update(listening_sockets(pids() | process_tree({driver.pid})))
        time.sleep(0.1)
    return sorted(seen)


def _sweep_driver(reports: Path, overrides: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "evalkit.sweep", *QUIET, f"reports_dir={reports}", "run_id=r", *overrides]
    return subprocess.Popen(command, cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)


def test_the_cluster_and_a_sweep_on_it_listen_on_loopback_only(tmp_path: Path, cluster: Cluster) -> None:
    # Workers start (and open their gRPC servers) while a sweep runs, so the sockets are sampled during one.
    grid = ["chunk_size=[256,512]", "chunk_overlap=[0]", "executor=ray", f"executor.address={cluster.address}"]
    driver = _sweep_driver(tmp_path, grid, cluster.driver_env)
    seen = _watch_sockets(driver, lambda: cluster_pids(cluster))
    assert driver.wait() == 0, driver.stderr.read()[-2000:] if driver.stderr else ""
    names = {name for _, name, _, _ in seen}
    assert {"gcs_server", "raylet"} <= names, seen  # the check saw the cluster's servers
    assert all(is_loopback(host) for _, _, host, _ in seen), [s for s in seen if not is_loopback(s[2])]


def test_a_local_instance_started_by_evalkit_listens_on_loopback_only(tmp_path: Path) -> None:
    # executor=ray without an address: the driver starts Ray itself (its GCS and raylet are its children).
    # HOME of its own: Ray 2.60 writes a token for a local instance to ~/.ray/auth_token when none exists.
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")} | {"RAY_USAGE_STATS_ENABLED": "0"}
    env["HOME"] = str(tmp_path / "home")
    grid = ["chunk_size=[256,512]", "chunk_overlap=[0]", "executor=ray", "executor.num_cpus=1"]
    driver = _sweep_driver(tmp_path, grid, env)
    seen = _watch_sockets(driver, set)
    assert driver.wait() == 0, driver.stderr.read()[-2000:] if driver.stderr else ""
    assert {"gcs_server", "raylet"} <= {name for _, name, _, _ in seen}, seen
    assert all(is_loopback(host) for _, _, host, _ in seen), [s for s in seen if not is_loopback(s[2])]


def _one_line_failure(tmp_path: Path, address: str, env: dict[str, str]) -> str:
    """A sweep against ``address`` that must stop with one line and exit 2, nothing stored; that line."""
    command = [sys.executable, "-m", "evalkit.sweep", *QUIET, f"reports_dir={tmp_path}", "executor=ray",
               f"executor.address={address}", "executor.connect_timeout_s=20"]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    print(f"{address}: exit {done.returncode} after {time.monotonic() - started:.1f} s")  # recorded, not asserted
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-3000:]
    assert address in lines[0] and "resume" not in lines[0] and "Traceback" not in done.stderr
    assert {p.name for p in tmp_path.iterdir()} <= {".hydra"}, "nothing was started, nothing to resume"
    return lines[0]


def test_a_wrong_port_is_one_line_within_the_connect_timeout(tmp_path: Path, cluster: Cluster) -> None:
    line = _one_line_failure(tmp_path, f"127.0.0.1:{free_port()}", cluster.driver_env)
    assert "no Ray cluster at" in line


@pytest.mark.parametrize("token", [None, "not-the-cluster-token"])
def test_a_refused_token_is_one_line_that_says_how_to_give_it(
    tmp_path: Path, cluster: Cluster, token: str | None
) -> None:
    env = {k: v for k, v in cluster.driver_env.items() if k not in ("RAY_AUTH_TOKEN", "RAY_AUTH_MODE")}
    env |= {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token} if token else {}
    line = _one_line_failure(tmp_path, cluster.address, env)
    assert "token" in line and "RAY_AUTH_TOKEN" in line and "RAY_AUTH_MODE=token" in line
    assert cluster.env["RAY_AUTH_TOKEN"] not in line and (token is None or token not in line)


def _worker_pids(task_names: tuple[str, ...]) -> list[int]:
    """Ray worker processes running one of ``task_names`` now (Ray titles a busy worker ``ray::<task>``)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            title = (entry / "cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
        except OSError:
            continue
        if title.startswith("ray::") and title.removeprefix("ray::").split()[0] in task_names:
            pids.append(int(entry.name))
    return pids


class Killer(threading.Thread):
    """Sends SIGKILL to the first worker seen running one of ``task_names``."""

    def __init__(self, task_names: tuple[str, ...]) -> None:
        super().__init__(daemon=True)
        self.task_names, self.killed, self.stop = task_names, [], threading.Event()

    def run(self) -> None:
        while not self.stop.is_set() and not self.killed:
            for pid in _worker_pids(self.task_names):
                os.kill(pid, signal.SIGKILL)
                self.killed.append(pid)
                break
            time.sleep(0.005)


def test_a_worker_killed_mid_task_is_retried_and_no_paid_call_repeats(
    tmp_path: Path, cluster: Cluster, small_demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COHERE_API_KEY", KEY)
    grid = [f"labelset.path={small_demo}", "chunk_size=[300,500]", "chunk_overlap=[0]", "pool_size=20"]
    with CohereServer(api_key=KEY) as cohere:
        paid = [*grid, "reranker=cohere", f"reranker.base_url={cohere.url}"]
        local = run_in_process([*QUIET, *paid, f"reports_dir={tmp_path / 'local'}", "run_id=r"])
        local_calls = len(cohere.rerank_requests)
        cohere.reset()
        killer = Killer(("chunk_task", "retrieve_task", "score_task"))
        killer.start()
        on_ray = run_on_ray(cluster, [*paid, f"reports_dir={tmp_path / 'ray'}", "run_id=r"], {"COHERE_API_KEY": KEY})
        killer.stop.set()
        ray_calls = len(cohere.rerank_requests)
    assert killer.killed, "the test must have killed a worker mid-task"
    assert_same_run(local, on_ray)
    assert local_calls > 0 and ray_calls == local_calls, "each rerank request was paid for once"
    # The key stayed with the driver: it is in no log of the cluster's session.
    session = cluster.session_logs
    assert session.exists(), session
    for log in session.rglob("*"):
        if log.is_file():
            assert KEY.encode() not in log.read_bytes(), log


def _sweep_command(reports: Path, cluster: Cluster, labelset: Path) -> list[str]:
    return [
        sys.executable, "-m", "evalkit.sweep", *QUIET, f"reports_dir={reports}", "run_id=r",
        f"labelset.path={labelset}", *GRID5,
        "executor=ray", f"executor.address={cluster.address}",
    ]  # fmt: skip


@pytest.fixture(scope="module")
def squad_local(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """squad2-en, five chunkings, executor=local: what the fault tests' ray runs must equal."""
    if not (SHARED_SETS / "squad2-en").exists():
        pytest.skip(f"{SHARED_SETS / 'squad2-en'} is not here")
    reports = tmp_path_factory.mktemp("squad-local")
    labelset = SHARED_SETS / "squad2-en"
    return run_in_process([*QUIET, f"reports_dir={reports}", "run_id=r", f"labelset.path={labelset}", *GRID5])


def _finished(stage_dir: Path) -> int:
    """Units of a stage the store holds whole (a unit's record is written last, atomically)."""
    return len(list(stage_dir.glob("[!.]*.json"))) if stage_dir.exists() else 0


def test_a_killed_driver_resumes_from_the_finished_units(tmp_path: Path, cluster: Cluster, squad_local: Path) -> None:
    labelset = SHARED_SETS / "squad2-en"
    reports = tmp_path / "ray"
    command = _sweep_command(reports, cluster, labelset)
    driver = subprocess.Popen(command, cwd=REPO, env=cluster.driver_env, stderr=subprocess.PIPE)
    scored = reports / ".units" / "score"
    deadline = time.monotonic() + 300
    while not _finished(scored):
        assert driver.poll() is None, "the sweep ended before a unit finished"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    finished_before = _finished(scored)
    assert finished_before < 5, "killed mid-sweep"
    resumed = subprocess.run(command, cwd=REPO, env=cluster.driver_env, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    stats = json.loads((reports / "r" / "run_stats.json").read_text())
    assert stats["stages_reused"]["score"] >= finished_before
    local = run_in_process(
        [*QUIET, f"reports_dir={tmp_path / 'local'}", "run_id=r", f"labelset.path={labelset}", *GRID5]
    )
    assert_same_run(local, reports / "r")


def test_a_node_lost_mid_sweep_leaves_the_sweep_to_finish_on_the_other(
    tmp_path: Path, cluster: Cluster, squad_local: Path
) -> None:
    # Last of the cluster's tests (pytest keeps file order): it takes the second node away.
    labelset = SHARED_SETS / "squad2-en"
    reports = tmp_path / "ray"
    driver = subprocess.Popen(_sweep_command(reports, cluster, labelset), cwd=REPO, env=cluster.driver_env)
    chunked = reports / ".units" / "chunk"
    deadline = time.monotonic() + 300
    while not _finished(chunked):
        assert driver.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    # The second node goes away (its processes are stopped) while units are in flight.
    cluster.second_node.send_signal(signal.SIGTERM)
    cluster.second_node.wait(timeout=60)
    assert driver.poll() is None, "the node was lost mid-sweep"
    assert driver.wait(timeout=600) == 0
    assert_same_run(squad_local, reports / "r")


def test_without_ray_executor_ray_is_one_line_and_exit_2(tmp_path: Path) -> None:
    # A process in which `import ray` fails as it does where the extra is not installed.
    script = (
        "import sys; sys.modules['ray'] = None; sys.argv = ['evalkit.sweep', *sys.argv[1:]]\n"
        "from evalkit.sweep import main; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, "executor=ray", "position=off", "answer_check=off", f"reports_dir={tmp_path}"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and 'pip install -e ".[ray]"' in lines[0], done.stderr
    assert {p.name for p in tmp_path.iterdir()} <= {".hydra"}, "no run folder, no unit store: nothing was started"


# Keep this test last (see its docstring).
@pytest.mark.skipif(in_other_core_child(), reason="this is the child run under the other core type")
def test_ray_equals_local_hybrid_under_another_openblas_core_type(tmp_path: Path) -> None:
    """The hybrid ray == local test again, in a child whose cluster, workers and driver use another core type.

    Last in the file on purpose: it is the slowest, and runs a second cluster beside this module's (the
    child's cluster stops by its own pids, so this module's cluster is left alone).
    """
    test = "tests/test_ray.py::test_ray_equals_local_hybrid_with_embeddings_fanned_out[fake]"
    command = [sys.executable, "-m", "pytest", test, "-n0", "-p", "no:cacheprovider", f"--basetemp={tmp_path / 't'}"]
    done = subprocess.run(command, cwd=REPO, env=other_core_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout
