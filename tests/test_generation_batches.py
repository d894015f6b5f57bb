"""Message Batches through the real ``anthropic`` SDK against the loopback server: submit, poll, results,
the journal (a killed run resumes polling, never resubmits), entries retried once then reported, the
budget checked before submission, and faults on every batch endpoint."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalkit.answers.generation.anthropic import AnthropicGenerator
from evalkit.answers.generation.batches import generate_many
from evalkit.answers.generation.cached import generate_cached, request_key
from evalkit.answers.generation.request import BatchPending, GenerationError, GenerationRequest, build_request
from evalkit.answers.generation.tally import GenerationCounter
from evalkit.cache import Cache
from evalkit.cost.budget import BudgetExceeded, SpendGuard
from evalkit.cost.model import call_cost
from evalkit.cost.prices import load_price_table
from tests.loopback.anthropic_server import AnthropicLoopback, anthropic_generator
from tests.loopback.batch_client import requests as client_requests
from tests.loopback.faults import FaultPlan

pytest.importorskip("anthropic")

ROOT = Path(__file__).resolve().parents[1]
PRICE = load_price_table(ROOT / "conf" / "pricing").model("claude-sonnet-5")
CONTEXT = "\n".join(
    [
        "[en] The RateLimiter allows a burst of 20 requests per second by default.",
        "[ops] Deployments happen every Tuesday after the change review.",
    ]
)


@pytest.fixture
def server() -> Iterator[AnthropicLoopback]:
    with AnthropicLoopback() as srv:
        yield srv


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[Cache]:
    with Cache(tmp_path / "cache.sqlite") as c:
        yield c


def make(server: AnthropicLoopback, **kwargs: object) -> AnthropicGenerator:
    args: dict[str, object] = {
        "api_key": "test-key", "base_url": server.url, "max_retries": 2, "window": 0, "poll_interval_s": 0.01,
        "retry_base_delay_s": 0.0,
    }  # fmt: skip
    args.update(kwargs)
    return anthropic_generator(**args)


def ask(question: str, qid: str, **kwargs: object) -> GenerationRequest:
    args: dict[str, object] = {"model": "claude-sonnet-5", "system": "Answer from the context only.", "max_tokens": 64}
    args.update(kwargs)
    return build_request(question, CONTEXT, question_id=qid, metadata={"custom_id": qid}, **args)  # type: ignore[arg-type]


def three() -> list[GenerationRequest]:
    return client_requests()  # q1, q2 answerable; q3 always errors ([[batch-error]])


def custom_ids(server: AnthropicLoopback, nth: int) -> list[str]:
    return [r["custom_id"] for r in server.bodies("batches.create")[nth]["requests"]]


# --------------------------------------------------------------------------- submit, poll, results


def test_submit_poll_results_at_half_price(server: AnthropicLoopback, cache: Cache) -> None:
    server.batch_polls = 3
    counter = GenerationCounter()
    answers = generate_many(make(server), three(), cache, counter, batch=True)
    assert [a.question_id for a in answers] == ["q1", "q2", "q3"]  # request order, though results came reversed
    assert answers[0].text.startswith("[en]") and answers[1].text.startswith("[ops]")
    assert {a.backend for a in answers} == {"anthropic-batch"}
    assert server.counts["messages"] == 0 and server.counts["batches.retrieve"] >= 4  # in_progress x3, then ended
    # q3 errored, was retried once in a batch of its own, errored again: reported with its reason.
    assert server.counts["batches.create"] == 2 and custom_ids(server, 1) == ["q3"]
    assert (answers[2].stop_reason, answers[2].text, answers[2].model) == ("error", "", "claude-sonnet-5")
    assert answers[2].error == "errored: invalid_request_error: messages: scripted batch item failure"
    assert counter.errors == {"claude-sonnet-5": 1} and counter.failures == {"errored": 1}
    assert counter.batch["claude-sonnet-5"].requests == 2
    assert cache.count("generate:anthropic") == 2  # failures are not cached

    # The same requests one by one cost exactly twice as much: the batch discount is in the recorded cost.
    with Cache(":memory:") as fresh:
        singles = [generate_cached(make(server), request, fresh) for request in three()[:2]]
    for batched, single in zip(answers[:2], singles, strict=True):
        assert batched.usage == single.usage and single.backend == "anthropic"
        batch_usd = call_cost(batched.usage, PRICE, batch=batched.backend.endswith("-batch")).usd
        assert batch_usd == pytest.approx(0.5 * call_cost(single.usage, PRICE).usd) and batch_usd > 0
    assert call_cost(answers[2].usage, PRICE, batch=True).usd == 0.0  # a failed entry is not billed


def test_expired_and_canceled_entries_are_retried_once_then_reported(server: AnthropicLoopback, cache: Cache) -> None:
    server.batches.script("q1", ["expired"])  # expires once, succeeds on the retry
    server.batches.script("q2", ["canceled", "canceled"])  # canceled twice: reported
    server.batches.script("q3", ["expired", "expired"])
    counter = GenerationCounter()
    requests = [*three()[:2], ask("When do deployments happen?", "q3")]
    answers = generate_many(make(server), requests, cache, counter, batch=True)
    assert [a.stop_reason for a in answers] == ["end_turn", "error", "error"]
    assert [a.error for a in answers] == ["", "canceled", "expired"]
    assert server.counts["batches.create"] == 2 and custom_ids(server, 1) == ["q1", "q2", "q3"]
    assert counter.failures == {"canceled": 1, "expired": 1} and counter.batch["claude-sonnet-5"].requests == 1


def test_a_batch_canceled_mid_poll_is_retried_in_a_new_batch(server: AnthropicLoopback, cache: Cache) -> None:
    server.batch_polls = 2
    gen = make(server)
    canceled: list[str] = []

    def sleep(_: float) -> None:  # someone cancels the batch in the console while the run polls it
        if not canceled:
            canceled.append(gen._client.messages.batches.cancel("msgbatch_0001").processing_status)

    answers = generate_many(gen, three()[:2], cache, batch=True, sleep=sleep)
    assert canceled == ["canceling"] and server.counts["batches.cancel"] == 1
    assert [a.stop_reason for a in answers] == ["end_turn", "end_turn"]
    assert server.batches.created == ["msgbatch_0001", "msgbatch_0002"]


# --------------------------------------------------------------------------- the journal


def test_journal_file_records_each_batch_and_survives_a_fresh_cache(server: AnthropicLoopback, tmp_path: Path) -> None:
    journal = tmp_path / "run" / "batches.json"
    with Cache(tmp_path / "a.sqlite") as cache:
        first = generate_many(make(server), three(), cache, batch=True, journal=journal)
    record = json.loads(journal.read_text(encoding="utf-8"))
    assert [b["id"] for b in record["batches"]] == ["msgbatch_0001", "msgbatch_0002"]
    original, retry = record["batches"]
    assert set(original["custom_ids"]) == {"q1", "q2", "q3"} and list(retry["custom_ids"]) == ["q3"]
    assert original["custom_ids"]["q1"] == request_key(make(server), three()[0])
    assert (original["state"], original["attempt"], retry["attempt"]) == ("collected", 0, 1)
    assert original["outcomes"]["q1"] == "succeeded" and retry["outcomes"]["q3"].startswith("errored: ")
    assert not list(journal.parent.glob(".batches.json.*"))  # written by rename: no temporary left behind

    with Cache(tmp_path / "fresh.sqlite") as cache:  # the cache is gone; the run folder is not
        counter = GenerationCounter()
        again = generate_many(make(server), three()[:2], cache, counter, batch=True, journal=journal)
    assert server.counts["batches.create"] == 2  # downloaded again, not resubmitted (nor paid)
    assert [a.text for a in again] == [a.text for a in first[:2]] and counter.cache_hits == {"claude-sonnet-5": 2}


def test_restart_mid_batch_polls_the_existing_batch(server: AnthropicLoopback, tmp_path: Path) -> None:
    server.batch_polls = 10_000  # stays in_progress until finish_batches()
    with Cache(tmp_path / "cache.sqlite") as cache, pytest.raises(BatchPending) as pending:
        generate_many(make(server, batch_timeout_s=0.05), three(), cache, batch=True)
    assert pending.value.batch_ids == ("msgbatch_0001",) and server.counts["batches.create"] == 1
    server.finish_batches()
    server.batch_polls = 1  # the retry batch of q3's errored entry ends at once (not after 10,000 polls)
    with Cache(tmp_path / "cache.sqlite") as cache:  # a new process: new generator, same cache file
        answers = generate_many(make(server), three(), cache, batch=True)
    assert server.batches.created == ["msgbatch_0001", "msgbatch_0002"]  # polled; only q3's retry is new
    assert [a.stop_reason for a in answers] == ["end_turn", "end_turn", "error"]


def test_a_run_killed_mid_poll_resumes_the_same_batch(server: AnthropicLoopback, tmp_path: Path) -> None:
    server.batch_polls = 10_000
    journal, out = tmp_path / "run" / "batches.json", tmp_path / "answers.json"
    command = [sys.executable, "-m", "tests.loopback.batch_client", server.url, str(tmp_path / "c.sqlite"),
               str(journal), str(out)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    killed = subprocess.Popen(command, cwd=ROOT, env=env)
    deadline = time.monotonic() + 120
    while server.counts["batches.retrieve"] < 3 and killed.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert killed.poll() is None, "the run ended before it could be killed"
    assert server.batches.status("msgbatch_0001") == "in_progress"
    killed.send_signal(signal.SIGKILL)
    assert killed.wait(timeout=30) == -signal.SIGKILL and not out.exists()
    assert [b["state"] for b in json.loads(journal.read_text(encoding="utf-8"))["batches"]] == ["submitted"]

    server.finish_batches()
    server.batch_polls = 1  # the retry batch of the errored entry ends at once
    subprocess.run(command, cwd=ROOT, env=env, check=True, timeout=60)  # the same command
    answers = json.loads(out.read_text(encoding="utf-8"))
    assert [a["stop"] for a in answers] == ["end_turn", "end_turn", "error"]
    creates = [sorted(c["custom_id"] for c in body["requests"]) for body in server.bodies("batches.create")]
    assert creates == [["q1", "q2", "q3"], ["q3"]]  # the batch once; then the retry of the errored entry
    assert server.batches.created[0] == "msgbatch_0001"  # exactly one create of the first batch


# --------------------------------------------------------------------------- the budget


def test_budget_refused_before_submission_then_a_bigger_cap_submits(server: AnthropicLoopback, tmp_path: Path) -> None:
    ledger = tmp_path / "run" / "spend.json"
    with Cache(tmp_path / "cache.sqlite") as cache:
        tight = SpendGuard(0.0001, ledger=ledger)
        with pytest.raises(BudgetExceeded, match=r"budget_usd=0.0001 reached.*a message batch of 3 request"):
            generate_many(make(server), three(), cache, batch=True, spend=tight, price=PRICE)
        assert server.counts["batches.create"] == 0 and tight.spent_usd == 0.0  # nothing submitted
        assert not ledger.exists()

        roomy = SpendGuard(1.0, ledger=ledger)
        answers = generate_many(make(server), three(), cache, batch=True, spend=roomy, price=PRICE)
    assert [a.stop_reason for a in answers] == ["end_turn", "end_turn", "error"]
    assert server.counts["batches.create"] == 2  # the batch, then q3's retry: each charged before it went out
    paid = sum(call_cost(a.usage, PRICE, batch=True).usd for a in answers)
    assert 0 < paid <= roomy.spent_usd  # the charge is an upper bound of what the replies say was billed
    assert json.loads(ledger.read_text(encoding="utf-8"))["spent_usd"] == pytest.approx(roomy.spent_usd)


def test_a_spend_cap_without_a_price_is_refused(server: AnthropicLoopback, cache: Cache) -> None:
    with pytest.raises(GenerationError, match="needs the model's price"):
        generate_many(make(server), three(), cache, batch=True, spend=SpendGuard(1.0))
    assert server.counts["batches.create"] == 0


# --------------------------------------------------------------------------- faults on the batch endpoints


def test_529_and_5xx_on_create_and_poll_are_retried(cache: Cache) -> None:
    plan = FaultPlan(rate=1.0, kinds=("500", "529"), max_consecutive=2)
    with AnthropicLoopback(faults=plan, fault_endpoints=frozenset({"batches.create", "batches.retrieve"})) as server:
        answers = generate_many(make(server, max_retries=3), three()[:2], cache, batch=True)
    assert [a.stop_reason for a in answers] == ["end_turn", "end_turn"]
    assert server.batches.created == ["msgbatch_0001"]  # refused creates made no batch; one was accepted
    assert server.faults.injected["500"] + server.faults.injected["529"] >= 4


def test_batch_create_is_never_resent_after_a_lost_reply(cache: Cache) -> None:
    plan = FaultPlan(rate=1.0, kinds=("reset",), max_consecutive=1)
    lost = pytest.raises(GenerationError, match=r"batches\.create: the reply was lost .* not resent")
    with AnthropicLoopback(faults=plan, fault_endpoints=frozenset({"batches.create"})) as server, lost:
        generate_many(make(server), three(), cache, batch=True)
    assert server.counts["batches.create"] == 1  # a second batch would be paid twice


def test_a_malformed_results_line_and_a_cut_stream_are_read_again(server: AnthropicLoopback, cache: Cache) -> None:
    server.batches.fault_results("malformed-line", "cut")
    answers = generate_many(make(server, max_retries=3), three()[:2], cache, batch=True)
    assert [a.stop_reason for a in answers] == ["end_turn", "end_turn"]
    assert server.counts["batches.results"] == 3 and server.counts["batches.create"] == 1


def test_results_that_stay_unreadable_are_one_error_and_the_batch_stays_resumable(
    server: AnthropicLoopback, tmp_path: Path
) -> None:
    server.batches.fault_results(*["malformed-line"] * 3)
    journal = tmp_path / "batches.json"
    with Cache(tmp_path / "cache.sqlite") as cache:
        with pytest.raises(GenerationError, match=r"batches\.results \(msgbatch_0001\) failed after 3 attempts"):
            generate_many(make(server), three()[:2], cache, batch=True, journal=journal)
        assert json.loads(journal.read_text(encoding="utf-8"))["batches"][0]["state"] == "submitted"
        answers = generate_many(make(server), three()[:2], cache, batch=True, journal=journal)
    assert [a.stop_reason for a in answers] == ["end_turn", "end_turn"] and server.counts["batches.create"] == 1


def test_batch_dedupes_identical_requests_and_skips_cached(server: AnthropicLoopback, cache: Cache) -> None:
    gen = make(server)
    asked = (("a", "What burst?"), ("b", "When do deployments happen?"), ("c", "When do deployments happen?"))
    plain = [
        build_request(q, CONTEXT, model="claude-sonnet-5", system="s", max_tokens=64, question_id=qid)
        for qid, q in asked
    ]
    generate_cached(gen, plain[0], cache)
    answers = generate_many(gen, plain, cache, batch=True)
    assert [a.question_id for a in answers] == ["a", "b", "c"] and [a.cached for a in answers] == [True, False, True]
    create = server.bodies("batches.create")[0]
    assert len(create["requests"]) == 1 and create["requests"][0]["custom_id"] == request_key(gen, plain[1])
