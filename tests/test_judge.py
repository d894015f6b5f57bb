"""The advisory judge: the real ragas metrics and the real ``anthropic`` SDK against the loopback server.

The loopback model's replies are scripted per prompt (ragas asks for JSON in the prompt; instructor parses
the reply text as JSON), so every verdict below is worked out by hand.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalkit.answers.judge import (
    API_KEY_ENV,
    JUDGE_METRICS,
    TELEMETRY_ENV,
    JudgeConfig,
    JudgeError,
    JudgeRow,
    NoiseFloor,
    judge_answers,
    judge_column,
    noise_floor,
    ragas_llm,
    within_noise_floor,
)
from evalkit.cache import Cache
from tests.loopback.anthropic_server import AnthropicLoopback

pytestmark = pytest.mark.filterwarnings("ignore:FUNCTIONS is deprecated:DeprecationWarning")  # instructor 1.3.2

REPO = Path(__file__).resolve().parents[1]
MODEL = "claude-haiku-4-5"

# Phrases that identify each ragas prompt (from the instructions in ragas 0.4.3's metric prompts).
STATEMENTS = "Break down each sentence into one or more fully understandable statements"
CLASSIFY = "classify them in one of the following categories"
JUDGE_1 = "You are a world class state of the art assistant for rating a User Answer"
JUDGE_2 = "I will rate the User Answer in comparison to the Reference Answer"
DECOMPOSE = "Decompose and break down each of the input sentences"
NLI = "judge the faithfulness of a series of statements"

PARIS = JudgeRow("q-right", "What is the capital of France?", "Paris is the capital of France.", "Paris.")
LYON = JudgeRow("q-wrong", "What is the capital of France?", "Lyon is the capital of France.", "Paris.")


@pytest.fixture(scope="module", autouse=True)
def _ragas() -> None:
    """Skip the module when ragas cannot be imported (telemetry off before the import)."""
    os.environ.setdefault(TELEMETRY_ENV, "true")
    try:
        import ragas.metrics.collections  # noqa: F401
    except Exception as exc:
        pytest.skip(f"ragas cannot be imported ({type(exc).__name__}: {exc}); pip install -e .[test]")


class ScriptedJudge(AnthropicLoopback):
    """The loopback server with the model's reply chosen by ``script(prompt)`` (the last user turn)."""

    def __init__(self, script: Callable[[str], str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.script = script

    def _answer(self, prompt: str) -> str:
        return self.script(prompt)


def _queue(replies: list[str]) -> Callable[[], str]:
    """Replies handed out one per call, in order, across the server's handler threads."""
    pending, lock = deque(replies), threading.Lock()

    def take() -> str:
        with lock:
            return pending.popleft()

    return take


def _classification(tp: int, fp: int, fn: int) -> str:
    def items(label: str, k: int) -> list[dict[str, str]]:
        return [{"statement": f"{label} statement {i}", "reason": "scripted"} for i in range(k)]

    return json.dumps({"TP": items("tp", tp), "FP": items("fp", fp), "FN": items("fn", fn)})


def _input_of(prompt: str) -> str:
    """The row's own input (JSON), after ragas' few-shot examples."""
    tail = prompt.rsplit("Now perform the same with the following input", 1)[-1]
    return tail.split("input: ", 1)[-1].rsplit("Output:", 1)[0]


def correctness_script(prompt: str) -> str:
    """AnswerCorrectness: each text is its own statement; Paris is a true positive, Lyon a false positive
    and a miss."""
    if STATEMENTS in prompt:
        return json.dumps({"statements": [json.loads(_input_of(prompt))["answer"]]})
    if CLASSIFY in prompt:
        return _classification(0, 1, 1) if "Lyon" in _input_of(prompt) else _classification(1, 0, 0)
    raise AssertionError(f"unexpected prompt: {prompt[:80]!r}")


def accuracy_script(prompt: str) -> str:
    """AnswerAccuracy: both judges say 4 for Paris, 0 for Lyon; for Berlin judge 1 says 4, judge 2 says 2."""
    row = _input_of(prompt)
    assert JUDGE_1 in prompt or JUDGE_2 in prompt, prompt[:80]
    if "Lyon" in row:
        return '{"rating": 0}'
    if "Berlin" in row and JUDGE_2 in prompt:
        return '{"rating": 2}'
    return '{"rating": 4}'


def factual_script(prompt: str) -> str:
    """FactualCorrectness: each text is its own claim, verified (1) unless Lyon is on either side."""
    row = _input_of(prompt)
    if DECOMPOSE in prompt:
        return json.dumps({"claims": [json.loads(row)["response"]]})
    if NLI in prompt:
        claim = json.loads(row)["statements"][0]
        verdict = 0 if "Lyon" in row else 1
        return json.dumps({"statements": [{"statement": claim, "reason": "scripted", "verdict": verdict}]})
    raise AssertionError(f"unexpected prompt: {prompt[:80]!r}")


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[ScriptedJudge]:
    script = getattr(request, "param", correctness_script)
    with ScriptedJudge(script) as srv:
        yield srv


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[Cache]:
    with Cache(tmp_path / "cache.sqlite") as c:
        yield c


def make_llm(server: AnthropicLoopback, **kwargs: Any) -> Any:
    args: dict[str, Any] = {"base_url": server.url, "api_key": "test-key", "max_tokens": 256, "max_retries": 0}
    args.update(kwargs)
    return ragas_llm(MODEL, **args)


# --------------------------------------------------------------------------- setup


def test_import_has_no_side_effects() -> None:
    env = {k: v for k, v in os.environ.items() if k != TELEMETRY_ENV}
    code = (
        "import os, sys; import evalkit.answers.judge; "
        "assert 'ragas' not in sys.modules and 'anthropic' not in sys.modules; "
        f"assert {TELEMETRY_ENV!r} not in os.environ"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, check=True)


def test_ragas_llm_turns_telemetry_off_and_sends_only_max_tokens(
    server: ScriptedJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragas._analytics import do_not_track
    from ragas.llms.base import InstructorLLM

    monkeypatch.delenv(TELEMETRY_ENV, raising=False)
    do_not_track.cache_clear()
    llm = make_llm(server)
    assert os.environ[TELEMETRY_ENV] == "true"
    assert do_not_track() is True
    assert isinstance(llm, InstructorLLM) and llm.provider == "anthropic" and llm.model == MODEL
    # ragas' temperature/top_p defaults are gone; instructor makes one attempt (its own retries are off).
    assert llm.model_args == {"max_tokens": 256, "max_retries": 1}
    judge_answers([PARIS], llm)
    body = server.bodies("messages")[0]
    assert set(body) == {"model", "max_tokens", "messages", "system"}
    assert (body["model"], body["max_tokens"]) == (MODEL, 256)
    assert "JSON" in body["system"]  # instructor's ANTHROPIC_JSON mode: the schema rides in the system prompt


def test_missing_key_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(API_KEY_ENV, raising=False)
    with pytest.raises(JudgeError, match=API_KEY_ENV) as info:
        ragas_llm(MODEL)
    assert "\n" not in str(info.value)


# --------------------------------------------------------------------------- verdicts


def test_answer_correctness_right_and_wrong(server: ScriptedJudge) -> None:
    scores = judge_answers([PARIS, LYON], make_llm(server))
    assert [(s.key, s.score, s.note) for s in scores] == [("q-right", 1.0, ""), ("q-wrong", 0.0, "")]
    assert all(s.column == "judge_answer_correctness" and s.model == MODEL for s in scores)
    assert [s.calls for s in scores] == [3, 3] and not any(s.cached for s in scores)
    # Statements of the answer, statements of the reference, one classification: 3 requests a row.
    assert server.counts["messages"] == 2 * JUDGE_METRICS["answer_correctness"].calls_per_row == 6
    assert all(entry.status == 200 for entry in server.log)


@pytest.mark.parametrize("server", [accuracy_script], indirect=True)
def test_answer_accuracy_right_wrong_and_partial(server: ScriptedJudge) -> None:
    berlin = JudgeRow("q-partial", "Capital of Germany?", "Berlin", "Berlin is the capital of Germany.")
    scores = judge_answers([PARIS, LYON, berlin], make_llm(server), "answer_accuracy")
    # Two judges rate 0/2/4; the score is their mean / 4.
    assert [s.score for s in scores] == [1.0, 0.0, 0.75]
    assert scores[0].column == judge_column("answer_accuracy") == "judge_answer_accuracy"
    assert server.counts["messages"] == 3 * 2


@pytest.mark.parametrize("server", [factual_script], indirect=True)
def test_factual_correctness_right_and_wrong(server: ScriptedJudge) -> None:
    scores = judge_answers([PARIS, LYON], make_llm(server), "factual_correctness")
    assert [s.score for s in scores] == [1.0, 0.0]
    # Claims of the answer checked against the reference, then the other way round: 4 requests a row.
    assert server.counts["messages"] == 2 * 4


def test_unjudgeable_rows_are_nan_and_send_nothing(server: ScriptedJudge) -> None:
    no_gold = JudgeRow("q-unanswerable", "Parking allowance?", "I don't have that information", "")
    empty = JudgeRow("q-empty", "What is the capital of France?", "", "Paris.")
    scores = judge_answers([no_gold, empty], make_llm(server))
    assert all(math.isnan(s.score) for s in scores)
    assert "no reference" in scores[0].note and "empty answer" in scores[1].note
    assert server.counts["messages"] == 0


def test_a_failed_row_is_nan_with_its_reason_and_the_rest_are_scored(server: ScriptedJudge) -> None:
    server.fail_next(400, "invalid_request_error", "messages: scripted failure")
    scores = judge_answers([PARIS, LYON], make_llm(server), max_concurrency=1)
    assert math.isnan(scores[0].score) and "scripted failure" in scores[0].note
    assert scores[1].score == 0.0 and scores[1].note == ""
    assert server.counts["messages"] == 1 + 3  # AnswerCorrectness stops at its first failed call


def test_a_rejected_key_raises_instead_of_nan_rows(server: ScriptedJudge) -> None:
    with pytest.raises(JudgeError, match="401"):
        judge_answers([PARIS, LYON], make_llm(server, api_key="wrong-key"), max_concurrency=1)
    assert server.counts["messages"] == 1  # the second row is not sent after the first 401


def test_a_reply_that_is_not_json_is_a_nan_row() -> None:
    with ScriptedJudge(lambda prompt: "Paris, I think.") as srv:
        [score] = judge_answers([PARIS], make_llm(srv))
    assert math.isnan(score.score) and score.note.startswith("judge error:")
    assert srv.counts["messages"] == 1  # one attempt: instructor does not re-ask (its max_retries=1)


def test_an_unreadable_http_body_is_retried_by_the_one_retry_rule() -> None:
    # A 200 whose body is empty, not JSON or cut short is a flaky API, not the judge's verdict: retried.
    import asyncio

    from tests.loopback.anthropic_server import AnthropicLoopback
    from tests.loopback.faults import FaultPlan

    plan = FaultPlan(rate=1.0, kinds=("malformed", "empty", "truncated"), max_consecutive=2)
    with AnthropicLoopback(faults=plan) as srv:
        client = ragas_llm("claude-sonnet-5", srv.url, "test-key", 64, max_retries=2).client.client  # under instructor
        message = asyncio.run(
            client.messages.create(
                model="claude-sonnet-5", max_tokens=64, messages=[{"role": "user", "content": "hello there world"}]
            )
        )
    assert message.content and srv.counts["messages"] == 3 and sum(srv.faults.injected.values()) == 2


def test_overload_is_retried_by_the_one_retry_rule_not_the_sdk(server: ScriptedJudge) -> None:
    # The SDK's loop is off; evalkit's rule retries a 529 (within max_retries) and gives a 400 back at once.
    server.fail_next(529, "overloaded_error", "scripted overload", times=2)
    llm = make_llm(server, max_retries=2)
    assert llm.client.client.max_retries == 0  # under instructor: the SDK client
    [score] = judge_answers([PARIS], llm, max_concurrency=1)
    assert score.score == 1.0 and server.counts["messages"] == 2 + score.calls  # two refused, then the metric's calls
    server.fail_next(529, "overloaded_error", "scripted overload", times=3)
    [score] = judge_answers([LYON], make_llm(server, max_retries=2), max_concurrency=1)
    assert math.isnan(score.score) and "overload" in score.note  # 3 attempts, all refused: a NaN row with why


def test_a_reply_cut_at_max_tokens_is_a_nan_row(server: ScriptedJudge) -> None:
    [score] = judge_answers([PARIS], make_llm(server, max_tokens=3))
    assert math.isnan(score.score) and "judge error" in score.note
    assert server.bodies("messages")[0]["max_tokens"] == 3 and server.counts["messages"] == 1


# --------------------------------------------------------------------------- caching and connections


def test_evalkit_cache_serves_repeat_runs_and_keys_on_the_model(server: ScriptedJudge, cache: Cache) -> None:
    llm = make_llm(server)
    first = judge_answers([PARIS, LYON], llm, cache=cache)
    # ragas decides how many calls a verdict takes (6 here on a quiet machine; 5 and 7 seen under load,
    # when it retries or drops a slow step): the claim under test is the cache's, not that count.
    sent = server.counts["messages"]
    again = judge_answers([PARIS, LYON], llm, cache=cache)
    assert sent > 0 and server.counts["messages"] == sent  # the second run sent nothing
    assert [s.score for s in again] == [s.score for s in first] == [1.0, 0.0]
    assert all(s.cached and s.calls == 0 for s in again)
    judge_answers([PARIS], ragas_llm("claude-sonnet-5", server.url, "test-key", 256, max_retries=0), cache=cache)
    assert server.counts["messages"] > sent  # another model: other keys, so it asks again


def test_no_duplicate_requests_over_keep_alive_between_runs(server: ScriptedJudge) -> None:
    """Each call runs its own event loop; a kept-alive connection from the last one must not be reused."""
    httpd = server._httpd
    assert httpd is not None
    httpd.RequestHandlerClass = type("KeepAlive", (httpd.RequestHandlerClass,), {"protocol_version": "HTTP/1.1"})
    llm = make_llm(server)
    for _ in range(3):
        assert [s.score for s in judge_answers([PARIS], llm)] == [1.0]
    assert server.counts["messages"] == 3 * 3


# --------------------------------------------------------------------------- noise floor


def test_noise_floor_stats_by_hand() -> None:
    floor = NoiseFloor.from_scores([1.0, 1.0, 0.5, 1.0, 0.0, math.nan], key="q", metric="m", model="x")
    assert (floor.n, floor.failed, floor.scores) == (6, 1, (1.0, 1.0, 0.5, 1.0, 0.0))
    assert floor.mean == pytest.approx(0.7)
    # deviations 0.3, 0.3, -0.2, 0.3, -0.7: squares sum to 0.8; / (5 - 1) = 0.2
    assert floor.std == pytest.approx(math.sqrt(0.2))
    assert (floor.min, floor.max, floor.spread) == (0.0, 1.0, 1.0)
    narrow = NoiseFloor.from_scores([0.5, 0.6, 0.7])
    assert narrow.spread == pytest.approx(0.2)
    assert narrow.within(0.80, 0.65) and within_noise_floor(0.65, 0.80, narrow)
    assert not narrow.within(0.80, 0.55)
    assert not within_noise_floor(math.nan, 0.5, narrow)
    with pytest.raises(JudgeError, match="at least 2"):
        NoiseFloor.from_scores([1.0, math.nan])


def test_noise_floor_repeats_are_sent_uncached_and_spread_as_scripted(cache: Cache) -> None:
    # Classification replies across 5 repeats -> F1 1, 1, 0.5 (TP=FP=FN=1), 1, 0.
    classifications = _queue([_classification(*c) for c in [(1, 0, 0), (1, 0, 0), (1, 1, 1), (1, 0, 0), (0, 1, 1)]])

    def script(prompt: str) -> str:
        return classifications() if CLASSIFY in prompt else correctness_script(prompt)

    with ScriptedJudge(script) as srv:
        llm = make_llm(srv)
        floor = noise_floor(PARIS, llm, n=5)
        sent = srv.counts["messages"]
    assert sent == 5 * 3  # every repeat reaches the model
    assert (floor.key, floor.metric, floor.model) == ("q-right", "answer_correctness", MODEL)
    assert (floor.n, floor.failed) == (5, 0)
    assert sorted(floor.scores) == [0.0, 0.5, 1.0, 1.0, 1.0]
    assert floor.mean == pytest.approx(0.7) and floor.std == pytest.approx(math.sqrt(0.2))
    assert (floor.min, floor.max, floor.spread) == (0.0, 1.0, 1.0)


def test_noise_floor_is_uncached_even_after_a_cached_run(server: ScriptedJudge, cache: Cache) -> None:
    llm = make_llm(server)
    judge_answers([PARIS], llm, cache=cache)
    assert server.counts["messages"] == 3
    floor = noise_floor(PARIS, llm, n=3)
    assert server.counts["messages"] == 3 + 3 * 3
    assert floor.scores == (1.0, 1.0, 1.0) and floor.spread == 0.0 and floor.std == 0.0


def test_noise_floor_needs_two_repeats(server: ScriptedJudge) -> None:
    with pytest.raises(ValueError, match="n >= 2"):
        noise_floor(PARIS, make_llm(server), n=1)
    assert server.counts["messages"] == 0


# --------------------------------------------------------------------------- config


def test_claude_config() -> None:
    raw = yaml.safe_load((REPO / "conf" / "judge" / "claude.yaml").read_text(encoding="utf-8"))
    config = JudgeConfig.from_mapping(raw)
    assert config.model == "claude-haiku-4-5" and config.n_noise_repeats == 5
    assert config.metric in JUDGE_METRICS and config.max_tokens > 0
    with pytest.raises(ValueError, match="unknown judge metric"):
        JudgeConfig.from_mapping({**raw, "metric": "answer_similarity"})


def test_config_builds_the_llm_against_a_server(server: ScriptedJudge) -> None:
    raw = yaml.safe_load((REPO / "conf" / "judge" / "claude.yaml").read_text(encoding="utf-8"))
    config = JudgeConfig.from_mapping({**raw, "max_retries": 0})
    llm = config.llm(api_key="test-key", base_url=server.url)
    assert llm.model_args["max_tokens"] == config.max_tokens
    assert [s.score for s in judge_answers([PARIS], llm, config.metric)] == [1.0]


# --------------------------------------------------------------------------- in the position experiment


def test_position_answers_are_judged_beside_evalkit_scores(
    tmp_path: Path, small_demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pandas as pd

    from evalkit.answers.position.judging import judge_position
    from evalkit.labels.read import load_labelset

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    labelset = load_labelset(small_demo)
    first, second = [q for q in labelset.questions if q.answerable][:2]
    rows = pd.DataFrame(
        {
            "row_key": ["a", "b", "c"],
            "question_id": [first.id, second.id, second.id],
            "arm": ["retrieve-5"] * 3,
            "placement": ["shuffle"] * 3,
            "repeat": [0, 0, 1],
            "gold_bucket": ["head", "mid", "tail"],
            "correct": pd.array([True, False, None], dtype="boolean"),
            "answerable": [True, True, True],
            "answer": [first.answers[0], "Lyon", None],
        }
    )
    out = tmp_path / "position"
    out.mkdir()
    rows.to_parquet(out / "rows.parquet")
    judge_cfg = {"model": MODEL, "base_url": None, "n_noise_repeats": 3, "max_retries": 0}
    with ScriptedJudge(correctness_script) as server, Cache(tmp_path / "c.sqlite") as cache:
        path = judge_position(out, labelset, judge_cfg | {"base_url": server.url}, cache)
    table = pd.read_parquet(path)
    assert table["row_key"].tolist() == ["a", "b"], "an unanswered row is not judged"
    assert table.set_index("row_key")["score"].to_dict() == {"a": 1.0, "b": 0.0}
    assert table["correct"].tolist() == [True, False], "evalkit's own verdict stays beside the judge's"
    floor = json.loads((out / "judge_noise.json").read_text(encoding="utf-8"))
    assert floor["n"] == 3 and floor["spread"] == 0.0
