"""The one HTTP rule (evalkit.http_call) for every client, against real loopback servers.

Every client evalkit has (the external retriever's own requests, generator=openai streamed and whole,
embedder=openai, generator=anthropic, reranker=cohere) x every way a server frames a reply (HTTP/1.0,
``Connection: close``, keep-alive) x every fault (a trickle, a huge body, not JSON, 100,000 levels deep,
a body shorter than its Content-Length): one line from the client's own error class, never a hang, a
RecursionError or a body held whole. A good reply reads through every framing too.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evalkit.http_call import DepthGuard, HttpError, loads_json, request
from tests.loopback.rule_server import FAULTS, FRAMINGS, RuleServer

TIMEOUT_S = 1.0
CAP_MB = 1.0

_SSE = (
    "".join(
        "data: "
        + json.dumps(
            {
                "id": "c1",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "m",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
        )
        + "\n\n"
        for delta, finish in (({"role": "assistant", "content": "Ann [d1]"}, None), ({}, "stop"))
    )
    + "data: [DONE]\n\n"
)
_EMBEDDINGS = {
    "object": "list",
    "data": [{"object": "embedding", "index": 0, "embedding": [0.1, 0.2, 0.3, 0.4]}],
    "model": "m",
    "usage": {"prompt_tokens": 1, "total_tokens": 1},
}
_MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-5",
    "content": [{"type": "text", "text": "Ann [d1]"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 3, "output_tokens": 2},
}
_RERANK = {"id": "r1", "results": [{"index": 0, "relevance_score": 0.9}], "meta": {"billed_units": {"search_units": 1}}}


def _ask(model: str) -> Any:
    from evalkit.answers.generation.request import build_request

    return build_request("Who wrote it?", "[d1] Ann wrote it.", model=model, max_tokens=16, system="Answer.")


def _raw(url: str) -> str:
    reply = request("POST", url + "/search", b"{}", timeout_s=TIMEOUT_S, max_bytes=int(CAP_MB * 1024 * 1024))
    return str(loads_json(reply.body))


def _openai_chat(url: str, stream: bool = True) -> str:
    from evalkit.answers.generation.openai_compat import OpenAICompatGenerator

    made = OpenAICompatGenerator.from_config({"name": "openai", "model": "m", "base_url": url + "/v1",
                                              "api_key_env": None, "timeout_s": TIMEOUT_S, "max_reply_mb": CAP_MB,
                                              "max_retries": 0, "stream": stream})  # fmt: skip
    return made.generate(_ask("m")).text


def _openai_embed(url: str) -> str:
    from evalkit.retrieval.embedding.openai_compat import OpenAICompatEmbedder
    from evalkit.retrieval.embedding.settings import EmbedderSettings

    settings = EmbedderSettings(
        name="openai",
        model="m",
        dimension=4,
        base_url=url + "/v1",
        api_key_env=None,
        timeout_s=TIMEOUT_S,
        max_reply_mb=CAP_MB,
        max_retries=0,
    )
    return str(OpenAICompatEmbedder(settings).embed_batch(["a"], "passage").shape)


def _anthropic(url: str) -> str:
    from evalkit.answers.generation.anthropic import AnthropicGenerator

    made = AnthropicGenerator.from_config(
        {"name": "anthropic", "model": "claude-sonnet-5", "base_url": url, "timeout_s": TIMEOUT_S,
         "max_reply_mb": CAP_MB, "max_retries": 0, "precount": False},
        api_key="k",
    )  # fmt: skip
    return made.generate(_ask("claude-sonnet-5")).text


def _cohere(url: str) -> str:
    from evalkit.retrieval.rerank.cohere import CohereReranker
    from evalkit.retrieval.settings import RerankerSettings

    return str(
        CohereReranker(
            RerankerSettings(name="cohere", base_url=url, timeout_s=TIMEOUT_S, max_reply_mb=CAP_MB, max_retries=0),
            api_key="k",
        ).score_pairs("q", ["d"])
    )


def _errors() -> dict[str, type[Exception]]:
    from evalkit.answers.generation.request import GenerationError
    from evalkit.retrieval.embedding.base import EmbeddingError
    from evalkit.retrieval.rerank.base import RerankError

    return {
        "raw": HttpError,
        "openai-chat": GenerationError,
        "openai-whole": GenerationError,
        "openai-embed": EmbeddingError,
        "anthropic": GenerationError,
        "cohere": RerankError,
    }


CLIENTS: dict[str, tuple[Callable[[str], str], bytes, str]] = {
    "raw": (_raw, b'{"results": [[]]}', "application/json"),
    "openai-chat": (_openai_chat, _SSE.encode(), "text/event-stream"),
    "openai-whole": (
        lambda url: _openai_chat(url, stream=False),
        json.dumps(
            {
                "id": "c1",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": "Ann [d1]"}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
            }
        ).encode(),
        "application/json",
    ),
    "openai-embed": (_openai_embed, json.dumps(_EMBEDDINGS).encode(), "application/json"),
    "anthropic": (_anthropic, json.dumps(_MESSAGE).encode(), "application/json"),
    "cohere": (_cohere, json.dumps(_RERANK).encode(), "application/json"),
}
SAYS = {
    "trickle": "no whole reply within timeout_s=1 s",
    "huge": "byte cap",
    "malformed": "",
    "deep": "nested deeper than 64 levels",
    "short": "the reply ended after",
}


@pytest.mark.parametrize("framing", FRAMINGS)
@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_a_good_reply_reads_through_every_framing(client: str, framing: str) -> None:
    call, body, content_type = CLIENTS[client]
    with RuleServer(framing, "ok", body, content_type) as server:
        assert call(server.url)
        assert server.requests == 1


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("framing", FRAMINGS)
@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_every_fault_is_one_line_from_the_clients_own_error(client: str, framing: str, fault: str) -> None:
    call, body, content_type = CLIENTS[client]
    with RuleServer(framing, fault, body, content_type) as server, pytest.raises(_errors()[client]) as err:
        call(server.url)
    line = str(err.value)
    assert "\n" not in line and "Traceback" not in line and len(line) < 700, line
    assert SAYS[fault] in line, line
    if fault in ("huge", "deep"):  # the same request gets the same reply: never retried (max_retries=0 anyway)
        assert not getattr(err.value, "retryable", False)
    elif client == "raw":  # a trickle, a body not JSON or cut short: another attempt may get through
        assert err.value.retryable  # type: ignore[attr-defined]
    assert server.requests == 1


def test_a_huge_reply_is_refused_with_memory_bounded_by_the_cap() -> None:
    cap = 1024 * 1024
    with RuleServer("http10", "huge") as server:
        tracemalloc.start()
        try:
            with pytest.raises(HttpError, match="byte cap") as err:
                request("GET", server.url, None, timeout_s=30.0, max_bytes=cap)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert not err.value.retryable
    assert peak < 8 * cap, peak  # the server sent up to 200 MB; what was held stayed near the cap


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://host/x", "not-a-url", "http://", "http://h:0/"])
def test_only_http_and_https_urls_with_a_host_are_called(url: str) -> None:
    with pytest.raises(HttpError) as err:
        request("GET", url, None, timeout_s=1.0, max_bytes=100)
    assert not err.value.retryable


def test_the_depth_guard_reads_strings_escapes_and_pieces() -> None:
    text = json.dumps({"a": ["[[[[" * 40, '\\"[[[', {"b": [1, 2, {"c": "]]]}}}"}]}]}).encode()
    guard = DepthGuard(limit=5)
    for i in range(len(text)):  # fed one byte at a time: escapes split across pieces
        guard.feed(text[i : i + 1])
    assert guard.depth == 0 and not guard.in_string
    with pytest.raises(HttpError, match="deeper than 5"):
        DepthGuard(limit=5).feed(b'{"x": "\\\\", "y": [[[[[[]]]]]]}')


def _judge(url: str, cap_mb: float = CAP_MB) -> str:
    from evalkit.answers.judge import JudgeRow, judge_answers, ragas_llm

    llm = ragas_llm("claude-sonnet-5", url, "k", 64, max_retries=0, timeout_s=TIMEOUT_S, max_reply_mb=cap_mb)
    [score] = judge_answers([JudgeRow("q1", "Who wrote it?", "Ann wrote it.", "Ann.")], llm)
    return score.note


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("framing", FRAMINGS)
def test_the_judges_async_client_follows_the_rule(framing: str, fault: str) -> None:
    """The advisory judge (ragas over AsyncAnthropic) gets the same rule: its row's note names the limit."""
    with RuleServer(framing, fault, json.dumps(_MESSAGE).encode()) as server:
        note = _judge(server.url)
    assert note.startswith("judge error:") and "\n" not in note, note
    assert SAYS[fault] in note, note


def test_a_streamed_reply_with_an_endless_line_is_refused_under_a_larger_cap() -> None:
    """An event stream's line is capped at 1 MB whatever max_reply_mb allows: an SDK's event decoder copies
    its line buffer on every piece, so an 8 MB line cost several copies per request in flight."""
    from evalkit.answers.generation.openai_compat import OpenAICompatGenerator
    from evalkit.answers.generation.request import GenerationError

    with RuleServer("close", "huge", b"", "text/event-stream") as server:
        made = OpenAICompatGenerator.from_config({"name": "openai", "model": "m", "base_url": server.url + "/v1",
                                                  "api_key_env": None, "timeout_s": 30.0, "max_reply_mb": 8.0,
                                                  "max_retries": 0})  # fmt: skip
        with pytest.raises(GenerationError, match="event stream has a line over the 1,048,576 byte cap"):
            made.generate(_ask("m"))


def test_a_whole_reply_on_one_long_line_is_read_under_the_cap() -> None:
    """The line cap is for event streams only: a 2 MB embeddings reply on one line reads whole."""
    from evalkit.retrieval.embedding.openai_compat import OpenAICompatEmbedder
    from evalkit.retrieval.embedding.settings import EmbedderSettings

    n, dimension = 64, 1536
    body = {**_EMBEDDINGS, "data": [{"object": "embedding", "index": i, "embedding": [0.123456789] * dimension}
                                    for i in range(n)]}  # fmt: skip
    raw = json.dumps(body, separators=(",", ":")).encode()
    assert len(raw) > 1024 * 1024 and b"\n" not in raw
    with RuleServer("keepalive", "ok", raw) as server:
        settings = EmbedderSettings(name="openai", model="m", dimension=dimension, base_url=server.url + "/v1",
                                    api_key_env=None, timeout_s=30.0, max_reply_mb=8.0, max_retries=0)  # fmt: skip
        vectors = OpenAICompatEmbedder(settings).embed_batch(["a"] * n, "passage")
    assert vectors.shape == (n, dimension)


def test_after_a_failed_request_the_queued_ones_are_not_sent(tmp_path: Path) -> None:
    """Six requests, four in flight, every one trickled past its deadline: the four fail, the other two are
    dropped (sending them would cost a further deadline each before the run could say what is wrong)."""
    from evalkit.answers.generation.batches import generate_many
    from evalkit.answers.generation.openai_compat import OpenAICompatGenerator
    from evalkit.answers.generation.request import GenerationError, build_request
    from evalkit.cache import Cache

    with RuleServer("http10", "trickle") as server, Cache(tmp_path / "c.sqlite") as cache:
        made = OpenAICompatGenerator.from_config({"name": "openai", "model": "m", "base_url": server.url + "/v1",
                                                  "api_key_env": None, "timeout_s": TIMEOUT_S, "max_retries": 0,
                                                  "concurrency": 4})  # fmt: skip
        asked = [
            build_request(f"Who wrote part {i}?", "[d1] Ann wrote it.", model="m", max_tokens=16, system="Answer.")
            for i in range(6)
        ]
        with pytest.raises(GenerationError, match="no whole reply within"):
            generate_many(made, asked, cache, workers=4)
    assert server.requests == 4
