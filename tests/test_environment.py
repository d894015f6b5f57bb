"""The environment's failures, one line each (issue 26): a file, a device, a read-only or a full disk where a run
writes; every ``-m`` value checked before job #0; a failed position experiment fails the sweep.

The read-only and full disks are real: small tmpfs mounts (root, as CI runs; elsewhere these tests skip and
say why). Every refusal is checked for its exit code, a single ``evalkit...: error:`` line naming the path and
the cause, no traceback, and nothing written that a reader could take for a run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from evalkit.run import files
from tests.loopback.anthropic_server import AnthropicLoopback
from tests.loopback.faults import FaultPlan
from tests.test_position import compose_config
from tests.test_sweep import REPO, SMALL


def _run(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=600)


def _sweep(labelset: Path, *overrides: str) -> subprocess.CompletedProcess[str]:
    return _run("-m", "evalkit.sweep", *SMALL, "retriever=bm25", f"labelset.path={labelset}", *overrides)


def _one_error_line(done: subprocess.CompletedProcess[str], prog: str = "evalkit") -> str:
    """The refusal's only error line (progress lines about the run may precede it); no traceback, exit 2."""
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith(f"{prog}: error:")]
    assert len(errors) == 1, done.stderr
    return errors[0]


@contextmanager
def tmpfs(where: Path, size: str, read_only: bool = False) -> Iterator[Path]:
    """A real tmpfs of ``size`` mounted at ``where`` (unmounted after); skips where mounting is not allowed."""
    where.mkdir(parents=True, exist_ok=True)
    options = f"size={size}" + (",ro" if read_only else "")
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode(errors='replace').strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_file_as_reports_dir_is_one_line_and_nothing_is_written(tmp_path: Path, small_demo: Path) -> None:
    target = tmp_path / "reports"
    target.write_text("not a folder", encoding="utf-8")
    line = _one_error_line(_sweep(small_demo, f"reports_dir={target}", f"cache_path={tmp_path / 'c.sqlite'}"))
    assert str(target) in line and "is a file, not a folder" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reports"], "no cache, no .hydra, no run folder"


@pytest.mark.parametrize("override", ["cache_path=/dev/null", "reports_dir=/dev/null/x"])
def test_a_device_where_a_run_writes_is_one_line(tmp_path: Path, small_demo: Path, override: str) -> None:
    others = [f"reports_dir={tmp_path / 'r'}", f"cache_path={tmp_path / 'c.sqlite'}"]
    line = _one_error_line(_sweep(small_demo, *[o for o in others if o.split("=")[0] != override.split("=")[0]],
                                  override))  # fmt: skip
    assert "/dev/null" in line
    assert not (tmp_path / "r").exists()


def test_a_read_only_reports_dir_is_one_line_before_any_work(tmp_path: Path, small_demo: Path) -> None:
    with tmpfs(tmp_path / "ro", "1m", read_only=True) as ro:
        line = _one_error_line(_sweep(small_demo, f"reports_dir={ro / 'r'}", f"cache_path={tmp_path / 'c.sqlite'}"))
        assert str(ro / "r") in line and "read-only file system" in line
    assert not (tmp_path / "c.sqlite").exists(), "refused before any work: the cache is not even created"


def test_an_empty_read_only_vector_store_is_one_line(tmp_path: Path, small_demo: Path) -> None:
    """The store's folder (beside the cache) on a read-only disk: LanceDB cannot write its table (issue 45)."""
    pytest.importorskip("lancedb")
    with tmpfs(tmp_path / "vectorstore", "1m", read_only=True) as store:
        done = _sweep(small_demo, f"reports_dir={tmp_path / 'r'}", f"cache_path={tmp_path / 'c.sqlite'}",
                      "retriever=dense", "retriever.index=lancedb", "embedder=fake")  # fmt: skip
        line = _one_error_line(done)
        assert "retriever.index=lancedb: cannot write" in line and str(store) in line and "Read-only" in line, line


def test_a_full_disk_stops_with_one_line_and_every_reader_refuses_the_partial_folder(
    tmp_path: Path, small_demo: Path
) -> None:
    """A 300 KB tmpfs takes the probe and fills up during the run: one line with the cause, the partial folder
    stays 'running' in its manifest, and the report and the gate refuse it with one line each."""
    with tmpfs(tmp_path / "full", "300k") as full:
        reports = full / "r"
        line = _one_error_line(_sweep(small_demo, f"reports_dir={reports}", f"cache_path={tmp_path / 'c.sqlite'}"))
        assert "no space left on device" in line and "marked incomplete" in line
        (run_dir,) = [p for p in reports.iterdir() if p.is_dir() and not p.name.startswith(".")]
        manifest = json.loads((run_dir / files.MANIFEST).read_text(encoding="utf-8"))
        assert manifest["state"] == "running"
        for prog, args in (
            ("evalkit.report", [str(run_dir)]),
            ("evalkit.gate", ["--run", str(run_dir), "--candidate-config", "recursive-s256-o0|bm25|none|k1|t0"]),
        ):
            refused = _run("-m", prog, *args)
            error = _one_error_line(refused, prog)
            assert "the run is incomplete" in error and str(run_dir) in error
            assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr


def test_the_gate_writing_to_a_full_disk_is_one_line(tmp_path: Path, small_demo: Path) -> None:
    done = _sweep(small_demo, f"reports_dir={tmp_path / 'r'}", "run_id=ok", f"cache_path={tmp_path / 'c.sqlite'}")
    assert done.returncode == 0, done.stderr
    run_dir = tmp_path / "r" / "ok"
    with tmpfs(tmp_path / "full", "4k") as full:
        pair = ["--baseline-config", "recursive-s512-o0|bm25|none|k5|t0", "--candidate-config",
                "recursive-s256-o0|bm25|none|k5|t0"]  # fmt: skip
        refused = _run("-m", "evalkit.gate", "--run", str(run_dir), *pair, "--out", str(full / "gate"))
        error = _one_error_line(refused, "evalkit.gate")
        assert str(full / "gate") in error


def test_every_multirun_value_is_checked_before_job_0(tmp_path: Path, small_demo: Path) -> None:
    for bad, named in (("chunk_size=256,abc", "abc"), ("top_k=5,-1", "-1")):
        reports = tmp_path / bad.split("=")[0]
        done = _run("-m", "evalkit.sweep", "-m", bad, *[o for o in SMALL if not o.startswith(bad.split("=")[0])],
                    f"labelset.path={small_demo}", f"reports_dir={reports}", f"hydra.sweep.dir={tmp_path / 'multi'}",
                    f"cache_path={tmp_path / 'c.sqlite'}")  # fmt: skip
        line = _one_error_line(done)
        assert named in line, line
        assert not reports.exists() and not (tmp_path / "multi").exists(), "no job ran: nothing written"


def test_a_position_experiment_whose_every_reply_is_broken_fails_the_sweep(
    tmp_path: Path, small_demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replies that are all malformed or empty: the retries run out, position/status.json says failed, and the
    sweep exits 2 with one line, its retrieval results kept (the same command resumes)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "dummy-key")
    broken = FaultPlan(rate=1.0, kinds=("malformed", "empty"), max_consecutive=10_000)
    with AnthropicLoopback(api_key="dummy-key", faults=broken) as server:
        cfg = compose_config([
            f"labelset.path={small_demo}", f"reports_dir={tmp_path}", "run_id=failed", "retriever=bm25",
            "progress=false", "report=false", "generator=anthropic", f"generator.base_url={server.url}",
            "generator.retry_base_delay_s=0.001", "generator.retry_max_delay_s=0.01", "generator.max_retries=2",
            "generator.precount=false", "position.subset.size=3",
        ])  # fmt: skip
        from evalkit.sweep import sweep

        with pytest.raises(SystemExit) as stopped:
            sweep(cfg)
    assert stopped.value.code == 2
    run_dir = tmp_path / "failed"
    status = json.loads((run_dir / files.POSITION_DIR / "status.json").read_text(encoding="utf-8"))
    assert status["state"] == "failed" and status["command"].startswith("python -m evalkit.sweep")
    assert (run_dir / files.RESULTS).is_file() and (run_dir / files.SUMMARY).is_file()


def test_a_report_prints_only_its_own_lines(tmp_path: Path, small_demo: Path) -> None:
    """Every console line of the report is evalkit's own (or a progress line): no ``UserWarning`` with a source
    path, no ``findfont`` line about the CJK font's missing bold weight, no font warning at all (the font is a
    dependency; a character no font draws is warned in one ``evalkit: warning:`` line, tests/test_report_fonts.py)."""
    done = _sweep(small_demo, f"reports_dir={tmp_path / 'r'}", "run_id=ok", f"cache_path={tmp_path / 'c.sqlite'}")
    assert done.returncode == 0, done.stderr
    report = _run("-m", "evalkit.report", str(tmp_path / "r" / "ok"))
    assert report.returncode == 0, report.stderr
    lines = report.stderr.strip().splitlines()
    assert lines and all(line.startswith(("evalkit", "report: ")) for line in lines), report.stderr
    assert len([line for line in lines if line.startswith("report: ")]) <= 3  # start, end, maybe one due
    assert "UserWarning" not in report.stderr and "findfont" not in report.stderr
    assert "empty boxes" not in report.stderr and "CJK" not in report.stderr
