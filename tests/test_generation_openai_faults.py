"""generator=openai (the real ``openai`` SDK) against a loopback stand-in speaking the wire format: streaming,
the key rules, the cache key, and every fault retried or reported as one line as it should be."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalkit.answers.generation import make_generator, prompts_for
from evalkit.answers.generation.batches import generate_many
from evalkit.answers.generation.cached import generate_cached, request_key
from evalkit.answers.generation.openai_compat import OpenAICompatGenerator
from evalkit.answers.generation.request import GenerationError, build_request
from evalkit.cache import Cache
from tests.conftest import REPO
from tests.loopback.openai_server import OpenAILoopback

CONF = REPO / "conf" / "generator"
KEY_ENV = "EVALKIT_TEST_OPENAI_KEY"
SECRET = "sk-test-secret-never-shown"


def conf(**changes: Any) -> dict[str, Any]:
    cfg = yaml.safe_load((CONF / "openai.yaml").read_text(encoding="utf-8"))
    return {**cfg, **changes}


@pytest.fixture
def server() -> Iterator[OpenAILoopback]:
    with OpenAILoopback(trickle_s=20.0) as srv:
        yield srv


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)


def generator(server: OpenAILoopback, **changes: Any) -> OpenAICompatGenerator:
    settings = {"base_url": server.base_url, "api_key_env": KEY_ENV, "retry_base_delay_s": 0.0, **changes}
    made = make_generator(conf(**settings))
    assert isinstance(made, OpenAICompatGenerator)
    return made


def request(question: str = "Who wrote it?", context: str = "[d1] Ann wrote it.", max_tokens: int = 32) -> Any:
    return build_request(question, context, model="gpt-4o-mini", max_tokens=max_tokens, **prompts_for(conf(), "en"))


def test_prompts_and_refusals_are_the_other_generators() -> None:
    texts = {
        name: yaml.safe_load((CONF / f"{name}.yaml").read_text(encoding="utf-8"))
        for name in ("anthropic", "local", "local-1.5b", "fake", "openai")
    }
    for name, cfg in texts.items():
        assert cfg["prompts"] == texts["anthropic"]["prompts"], name
        assert cfg["refusal"] == texts["anthropic"]["refusal"], name


def test_streamed_answer_usage_first_token_and_key_header(server: OpenAILoopback) -> None:
    answer = generator(server).generate(request())
    assert answer.text == "echo: Question: Who wrote it?" and answer.stop_reason == "end_turn"
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (20, 5) and not answer.usage.estimated
    assert answer.first_token_s is not None and answer.total_s is not None
    assert 0 < answer.first_token_s <= answer.total_s
    assert answer.model == "gpt-4o-mini" and answer.backend == "openai"
    sent = server.bodies[-1]
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert sent["temperature"] == 0.0 and sent["seed"] == 0 and sent["max_tokens"] == 32
    assert [m["role"] for m in sent["messages"]] == ["system", "user"]
    assert server.headers_seen[-1]["authorization"] == f"Bearer {SECRET}"


def test_unstreamed_answer_has_no_first_token_time(server: OpenAILoopback) -> None:
    answer = generator(server, stream=False).generate(request())
    assert answer.text == "echo: Question: Who wrote it?" and answer.first_token_s is None and answer.total_s
    assert "stream" not in server.bodies[-1]


def test_no_key_for_a_local_server(server: OpenAILoopback) -> None:
    generator(server, api_key_env=None).generate(request())
    assert "authorization" not in server.headers_seen[-1]


def test_missing_key_is_one_line_naming_the_variable(server: OpenAILoopback, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(GenerationError, match=f"^{KEY_ENV} is not set: .*api_key_env: null"):
        generator(server)


def test_cache_key_is_the_request_not_url_key_timeouts_or_retries(server: OpenAILoopback) -> None:
    base = generator(server)
    same = [
        generator(server, timeout_s=5.0, max_retries=0, concurrency=9, stream=False),
        generator(server, base_url="http://127.0.0.1:9/v1", api_key_env=None),
    ]
    other = [generator(server, seed=1), generator(server, temperature=0.5), generator(server, extra_body={"top_k": 1})]
    key = request_key(base, request())
    assert all(request_key(g, request()) == key for g in same)
    assert all(request_key(g, request()) != key for g in other)
    assert request_key(base, request(max_tokens=33)) != key


def test_second_ask_is_served_from_the_cache(server: OpenAILoopback, tmp_path: Path) -> None:
    gen = generator(server)
    with Cache(tmp_path / "c.sqlite") as cache:
        first = generate_cached(gen, request(), cache)
        again = generate_cached(gen, request(), cache)
    assert again.cached and again.text == first.text and again.first_token_s == first.first_token_s
    assert server.counts["/v1/chat/completions"] == 1


def test_concurrency_sends_in_parallel_and_answers_in_order(server: OpenAILoopback, tmp_path: Path) -> None:
    gen = generator(server, concurrency=3)
    asks = [request(question=f"Question {i}?") for i in range(6)]
    with Cache(tmp_path / "c.sqlite") as cache:
        answers = generate_many(gen, asks, cache)
    assert [a.text for a in answers] == [f"echo: Question: Question {i}?" for i in range(6)]


@pytest.mark.parametrize("faults", [["429", "429"], ["500", "503"], ["reset"], ["malformed"], ["reset", "429", "500"]])
def test_transient_faults_are_retried(server: OpenAILoopback, faults: list[str]) -> None:
    server.script.extend(faults)
    answer = generator(server).generate(request())
    assert answer.text == "echo: Question: Who wrote it?"
    assert server.counts["/v1/chat/completions"] == len(faults) + 1


def test_retries_run_out_in_one_line(server: OpenAILoopback) -> None:
    server.script.extend(["503"] * 3)
    with pytest.raises(GenerationError) as err:
        generator(server, max_retries=2).generate(request())
    assert "failed after 3 attempts" in str(err.value) and "\n" not in str(err.value)
    assert server.counts["/v1/chat/completions"] == 3


@pytest.mark.parametrize(
    ("fault", "says"),
    [("401", f"refused the key in {KEY_ENV} \\(HTTP 401\\)"), ("404", "model 'gpt-4o-mini' not found")],
)
def test_client_errors_are_not_retried(server: OpenAILoopback, fault: str, says: str) -> None:
    server.script.append(fault)
    with pytest.raises(GenerationError, match=says) as err:
        generator(server).generate(request())
    assert SECRET not in str(err.value) and "\n" not in str(err.value)
    assert server.counts["/v1/chat/completions"] == 1


def test_a_prompt_too_long_is_an_overflow_answer(server: OpenAILoopback, tmp_path: Path) -> None:
    server.script.append("too-long")
    with Cache(tmp_path / "c.sqlite") as cache:
        answer = generate_cached(generator(server), request(), cache)
        assert answer.stop_reason == "overflow" and answer.text == ""
        assert generate_cached(generator(server), request(), cache).stop_reason == "end_turn"  # never cached


def test_a_trickling_body_stops_at_the_whole_request_deadline(server: OpenAILoopback) -> None:
    """One byte every 50 ms for 20 s defeats a per-read timeout; the whole-request deadline (0.5 s) does not."""
    server.script.extend(["trickle", "trickle"])
    with pytest.raises(GenerationError, match=r"no whole reply within timeout_s=0\.5 s") as err:
        generator(server, timeout_s=0.5, max_retries=1).generate(request())
    assert "failed after 2 attempts" in str(err.value)
    assert server.trickle_finished == 0  # both bodies were still trickling when evalkit gave up


def test_bad_base_url_is_one_line() -> None:
    with pytest.raises(GenerationError, match=r"^generator\.base_url: 'localhost:8000' is not an http"):
        make_generator(conf(base_url="localhost:8000", api_key_env=None))


def test_unknown_key_in_the_config_is_one_line() -> None:
    from evalkit.settings import ConfigError

    with pytest.raises(ConfigError, match=r"generator.*timeout"):
        make_generator(conf(timeout=3))


def test_refused_connection_exits_2_in_one_line(tmp_path: Path, small_demo: Path) -> None:
    """Nothing listens at the base_url: the position run retries, then stops with one line and exit 2."""
    with OpenAILoopback() as closed:
        dead = closed.base_url
    command = [
        sys.executable,
        "-m",
        "evalkit.sweep",
        "+experiment=position",
        f"labelset.path={small_demo}",
        f"reports_dir={tmp_path}",
        f"cache_path={tmp_path / 'cache.sqlite'}",
        "retriever=bm25",
        "progress=false",
        "position.subset.size=2",
        "position.repeats=1",
        "generator=openai",
        f"generator.base_url={dead}",
        "generator.api_key_env=null",
        "generator.max_retries=1",
        "generator.retry_base_delay_s=0",
    ]
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=600, check=False)
    assert done.returncode == 2, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert "openai-compatible chat" in last and "failed after 2 attempts" in last and "Traceback" not in done.stderr


def test_local_first_token_time_comes_from_llama_cpp_timings() -> None:
    from evalkit.answers.generation.local import timings_seconds

    timed = timings_seconds({"prompt_ms": 200.0, "predicted_ms": 300.0, "predicted_n": 10})
    assert timed == {"first_token_s": pytest.approx(0.23), "total_s": pytest.approx(0.5)}
    assert timings_seconds({}) == {"first_token_s": None, "total_s": None}
