"""AnthropicGenerator and the generation base, through the real ``anthropic`` SDK against a loopback server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from evalkit.answers.generation import make_generator, prompts_for, refusal_for
from evalkit.answers.generation.anthropic import AnthropicGenerator
from evalkit.answers.generation.batches import generate_many
from evalkit.answers.generation.cached import count_tokens_cached, generate_cached, request_key
from evalkit.answers.generation.request import GenerationError, GenerationRequest, build_request
from evalkit.answers.generation.tally import GenerationCounter
from evalkit.cache import Cache
from tests.loopback.anthropic_server import REFUSAL_EN, AnthropicLoopback, anthropic_generator
from tests.loopback.faults import FAULT_KINDS, FaultPlan

pytest.importorskip("anthropic")

CONF = Path(__file__).resolve().parents[1] / "conf" / "generator"
CONTEXT = "\n".join(
    [
        "[en] The RateLimiter allows a burst of 20 requests per second by default.",
        "[ops] Deployments happen every Tuesday after the change review.",
        "[zh] 住宿标准为每晚不超过六百元。",
    ]
)
SYSTEM = "Answer from the context only. Cite [doc_id]."


@pytest.fixture
def server() -> Iterator[AnthropicLoopback]:
    with AnthropicLoopback() as srv:
        yield srv


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[Cache]:
    with Cache(tmp_path / "cache.sqlite") as c:
        yield c


def make(server: AnthropicLoopback, **kwargs: object) -> AnthropicGenerator:
    """A generator against the loopback server; no window check unless a test asks for one."""
    args: dict[str, object] = {"api_key": "test-key", "base_url": server.url, "max_retries": 2, "window": 0}
    args.update(kwargs)
    return anthropic_generator(**args)


def ask(question: str, qid: str = "q1", context: str = CONTEXT, **kwargs: object) -> GenerationRequest:
    args: dict[str, object] = {"model": "claude-sonnet-5", "system": SYSTEM, "max_tokens": 64, "question_id": qid}
    args.update(kwargs)
    return build_request(question, context, **args)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- single calls


def test_normal_answer_with_usage(server: AnthropicLoopback, cache: Cache) -> None:
    counter = GenerationCounter()
    answer = generate_cached(make(server), ask("What burst does the RateLimiter allow?"), cache, counter)
    assert answer.text == "[en] The RateLimiter allows a burst of 20 requests per second by default."
    assert (answer.question_id, answer.backend, answer.model) == ("q1", "anthropic", "claude-sonnet-5")
    assert (answer.stop_reason, answer.truncated, answer.cached) == ("end_turn", False, False)
    assert answer.usage.input_tokens > 0 and answer.usage.output_tokens > 0
    # No cache_control sent: the server answers null cache fields, recorded as 0.
    assert (answer.usage.cache_creation_input_tokens, answer.usage.cache_read_input_tokens) == (0, 0)
    body = server.bodies("messages")[0]
    assert body["system"] == [{"type": "text", "text": SYSTEM}]
    assert body["max_tokens"] == 64 and "temperature" not in body and "top_p" not in body
    assert counter.single["claude-sonnet-5"].requests == 1
    assert counter.single["claude-sonnet-5"].output_tokens == answer.usage.output_tokens


def test_refusal_string_when_context_lacks_answer(server: AnthropicLoopback, cache: Cache) -> None:
    answer = generate_cached(make(server), ask("What is the parking allowance?"), cache)
    assert answer.text == REFUSAL_EN


def test_prompt_caching_marks_prefix_and_reports_cache_usage(server: AnthropicLoopback, cache: Cache) -> None:
    gen = make(server)
    gen.min_cacheable = 5  # toy tokens: the system prompt alone reaches it
    first = generate_cached(gen, ask("What burst does the RateLimiter allow?", cache_prefix=True), cache)
    second = generate_cached(gen, ask("When do deployments happen?", "q2", cache_prefix=True), cache)
    body = server.bodies("messages")[0]
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in body["messages"][0]["content"][1]  # the question is not part of the prefix
    assert first.usage.cache_creation_input_tokens > 0 and first.usage.cache_read_input_tokens == 0
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    assert second.usage.cache_creation_input_tokens == 0
    assert second.text.startswith("[ops]")


def test_a_prefix_below_the_minimum_cacheable_length_is_sent_unmarked(server: AnthropicLoopback, cache: Cache) -> None:
    gen = make(server)
    assert gen.cacheable(ask("What burst?", cache_prefix=True)) == (False, False)  # claude-sonnet-5: 2,048 tokens
    answer = generate_cached(gen, ask("What burst does the RateLimiter allow?", cache_prefix=True), cache)
    body = server.bodies("messages")[0]
    assert "cache_control" not in body["system"][0] and "cache_control" not in body["messages"][0]["content"][0]
    assert (answer.usage.cache_creation_input_tokens, answer.usage.cache_read_input_tokens) == (0, 0)
    assert server.counts["count_tokens"] == 2  # the system prompt, then system + context: counted once each
    generate_cached(gen, ask("When do deployments happen?", "q2", cache_prefix=True), cache)
    assert server.counts["count_tokens"] == 2
    system_only = server.bodies("count_tokens")[0]
    assert system_only["system"] == [{"type": "text", "text": SYSTEM}] and len(system_only["messages"]) == 1


def test_only_the_context_mark_when_the_system_prompt_alone_is_short(server: AnthropicLoopback, cache: Cache) -> None:
    gen = make(server)
    gen.min_cacheable = 30  # toy tokens: the system prompt (~10) alone is short, with the context it is not
    first = generate_cached(gen, ask("What burst does the RateLimiter allow?", cache_prefix=True), cache)
    body = server.bodies("messages")[0]
    assert "cache_control" not in body["system"][0]
    assert body["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert first.usage.cache_creation_input_tokens > 30


def test_usage_splits_writes_and_reads_as_the_replies_say(server: AnthropicLoopback, cache: Cache) -> None:
    server.min_cacheable = 10_000  # the provider does not cache this prefix although it is marked
    gen = make(server)
    gen.min_cacheable = 5
    answer = generate_cached(gen, ask("What burst does the RateLimiter allow?", cache_prefix=True), cache)
    assert server.bodies("messages")[0]["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert (answer.usage.cache_creation_input_tokens, answer.usage.cache_read_input_tokens) == (0, 0)
    assert answer.usage.input_tokens == server.billed[0]["input_tokens"]


def test_prompt_too_long_is_an_overflow_answer_not_an_exception(server: AnthropicLoopback, cache: Cache) -> None:
    server.context_limit = 20
    counter = GenerationCounter()
    answer = generate_cached(make(server), ask("What burst does the RateLimiter allow?"), cache, counter)
    assert (answer.stop_reason, answer.text, answer.usage.input_tokens) == ("overflow", "", 0)
    assert server.counts["messages"] == 1  # a 400 is not retried
    assert [e.status for e in server.log] == [400]
    assert cache.count("generate:anthropic") == 0  # a bigger window later must be able to answer
    assert counter.overflows == {"claude-sonnet-5": 1} and counter.single == {}


def test_other_400_raises_with_the_message(server: AnthropicLoopback, cache: Cache) -> None:
    server.fail_next(400, "invalid_request_error", "messages.0.content: text must not be empty")
    with pytest.raises(GenerationError, match="text must not be empty"):
        generate_cached(make(server), ask("What burst?"), cache)
    assert server.counts["messages"] == 1


@pytest.mark.parametrize(
    ("status", "error_type"), [(529, "overloaded_error"), (429, "rate_limit_error")], ids=["529", "429"]
)
def test_transient_error_then_success(server: AnthropicLoopback, cache: Cache, status: int, error_type: str) -> None:
    server.fail_next(status, error_type, "Overloaded" if status == 529 else "Number of requests exceeded")
    answer = generate_cached(make(server), ask("What burst does the RateLimiter allow?"), cache)
    assert answer.stop_reason == "end_turn" and "20 requests" in answer.text
    assert server.counts["messages"] == 2
    assert [e.status for e in server.log] == [status, 200]


def test_retries_are_exactly_max_retries(server: AnthropicLoopback, cache: Cache) -> None:
    server.fail_next(529, "overloaded_error", "Overloaded", times=5)
    with pytest.raises(GenerationError, match="529"):
        generate_cached(make(server, max_retries=2), ask("What burst?"), cache)
    assert server.counts["messages"] == 3  # 1 + max_retries, deterministic


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_every_fault_kind_is_retried_then_answered(cache: Cache, kind: str) -> None:
    waits: list[float] = []
    plan = FaultPlan(rate=1.0, kinds=(kind,), max_consecutive=2)
    with AnthropicLoopback(faults=plan) as server:
        gen = make(server, max_retries=2, retry_base_delay_s=0.001, window=200_000, sleep=waits.append)
        answer = generate_cached(gen, ask("What burst does the RateLimiter allow?"), cache)
    assert answer.stop_reason == "end_turn" and "20 requests" in answer.text
    for endpoint in ("count_tokens", "messages"):
        assert [e.fault for e in server.log if e.endpoint == endpoint] == [kind, kind, None]
    assert len(waits) == 4 and server.faults.paid_twice == 0
    if kind == "429":
        assert waits == [0.002] * 4  # retry-after-ms honoured
    else:
        assert all(0.0 <= wait <= 0.002 for wait in waits)  # full jitter under base * 2**retry


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("malformed", "JSONDecodeError"),
        ("empty", "JSONDecodeError"),
        ("truncated", "the reply ended after 86 of its declared 172 bytes"),
        ("reset", "Connection reset"),
        ("wrong", "stop_reason end_turn and no text block"),
        ("500", "HTTP 500: Internal server error"),
    ],
)
def test_exhausted_retries_are_one_line_naming_the_last_failure(cache: Cache, kind: str, reason: str) -> None:
    with AnthropicLoopback(faults=FaultPlan(rate=1.0, kinds=(kind,), max_consecutive=10)) as server:
        gen = make(server, max_retries=1, retry_base_delay_s=0.0)
        with pytest.raises(GenerationError, match=reason) as err:
            generate_cached(gen, ask("What burst?"), cache)
    assert str(err.value).startswith("anthropic messages (claude-sonnet-5) failed after 2 attempts: ")
    assert "\n" not in str(err.value) and server.counts["messages"] == 2
    assert cache.count("generate:anthropic") == 0


def test_server_may_forbid_a_retry(server: AnthropicLoopback, cache: Cache) -> None:
    server.fail_next(503, "api_error", "maintenance")
    original = server.dispatch

    def no_retry(*args: object) -> tuple[int, bytes, dict]:
        status, payload, extra = original(*args)  # type: ignore[arg-type]
        return status, payload, {**extra, "x-should-retry": "false"} if status == 503 else extra

    server.dispatch = no_retry  # type: ignore[method-assign]
    with pytest.raises(GenerationError, match="HTTP 503 for claude-sonnet-5: maintenance"):
        generate_cached(make(server), ask("What burst?"), cache)
    assert server.counts["messages"] == 1


def test_batch_polls_and_results_are_retried(cache: Cache) -> None:
    plan = FaultPlan(rate=1.0, max_consecutive=2)  # every kind: a poll or a download is safe to repeat
    with AnthropicLoopback(faults=plan, fault_endpoints=frozenset({"batches.retrieve", "batches.results"})) as server:
        gen = make(server, poll_interval_s=0.01, retry_base_delay_s=0.0)
        answers = generate_many(gen, batch_requests(), cache, batch=True)
    assert [a.stop_reason for a in answers] == ["end_turn", "end_turn", "error"]
    assert server.counts["batches.create"] == 2  # the batch, then the errored entry's one retry
    assert sum(server.faults.injected.values()) >= 4


def test_context_window_exceeded_and_max_tokens_are_truncated(server: AnthropicLoopback, cache: Cache) -> None:
    gen = make(server)
    request = ask("What burst does the RateLimiter allow?")
    server.context_limit = gen.count_tokens(request) + 3  # the prompt fits, the answer does not
    answer = generate_cached(gen, request, cache)
    assert (answer.stop_reason, answer.truncated) == ("model_context_window_exceeded", True)
    assert answer.text == "[en]"
    short = generate_cached(gen, ask("What burst does the RateLimiter allow?", max_tokens=2), cache)
    assert (short.stop_reason, short.truncated, short.text) == ("max_tokens", True, "[en")


def test_stop_sequence_and_refusal_are_recorded(server: AnthropicLoopback, cache: Cache) -> None:
    gen = make(server)
    stopped = generate_cached(gen, ask("What burst does the RateLimiter allow?", stop_sequences=["allows"]), cache)
    assert (stopped.stop_reason, stopped.truncated, stopped.text) == ("stop_sequence", False, "[en] The RateLimiter ")
    assert server.bodies("messages")[0]["stop_sequences"] == ["allows"]
    refused = generate_cached(gen, ask("[[refuse]] What burst does the RateLimiter allow?"), cache)
    assert (refused.stop_reason, refused.truncated, refused.text) == ("refusal", False, "")


def test_count_tokens_is_called_once_and_cached(server: AnthropicLoopback, cache: Cache) -> None:
    gen = make(server, window=10_000, headroom=0)
    counter = GenerationCounter()
    first = generate_cached(gen, ask("What burst does the RateLimiter allow?", max_tokens=64), cache, counter)
    second = generate_cached(gen, ask("What burst does the RateLimiter allow?", max_tokens=32), cache, counter)
    assert first.stop_reason == second.stop_reason == "end_turn"
    assert server.counts["count_tokens"] == 1  # same input, different max_tokens: one count
    assert server.counts["messages"] == 2
    assert counter.token_counts == {"claude-sonnet-5": 1}
    body = server.bodies("count_tokens")[0]
    assert "max_tokens" not in body and body["model"] == "claude-sonnet-5"
    assert count_tokens_cached(gen, ask("What burst does the RateLimiter allow?"), cache) == first.usage.input_tokens


def test_window_check_refuses_to_send(server: AnthropicLoopback, cache: Cache) -> None:
    gen = make(server, window=60, headroom=0)
    request = ask("What burst does the RateLimiter allow?", max_tokens=64)
    answer = generate_cached(gen, request, cache)
    assert answer.stop_reason == "overflow" and answer.usage.input_tokens == 0
    assert server.counts["count_tokens"] == 1 and server.counts["messages"] == 0  # nothing sent


def test_cache_hit_sends_nothing_and_restamps_question_id(server: AnthropicLoopback, cache: Cache) -> None:
    gen = make(server)
    counter = GenerationCounter()
    first = generate_cached(gen, ask("What burst does the RateLimiter allow?"), cache, counter)
    before = dict(server.counts)
    again = generate_cached(gen, ask("What burst does the RateLimiter allow?", "q-other"), cache, counter)
    assert dict(server.counts) == before
    assert again.cached and not first.cached
    assert (again.text, again.usage, again.question_id) == (first.text, first.usage, "q-other")
    assert counter.cache_hits == {"claude-sonnet-5": 1} and counter.single["claude-sonnet-5"].requests == 1


def test_cache_key_ignores_metadata_and_transport_settings(server: AnthropicLoopback) -> None:
    gen_a, gen_b = make(server), make(server, max_retries=0, timeout_s=1.0)
    base = ask("What burst?")
    same = ask("What burst?", "another-id", metadata={"custom_id": "x1"})
    assert request_key(gen_a, base) == request_key(gen_b, same)
    for changed in (
        ask("What burst?", max_tokens=65),
        ask("What burst?", cache_prefix=True),
        ask("What burst?", stop_sequences=["\n"]),
        ask("What burst?", system="other"),
        ask("What burst?", model="claude-haiku-4-5"),
        ask("What burst now?"),
    ):
        assert request_key(gen_a, changed) != request_key(gen_a, base)


# --------------------------------------------------------------------------- message batches


def batch_requests() -> list[GenerationRequest]:
    return [
        ask("What burst does the RateLimiter allow?", "q1", metadata={"custom_id": "q1"}),
        ask("When do deployments happen?", "q2", metadata={"custom_id": "q2"}),
        ask("[[batch-error]] What is the parking allowance?", "q3", metadata={"custom_id": "q3"}),
    ]


# --------------------------------------------------------------------------- keys and configuration


def test_missing_key_is_a_clear_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(GenerationError) as err:
        anthropic_generator()
    message = str(err.value)
    assert "ANTHROPIC_API_KEY" in message and "generator=local" in message and "\n" not in message


def test_key_from_environment(server: AnthropicLoopback, cache: Cache, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    gen = anthropic_generator(base_url=server.url, window=0)
    assert generate_cached(gen, ask("What burst does the RateLimiter allow?"), cache).stop_reason == "end_turn"
    headers = server.log[0].headers
    assert "test-key" in (headers.get("x-api-key"), headers.get("authorization", "").removeprefix("Bearer "))


def test_config_builds_a_working_generator(server: AnthropicLoopback, cache: Cache) -> None:
    cfg = yaml.safe_load((CONF / "anthropic.yaml").read_text(encoding="utf-8"))
    gen = make_generator(cfg, api_key="test-key", base_url=server.url)
    assert isinstance(gen, AnthropicGenerator)
    assert (gen.window, gen.precount, gen.batch_enabled) == (1_000_000, True, False)
    assert make_generator(cfg, api_key="k", model="claude-haiku-4-5", base_url=server.url).window == 200_000
    prompts = prompts_for(cfg, "zh-Hans")
    assert refusal_for(cfg, "zh-Hans") == "我没有这方面的信息"
    assert "我没有这方面的信息" in prompts["system"] and "{refusal}" not in prompts["system"]
    assert "I don't have that information" in prompts_for(cfg, "en")["system"]
    request = build_request(
        "住宿标准是每晚多少钱？",
        CONTEXT,
        model=gen.model,
        max_tokens=cfg["max_tokens"],
        question_id="q-zh",
        cache_prefix=cfg["cache_prefix"],
        **prompts,
    )
    answer = generate_cached(gen, request, cache)
    assert answer.text == "[zh] 住宿标准为每晚不超过六百元。"
    # precount is on by default; cache_prefix counts the system prompt's and the context's prefix once each
    assert server.counts["count_tokens"] == 3


def test_local_and_anthropic_prompts_are_identical() -> None:
    anthropic_cfg = yaml.safe_load((CONF / "anthropic.yaml").read_text(encoding="utf-8"))
    local_cfg = yaml.safe_load((CONF / "local.yaml").read_text(encoding="utf-8"))
    assert anthropic_cfg["prompts"] == local_cfg["prompts"]
    assert anthropic_cfg["refusal"] == local_cfg["refusal"]
