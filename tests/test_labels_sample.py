"""From a query log to an unlabelled set: reading logs, folding variants, stratified samples, failures, generation."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

from evalkit.answers.generation.base import Generator
from evalkit.answers.generation.request import GenerationRequest
from evalkit.cache import Cache
from evalkit.curate.failures import propose_failures
from evalkit.curate.generate import generate_candidates, parse_reply
from evalkit.curate.querylog import read_query_log
from evalkit.curate.queue import read_queue
from evalkit.curate.sampling import SampleSettings, fold, fold_key, sample
from evalkit.labels.read import read_set
from evalkit.records import Answer, Usage
from tests.conftest import DEMO, REPO

LOG = DEMO / "query_log.jsonl"


def labels(*args: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalkit.labels", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=timeout,
    )


def write_log(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_bad_rows_are_one_line_each_naming_file_line_and_field(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(
        '{"question": "How many days of leave?", "timestamp": "2025-11-01T10:00:00Z"}\n'
        '{"question": "", "timestamp": "2025-11-01T10:00:00Z"}\n'
        '{"question": "When?", "timestamp": "soon"}\n'
        "not json\n"
        '{"query": "Is it late?", "ts": 1762000000, "feedback": "meh"}\n'
        '{"q": "Which doc?", "date": "2025-11-02", "returned": 7}\n'
        '{"text": "年假有几天？", "time": "2025-11-03 09:00", "feedback": "down", "returned": "leave-zh#10-20;faq"}\n',
        encoding="utf-8",
    )
    reading = read_query_log(log)
    assert reading.rows == 7 and len(reading.entries) == 2
    assert [p.split(": ")[0] for p in reading.problems] == [f"{log}:{n}" for n in (2, 3, 4, 5, 6)]
    assert "field 'question'" in reading.problems[0] and "field 'timestamp'" in reading.problems[1]
    assert "invalid JSON" in reading.problems[2] and "field 'feedback'" in reading.problems[3]
    assert "field 'returned'" in reading.problems[4]
    zh = reading.entries[1]
    assert zh.failed and zh.timestamp == dt.datetime(2025, 11, 3, 9, tzinfo=dt.UTC)
    assert [(s.doc_id, s.start, s.end) for s in zh.returned] == [("leave-zh", 10, 20), ("faq", 0, 0)]


def test_csv_logs_and_failure_flags(tmp_path: Path) -> None:
    log = tmp_path / "log.csv"
    log.write_text(
        "question,timestamp,role,error,feedback,returned\n"
        'What is the hotel cap?,2025-12-01T08:00:00+01:00,employee,,up,"[""travel-v3""]"\n'
        "What is the hotel cap?,2025-12-02T08:00:00Z,employee,timeout,,\n"
        "Who approves?,2025-12-03T08:00:00Z,hr,,-1,\n"
        "Bad row,not a time,employee,,,\n",
        encoding="utf-8",
    )
    reading = read_query_log(log)
    assert [e.failed for e in reading.entries] == [False, True, True]
    assert reading.entries[0].timestamp == dt.datetime(2025, 12, 1, 7, tzinfo=dt.UTC)
    assert reading.entries[0].returned[0].doc_id == "travel-v3"
    assert reading.problems == (
        f"{log}:5: field 'timestamp': 'not a time' is not a timestamp (ISO 8601 or Unix seconds)",
    )


def test_variants_fold_in_english_and_chinese_but_distinct_questions_do_not(tmp_path: Path) -> None:
    stamp = "2025-12-01T00:00:00Z"
    texts = [
        "What is the hotel cap in Berlin?",
        "what is the hotel cap in berlin",
        "Hi, what is the hotel cap in Berlin??",
        "What is the hotel cap in Munich?",
        "新人茶话会由谁主持？",
        "请问新人茶话会由谁主持?",
        "新人茶话会 由谁主持",
        "住宿标准是多少？",
    ]
    reading = read_query_log(write_log(tmp_path / "l.jsonl", [{"question": t, "timestamp": stamp} for t in texts]))
    groups = {g.question: g.frequency for g in fold(reading.entries)}
    assert groups == {
        "What is the hotel cap in Berlin?": 3,
        "What is the hotel cap in Munich?": 1,
        "新人茶话会由谁主持？": 3,
        "住宿标准是多少？": 1,
    }
    assert fold_key("Ｗｈａｔ　ｉｓ　ＸＹＺ？") == fold_key("what is xyz")  # full-width forms fold too


def test_demo_log_sample_shares_window_and_seed() -> None:
    entries = read_query_log(LOG).entries
    picked = sample(entries, SampleSettings(n=20, seed=3))
    strata = [s for _, s in picked.picked]
    assert strata.count("failure") == 10 and strata.count("frequent") == 10
    assert all(g.failures > 0 for g, s in picked.picked if s == "failure")
    # The window: the last three calendar months before the latest row, nothing older.
    assert picked.until == max(e.timestamp for e in entries)
    assert picked.start == picked.until.replace(year=2025, month=10)
    assert picked.rows_outside > 0 and picked.rows_in_window + picked.rows_outside == len(entries)
    assert all(picked.start < g.first_seen for g, _ in picked.picked)
    # frequent = the most asked groups outside the failure stratum
    frequencies = sorted((g.frequency for g in fold([e for e in entries if picked.start < e.timestamp])), reverse=True)
    frequent = sorted((g.frequency for g, s in picked.picked if s == "frequent"), reverse=True)
    assert frequent[0] <= frequencies[0] and sum(frequent) >= sum(frequencies[10:20])
    again = sample(entries, SampleSettings(n=20, seed=3))
    assert [g.key for g, _ in again.picked] == [g.key for g, _ in picked.picked]
    other = sample(entries, SampleSettings(n=20, seed=4))
    assert {g.key for g, s in other.picked if s == "failure"} != {g.key for g, s in picked.picked if s == "failure"}


def test_a_short_stratum_hands_its_places_to_the_other(tmp_path: Path) -> None:
    rows = [
        {"question": f"Question number {i} about topic {i}?", "timestamp": "2025-12-01T00:00:00Z"} for i in range(8)
    ]
    rows.append({"question": "Why did it fail?", "timestamp": "2025-12-02T00:00:00Z", "error": "timeout"})
    entries = read_query_log(write_log(tmp_path / "l.jsonl", rows)).entries
    picked = sample(entries, SampleSettings(n=6, failure_share=0.5))
    assert [s for _, s in picked.picked].count("failure") == 1 and len(picked.picked) == 6
    assert len(sample(entries, SampleSettings(n=50)).picked) == 9  # never more than the log holds


def test_sample_cli_writes_an_unlabelled_set_the_sweep_cannot_mistake_for_labels(tmp_path: Path) -> None:
    out = tmp_path / "set"
    result = labels("sample", LOG, "--docs", DEMO, out, "--n", "30")
    assert result.returncode == 1, result.stderr  # written, and three bad rows reported
    problems = [line for line in result.stderr.splitlines() if "query_log.jsonl:" in line]
    assert len(problems) == 3 and "Traceback" not in result.stderr
    assert "sampled 30 (16 frequent, 14 failures)" in result.stdout  # the window holds 14 failing questions
    documents = {d.doc_id: d for d in read_set(DEMO).documents}
    items, queue_problems = read_queue(out, documents)
    assert not queue_problems and len(items) == 30
    for item in items:
        assert item.tags["source"] == "log" and item.tags["frequency"] >= 1
        assert item.tags["failure"] == (item.tags["failures"] > 0)
        assert all(s.doc_id in documents for s in item.returned)
    assert all(item.tags["failure"] for item in items if item.tags["stratum"] == "failure")
    assert (out / "questions.jsonl").read_text(encoding="utf-8") == ""
    check = labels("validate", out)
    assert check.returncode == 2 and "no questions" in check.stdout + check.stderr
    # Appending the same log adds nothing; a wider sample adds only what is new.
    assert "0 added" in labels("sample", LOG, out, "--n", "30", "--append").stdout
    wider = labels("sample", LOG, out, "--n", "40", "--append")
    assert "10 added" in wider.stdout, wider.stdout
    assert len(read_queue(out, documents)[0]) == 40


def test_sample_cli_refuses_bad_settings_in_one_line(tmp_path: Path) -> None:
    result = labels("sample", LOG, "--docs", DEMO, tmp_path / "s", "--failure-share", "1.5")
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0 and "failure share" in result.stderr
    missing = labels("sample", tmp_path / "nope.jsonl", "--docs", DEMO, tmp_path / "s")
    assert missing.returncode == 2 and "nope.jsonl" in missing.stderr and "Traceback" not in missing.stderr


def test_add_failures_queues_the_production_configs_misses(small_demo: Path, tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    sweep = subprocess.run(
        [sys.executable, "-m", "evalkit.sweep", f"labelset.path={small_demo}", "position=off",
            "answer_check=off", "retriever=bm25",
         f"reports_dir={reports}", "run_id=fails", "report=false", "progress=false", "chunk_size=[128]",
         "chunk_overlap=[0]", "top_k=[1]", "baseline.chunk_size=128", "baseline.chunk_overlap=0", "baseline.top_k=1"],
        capture_output=True, text=True, cwd=REPO, timeout=300,
    )  # fmt: skip
    assert sweep.returncode == 0, sweep.stderr[-2000:]
    run = reports / "fails"
    proposal = propose_failures(run)
    import pandas as pd

    rows = pd.read_parquet(run / "results.parquet")
    rows = rows[rows["config_id"] == proposal.config_id]
    expected = set(rows[rows["answerable"] & (rows["recall"] < 1)]["question_id"])
    assert expected and {i.id for i in proposal.items} == expected
    assert all(i.tags["failure"] and i.tags["failed_in"] == "fails" and i.proposed for i in proposal.items)
    target = tmp_path / "next"
    assert labels("sample", LOG, "--docs", small_demo, target, "--n", "5").returncode in (0, 1)
    result = labels("add-failures", run, target)
    assert result.returncode == 0, result.stderr
    assert f"{len(expected)} added" in result.stdout
    documents = {d.doc_id: d for d in read_set(small_demo).documents}
    queued = {i.id: i for i in read_queue(target, documents)[0]}
    assert expected <= set(queued) and all(queued[q].proposed for q in expected)
    assert "0 added" in labels("add-failures", run, target).stdout  # idempotent


class ScriptedModel(Generator):
    """A stand-in for a chat model: replies from a script keyed by the passage's document (no evalkit code faked)."""

    backend = "scripted"
    model = "scripted-1"

    def __init__(self, replies: dict[str, str]) -> None:
        self.replies = replies
        self.calls = 0

    def generate(self, request: GenerationRequest) -> Answer:
        self.calls += 1
        doc_id = request.question_id.split("#")[0]
        usage = Usage(input_tokens=10, output_tokens=10)
        return Answer(request.question_id, self.replies[doc_id], self.backend, self.model, usage, "end_turn")


def test_generate_anchors_quotes_and_marks_candidates_synthetic(tiny_set: Path, tmp_path: Path) -> None:
    documents = {d.doc_id: d for d in read_set(tiny_set).documents}
    model = ScriptedModel(
        {
            "en": 'Question: What burst does the RateLimiter allow?\nAnswer: "a burst of 20 requests per second"',
            "zh": "问题：住宿标准是多少？\n答案：每晚不超过三千元",  # not in the passage: rejected
        }
    )
    with Cache(tmp_path / "cache.sqlite") as cache:
        generated = generate_candidates(model, cache, documents, n=2, min_chars=20)
        again = generate_candidates(model, cache, documents, n=2, min_chars=20)
    assert model.calls == 2 and again.items == generated.items  # the second pass came from the cache
    assert len(generated.items) == 1 and len(generated.rejected) == 1 and "not in the passage" in generated.rejected[0]
    item = generated.items[0]
    span = item.proposed[0]
    assert span.text == documents["en"].text[span.start : span.end] == "a burst of 20 requests per second"
    assert item.tags["synthetic"] is True and item.tags["derived_label"] is True
    assert parse_reply("**问题**：年假几天？\n**答案**：「十五天」。") == ("年假几天？", "十五天")
    assert parse_reply("just some words [doc]") is None


def test_generate_cli_with_the_fake_generator_rejects_unparseable_replies(tiny_set: Path, tmp_path: Path) -> None:
    result = labels("generate", tiny_set, "--generator", "fake", "--n", "2", "--cache", tmp_path / "c.sqlite")
    assert result.returncode == 1, result.stderr
    assert "1 passages asked, 0 candidates (1 rejected)" in result.stdout  # the Chinese block is under 40 characters
    assert not (tiny_set / "queue.jsonl").exists()
    assert labels("generate", tiny_set, "--generator", "nope").returncode == 2


def test_the_report_states_the_synthetic_share_and_splits_metrics(tiny_set: Path, tmp_path: Path) -> None:
    from evalkit.review import Statistics, write_report
    from tests.test_report import run_sweep

    path = tiny_set / "questions.jsonl"
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    records[0]["tags"] |= {"synthetic": True, "derived_label": True}
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    run = run_sweep(tiny_set, tmp_path / "reports", "chunk_size=[64]", "chunk_overlap=[0]", "top_k=[1]")
    html = write_report(run, statistics=Statistics(n_resamples=200)).read_text(encoding="utf-8")
    assert 'id="synthetic"' in html and "1 of 3 scored questions (33.3%) are synthetic" in html
    section = html[html.index('id="synthetic"') :].split("</section>")[0]
    assert section.count("<tr>") == 3  # header, synthetic, real
