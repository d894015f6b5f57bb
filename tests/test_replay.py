"""The weekly replay: production's config on the demo query log, the zero-hit history and the move it advises."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import evalkit
from evalkit.curate.querylog import read_query_log
from evalkit.curate.replay import replay_questions
from evalkit.curate.sampling import SampleSettings, parse_since, sample
from evalkit.overrides import compose_run
from evalkit.pipeline.replay import corpus_of, replay_zero_hits
from evalkit.project.layers import find_source
from evalkit.run.replay_history import COLUMNS, HistoryError, append_point, read_history
from evalkit.scoring.replay import next_pool_size, replay_advice, zero_hit_rate
from evalkit.sweep import plan_from
from tests.conftest import DEMO, REPO

LOG = DEMO / "query_log.jsonl"
# A reranker over a small pool, where one more step of pool gives the reranker more to find.
RERANKED = ("reranker=local", "pool_size=10", "top_k=5", "baseline.top_k=5")


def replay(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalkit", "replay", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


def history_of(reports: Path) -> list[dict]:
    path = reports / "replay" / "history.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# The acceptance: twice on the demo log, the second with a higher threshold.


def test_a_higher_threshold_raises_the_rate_and_the_move_is_a_wider_pool(tmp_path: Path) -> None:
    first = replay(LOG, f"reports_dir={tmp_path}", *RERANKED, "baseline.threshold=0")
    second = replay(LOG, f"reports_dir={tmp_path}", *RERANKED, "baseline.threshold=0.8")
    # The demo log has three bad rows: each is one line naming file, line and field; the replay still records.
    assert first.returncode == 1 and second.returncode == 1, first.stderr + second.stderr
    skipped = first.stderr.splitlines()
    assert len(skipped) == 3 and skipped[0].startswith(f"{LOG}:121: field 'timestamp'")
    points = history_of(tmp_path)
    assert len(points) == 2 and all(list(p) == list(COLUMNS) for p in points)
    low, high = points
    assert low["config_id"].endswith("|local|k5|t0") and high["config_id"].endswith("|local|k5|t0.8")
    assert low["questions"] == high["questions"] > 0 and low["window_end"] == high["window_end"]
    assert low["move"] == "keep" and low["zero_hit_rate"] <= low["target"]
    assert high["zero_hit_rate"] > high["target"] and high["zero_hit_rate"] > low["zero_hit_rate"]
    assert high["ci_low"] < high["zero_hit_rate"] < high["ci_high"] and low["ci_high"] > low["ci_low"]
    # The move: one step of pool, measured to help on the same questions; the threshold stays.
    assert high["move"] == "widen" and high["wider_pool_size"] == 20
    assert high["zero_hits_wider"] < high["zero_hits"] and high["threshold"] == 0.8
    assert "pool_size 10 -> 20" in high["advice"] and "do not lower the threshold 0.8" in high["advice"]
    out = second.stdout
    assert "move: widen" in out and "lower the threshold 0" not in out.replace("do not lower", "")
    table = [line for line in out.splitlines() if line.startswith("  2")]
    assert [line.split()[-1] for line in table] == [low["config_id"], high["config_id"]]  # side by side


def test_without_a_reranker_a_wider_pool_cannot_help_and_the_threshold_still_stays(tmp_path: Path) -> None:
    done = replay(LOG, f"reports_dir={tmp_path}", "baseline.threshold=10")
    assert done.returncode == 1, done.stderr
    (point,) = history_of(tmp_path)
    assert point["zero_hit_rate"] > point["target"] and point["config_id"].endswith("|bm25|none|k5|t10")
    # BM25's best score is its top hit whatever the pool: measured, not assumed.
    assert point["wider_pool_size"] == 100 and point["zero_hits_wider"] == point["zero_hits"]
    assert point["move"] == "relabel" and "do not lower the threshold 10" in point["advice"]
    assert "python -m evalkit.labels sample" in done.stdout and "--failure-share 0" in done.stdout


def test_replay_counts_zero_hits_as_the_sweep_does(tmp_path: Path, small_demo: Path) -> None:
    """The same questions through the sweep and through the replay: the same zero-hits, question by question."""
    run = evalkit.run_sweep(
        f"labelset.path={small_demo}", f"reports_dir={tmp_path}", "sweep=quick", "threshold=[0,5,10]",
        "position=off", "answer_check=off", "progress=false", "report=false", quiet=True,
    )  # fmt: skip
    questions = [json.loads(line) for line in (small_demo / "questions.jsonl").read_text().splitlines()]
    # Asked on the labelled question's as_of day, by its role: the filters then see what the sweep's did.
    rows = [{"question": q["question"], "timestamp": f"{q['tags'].get('as_of', '2026-01-01')}T12:00:00Z",
             "role": q["tags"]["role"]} for q in questions]  # fmt: skip
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    source = find_source([f"labelset.path={small_demo}", f"reports_dir={tmp_path}", "baseline.threshold=5"], REPO)
    plan, _, _ = plan_from(compose_run(source, source.argv))
    since = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
    picked = replay_questions(read_query_log(log).entries, SampleSettings(n=1000, since=since))
    (counts,) = replay_zero_hits(plan, corpus_of(plan), picked.questions, [plan.pool_size])
    results = run.results[run.results["config_id"] == "recursive-s512-o64|bm25|none|k5|t5"]
    texts = [q["question"] for q in questions]
    by_text = {q["question"]: q["id"] for q in questions if texts.count(q["question"]) == 1}
    swept = dict(zip(results["question_id"], results["zero_hit"].astype(bool)))
    pairs = zip(picked.questions, counts.zero_hit)
    compared = [(swept[by_text[q.question]], z) for q, z in pairs if q.question in by_text and q.tags["frequency"] == 1]
    assert len(compared) >= 20 and any(z for _, z in compared) and not all(z for _, z in compared)
    assert [a for a, _ in compared] == [b for _, b in compared]


# Bad input: one line naming file, line and field; exit 2; nothing recorded.


def test_a_missing_log_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = replay(tmp_path / "nope.jsonl", f"reports_dir={tmp_path}")
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert "nope.jsonl: query log not found" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "replay").exists()


def test_strict_refuses_a_malformed_line_and_records_nothing(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(
        '{"question": "How many days of leave?", "timestamp": "2026-01-10T10:00:00Z"}\n'
        '{"question": "When?", "timestamp": "soon"}\n',
        encoding="utf-8",
    )
    done = replay(log, f"reports_dir={tmp_path}", "--strict")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    first = done.stderr.splitlines()[0]
    assert first == f"{log}:2: field 'timestamp': 'soon' is not a timestamp (ISO 8601 or Unix seconds)"
    assert not (tmp_path / "replay").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--since", "yesterday"), "--since 'yesterday' is not a date"),
        (("--until", "2026-01-14", "--since", "2026-02-01"), "is not before the window's end"),
        (("--since", "2020-01-01", "--until", "2020-02-01"), "no question in the window"),
        (("chunk_szie=512",), "chunk_szie"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    done = replay(LOG, f"reports_dir={tmp_path}", *args)
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert done.returncode == 2 and len(errors) == 1 and message in errors[0], done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "replay").exists()


def test_a_broken_history_line_stops_before_the_replay(tmp_path: Path) -> None:
    history = tmp_path / "history.jsonl"
    history.write_text('{"schema": 1}\n', encoding="utf-8")
    done = replay(LOG, f"reports_dir={tmp_path}", "--history", history)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{history}:1: field 'replayed_at': missing" in done.stderr.splitlines()[-1]
    assert history.read_text(encoding="utf-8") == '{"schema": 1}\n'  # untouched


def test_help_names_the_window_and_the_history() -> None:
    done = replay("--help")
    assert done.returncode == 0
    for words in ("--since", "default 7d", "--n", "--until", "history.jsonl", "baseline.threshold"):
        assert words in done.stdout
    listed = subprocess.run([sys.executable, "-m", "evalkit", "--help"], capture_output=True, text=True, cwd=REPO)
    assert "replay" in listed.stdout


# The window and the questions: labels sample's reader and window, the frequent stratum only.


def test_since_follows_labels_sample() -> None:
    entries = read_query_log(LOG).entries
    week = sample(entries, SampleSettings(n=50, since=parse_since("7d")))
    assert week.until - week.start == dt.timedelta(days=7)
    assert parse_since("2w") == dt.timedelta(days=14)
    assert parse_since("2026-01-07") == dt.datetime(2026, 1, 7, tzinfo=dt.UTC)
    dated = sample(entries, SampleSettings(n=50, since=week.start))
    assert [g.key for g, _ in dated.picked] == [g.key for g, _ in week.picked]
    picked = replay_questions(entries, SampleSettings(n=5, since=parse_since("7d")))
    assert [q.question for q in picked.questions] == [g.question for g, _ in picked.sample.picked]
    assert {s for _, s in picked.sample.picked} == {"frequent"}  # failures are not over-drawn
    every = sample(entries, SampleSettings(n=1000, failure_share=0.0, since=parse_since("7d")))
    top = sorted((g.frequency for g, _ in every.picked), reverse=True)[:5]
    assert [q.tags["frequency"] for q in picked.questions] == top  # the most asked of the week


def test_labels_sample_takes_since_too(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "evalkit.labels", "sample", LOG, "--docs", DEMO, tmp_path / "s", "--since", "7d"],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1 and "window 2026-01-07 .. 2026-01-14" in done.stdout, done.stdout + done.stderr


# The rule (pure): never a lower threshold; widen only when measured to help.


def test_the_rule_never_lowers_the_threshold() -> None:
    rng = np.random.default_rng(0)
    for _ in range(500):
        n = int(rng.integers(1, 60))
        hits = int(rng.integers(0, n + 1))
        wider_hits = int(rng.integers(0, hits + 1))
        pool = int(rng.choice([10, 50, 500, 1000]))
        wider_pool = next_pool_size(pool, 1000)
        wider = None if wider_pool is None else zero_hit_rate(wider_hits, n)
        target, threshold = float(rng.uniform(0, 0.3)), float(rng.uniform(0, 20))
        advice = replay_advice(zero_hit_rate(hits, n), target, threshold, pool, wider_pool, wider, bool(hits % 2))
        assert advice.threshold == threshold and advice.move in ("keep", "widen", "relabel")
        assert f"do not lower the threshold {threshold:g}" in advice.reason
        if advice.move == "widen":
            assert hits / n > target and wider is not None and wider.zero_hits < hits
        assert (advice.move == "keep") == (hits / n <= target)


def test_the_pool_steps_double_up_to_the_largest() -> None:
    assert [next_pool_size(p, 1000) for p in (10, 50, 600, 1000)] == [20, 100, 1000, None]
    at_max = replay_advice(zero_hit_rate(5, 20), 0.05, 0.5, 1000, None, None, True)
    assert at_max.move == "relabel" and "already the largest" in at_max.reason
    with pytest.raises(ValueError, match="must be measured"):
        replay_advice(zero_hit_rate(5, 20), 0.05, 0.5, 50, 100, None, True)


def test_the_interval_says_whether_the_rise_is_beyond_noise() -> None:
    noisy = replay_advice(zero_hit_rate(2, 20), 0.05, 0.5, 50, 100, zero_hit_rate(1, 20), True)
    clear = replay_advice(zero_hit_rate(8, 20), 0.05, 0.5, 50, 100, zero_hit_rate(6, 20), True)
    assert noisy.move == clear.move == "widen"
    assert "cannot tell it from noise" in noisy.reason and "lies above the target" in clear.reason


def test_the_rate_interval_is_never_zero_width_and_covers_by_simulation() -> None:
    for n in (1, 5, 20):
        for k in range(n + 1):
            rate = zero_hit_rate(k, n)
            assert rate.high - rate.low > 0 and rate.low <= rate.rate <= rate.high
    rng = np.random.default_rng(1)
    for p in (0.02, 0.05, 0.15, 0.4):
        draws = rng.binomial(20, p, size=4000)
        covered = np.mean([zero_hit_rate(int(k), 20).low <= p <= zero_hit_rate(int(k), 20).high for k in draws])
        assert covered >= 0.94, (p, covered)  # continuity-corrected Wilson: at or above 95% but for MC noise


# The history file: stable columns, appended, read back strictly.


def test_history_is_appended_with_stable_columns(tmp_path: Path) -> None:
    path = tmp_path / "replay" / "history.jsonl"
    point = {c: 0 for c in COLUMNS if c != "schema"} | {"zero_hit_rate": float("nan"), "move": "keep"}
    append_point(path, point)
    append_point(path, point | {"zero_hits": 3, "questions": 20})
    points = read_history(path)
    assert [p["zero_hits"] for p in points] == [0, 3] and all(list(p) == list(COLUMNS) for p in points)
    assert points[0]["zero_hit_rate"] is None and points[0]["schema"] == 1
    with pytest.raises(ValueError, match="extra"):
        append_point(path, point | {"other": 1})
    path.write_text(path.read_text() + '{"schema": 1, "zero_hits": "x"\n', encoding="utf-8")
    with pytest.raises(HistoryError, match=r"history.jsonl:3: invalid JSON"):
        read_history(path)
