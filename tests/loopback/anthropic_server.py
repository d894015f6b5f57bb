"""A loopback HTTP server that speaks Anthropic's Messages, count_tokens and Message Batches wire formats.

It binds 127.0.0.1 on a free port and serves from a background thread, so the
real ``anthropic`` SDK (``base_url=server.url``) can be tested without a
network. Everything it answers is deterministic:

- the model answers from the context: the context line sharing the most words
  with the question (the last line of the last user turn), or the refusal
  string when no line shares enough; ``answers`` can script replies by trigger;
- tokens are counted with a toy tokenizer (a word, a CJK character or a
  punctuation mark is one token), the same for ``count_tokens`` and usage;
- a prompt over ``context_limit`` is the real HTTP 400
  ``prompt is too long: N tokens > M maximum``; a prompt that fits but whose
  answer would not ends with ``model_context_window_exceeded``;
- prompt caching: the blocks up to the last ``cache_control`` mark form the
  prefix; the first time a prefix is seen it is billed as
  ``cache_creation_input_tokens``, afterwards as ``cache_read_input_tokens``
  a prefix shorter than ``min_cacheable`` toy tokens is not cached (both fields 0), as the
  real API does below its minimum. Without any mark both fields come back ``null``;
- failures are scripted (``fail_next``) with the real error body and a
  ``retry-after-ms`` header so the SDK's retries take a millisecond;
- flaky-API faults are injected at a seeded rate (``faults=FaultPlan(...)``, see
  :mod:`tests.loopback.faults`) on ``messages`` and ``count_tokens``; a ``wrong`` reply is
  an ``end_turn`` message with no text block. A faulted request never touches the
  prompt-cache state, so usage comes back as in a clean run, unless ``lost_replies_processed``:
  then a lost or broken reply (malformed, empty, truncated, reset, wrong) is sent after the
  model did the work, as a real provider's would be: it is billed (``billed``) and its prompt
  prefix is in the prompt cache for the resend;
- Message Batches: :mod:`tests.loopback.anthropic_batches` (``server.batches``).

Every request is counted by endpoint name (``messages``, ``count_tokens``,
``batches.create``, ``batches.retrieve``, ``batches.results``, ``batches.cancel``) and logged.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import threading
from collections import Counter, deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

import pytest

from tests.loopback.anthropic_batches import BATCH_ERROR_TRIGGER, BatchDesk
from tests.loopback.faults import FaultInjector, FaultPlan, write_fault
from tests.loopback.threaded import ThreadedLoopback

if TYPE_CHECKING:
    from evalkit.answers.generation.anthropic import AnthropicGenerator

JSON = Any

REFUSAL_EN = "I don't have that information"
REFUSAL_ZH = "我没有这方面的信息"
REFUSE_TRIGGER = "[[refuse]]"

_TOKEN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]|[^\W_]+|[^\w\s]", re.UNICODE)
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_CUSTOM_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_BATCH_PATH = re.compile(r"^/v1/messages/batches/(?P<id>[A-Za-z0-9_]+)(?P<action>/results|/cancel)?$")
_CUT = "x-loopback-cut"
LOST_KINDS = frozenset({"malformed", "empty", "truncated", "reset", "wrong"})
"""Faults that lose a reply the provider produced (the others refuse the request before any work)."""
__all__ = ["BATCH_ERROR_TRIGGER", "AnthropicLoopback"]


def toy_tokens(text: str) -> list[str]:
    """The loopback model's tokens: words, single CJK characters and punctuation marks."""
    return _TOKEN.findall(text)


@dataclass(frozen=True)
class ScriptedFailure:
    """An error reply given to the next ``POST /v1/messages`` instead of an answer."""

    status: int
    error_type: str
    message: str
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LoggedRequest:
    """One request as the server saw it."""

    endpoint: str
    method: str
    path: str
    headers: Mapping[str, str]
    body: JSON
    status: int
    fault: str | None = None
    """The injected fault kind, or None for a real reply."""


FAULTED_ENDPOINTS = frozenset({"messages", "count_tokens"})
"""Endpoints faulted by default: the paid and the counted calls."""
_FAULT_ERRORS = {
    "429": ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
    "500": ("api_error", "Internal server error"),
    "529": ("overloaded_error", "Overloaded"),
    "over-limit": ("invalid_request_error", "loopback: request limit reached (a client retrying forever?)"),
}


class AnthropicLoopback(ThreadedLoopback):
    """The fake Anthropic API. Use as a context manager or through the ``anthropic_server`` fixture."""

    def __init__(
        self,
        *,
        api_key: str = "test-key",
        context_limit: int = 200_000,
        batch_polls: int = 1,
        answers: Mapping[str, str] | None = None,
        faults: FaultPlan | None = None,
        fault_endpoints: frozenset[str] = FAULTED_ENDPOINTS,
        min_cacheable: int = 0,
        lost_replies_processed: bool = False,
    ) -> None:
        self.api_key = api_key
        self.faults = FaultInjector(faults)
        """Injected faults (none by default) and the clean replies served per request."""
        self.fault_endpoints = fault_endpoints
        self.context_limit = context_limit
        """Model window in toy tokens: input over it is a 400; input + output over it truncates."""
        self.min_cacheable = min_cacheable
        """Shortest prefix (toy tokens) the prompt cache takes; a shorter marked prefix is billed as plain input."""
        self.lost_replies_processed = lost_replies_processed
        """Lost or broken replies come after the work (billed, prompt cache written) instead of before it."""
        self.billed: list[dict[str, int]] = []
        """Usage of every Messages request the model processed, lost replies included: what the provider bills."""
        self.batches = BatchDesk(self.respond, _all_text, _error, lambda: self.url, batch_polls)
        self.answers: dict[str, str] = dict(answers or {})
        """Scripted replies: when a key occurs in the last user turn, its value is the answer."""
        self.counts: Counter[str] = Counter()
        self.log: list[LoggedRequest] = []
        self._failures: deque[ScriptedFailure] = deque()
        self._prefixes: set[str] = set()
        self._lock = threading.Lock()

    # -- scripting and inspection -----------------------------------------------------------------

    def fail_next(
        self, status: int, error_type: str, message: str, *, times: int = 1, retry_after_ms: int | None = 1
    ) -> None:
        """Answer the next ``times`` Messages calls with this error (and a tiny ``retry-after-ms``)."""
        headers = {"retry-after-ms": str(retry_after_ms)} if retry_after_ms is not None else {}
        with self._lock:
            self._failures.extend([ScriptedFailure(status, error_type, message, headers)] * times)

    @property
    def batch_polls(self) -> int:
        return self.batches.batch_polls

    @batch_polls.setter
    def batch_polls(self, polls: int) -> None:
        self.batches.batch_polls = polls

    def finish_batches(self) -> None:
        """Let every open batch end at its next retrieve."""
        self.batches.finish()

    def bodies(self, endpoint: str) -> list[JSON]:
        with self._lock:
            return [entry.body for entry in self.log if entry.endpoint == endpoint]

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        return _make_handler(self)

    # -- injected faults (handler threads) ---------------------------------------------------------

    def fault_for(self, method: str, path: str, raw: bytes) -> tuple[str, str | None]:
        """(request digest, fault kind or None) for a request to one of ``fault_endpoints``."""
        endpoint, _ = _endpoint(method, path)
        if endpoint not in self.fault_endpoints:
            return "", None
        return self.faults.decide(f"{endpoint} {path}", raw)

    def fault_reply(self, kind: str, method: str, path: str, headers: Mapping[str, str], raw: bytes) -> bytes:
        """The bytes a fault sends (an API error body, or a message with no text block), logged as a fault."""
        endpoint, _ = _endpoint(method, path)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        with self._lock:
            self.counts[endpoint] += 1
            self.log.append(LoggedRequest(endpoint, method, path, dict(headers), body, 0, fault=kind))
        if self.lost_replies_processed and kind in LOST_KINDS and endpoint == "messages" and body:
            self.respond(body)  # the work is done (and billed) before the reply is lost
        if kind in _FAULT_ERRORS:
            payload: JSON = _error(*_FAULT_ERRORS[kind])
        elif endpoint != "count_tokens":
            payload = {
                "id": "msg_wrong", "type": "message", "role": "assistant", "model": (body or {}).get("model", ""),
                "content": [], "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            }  # fmt: skip
        else:
            payload = {"input_tokens": -1}
        return json.dumps(payload).encode("utf-8")

    # -- dispatch (handler threads) -----------------------------------------------------------------

    def dispatch(self, method: str, path: str, headers: Mapping[str, str], raw: bytes) -> tuple[int, bytes, dict]:
        """(status, payload, extra headers) for one HTTP request."""
        endpoint, batch_id = _endpoint(method, path)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        extra: dict[str, str] = {}
        payload: JSON
        # The key arrives as x-api-key (the documented header) or, from anthropic 2.x, as a Bearer token.
        if self.api_key not in (headers.get("x-api-key"), headers.get("authorization", "").removeprefix("Bearer ")):
            status, payload = 401, _error("authentication_error", "invalid x-api-key")
        elif endpoint == "messages":
            status, payload, extra = self._messages(body)
        elif endpoint == "count_tokens":
            status, payload = 200, {"input_tokens": self._input_tokens(body)}
        elif endpoint == "batches.create":
            status, payload = self.batches.create(body)
        elif endpoint == "batches.retrieve":
            status, payload = self.batches.retrieve(batch_id)
        elif endpoint == "batches.cancel":
            status, payload = self.batches.cancel(batch_id)
        elif endpoint == "batches.results":
            fault = self.batches.take_results_fault()
            status, payload = self.batches.results(batch_id, fault)
            if fault == "cut" and status == 200:
                extra[_CUT] = "1"  # the handler sends half the stream, then closes
        else:
            status, payload = 404, _error("not_found_error", f"no route for {method} {path}")
        with self._lock:
            self.counts[endpoint] += 1
            self.log.append(LoggedRequest(endpoint, method, path, dict(headers), body, status))
        if isinstance(payload, bytes):
            return status, payload, extra
        return status, json.dumps(payload, ensure_ascii=False).encode("utf-8"), extra

    # -- the model ----------------------------------------------------------------------------------

    def _messages(self, body: JSON) -> tuple[int, JSON, dict[str, str]]:
        with self._lock:
            failure = self._failures.popleft() if self._failures else None
        if failure is not None:
            return failure.status, _error(failure.error_type, failure.message), dict(failure.headers)
        if "temperature" in body or "top_p" in body:  # anthropic 2.x sends neither; catch a client that would
            return 400, _error("invalid_request_error", "temperature/top_p: unexpected field"), {}
        status, reply = self.respond(body)
        return status, reply, {}

    def respond(self, body: JSON) -> tuple[int, JSON]:
        """The Messages reply (status, JSON) to one request body; shared by single calls and batches."""
        total = self._input_tokens(body)
        if total > self.context_limit:
            return 400, _error(
                "invalid_request_error", f"prompt is too long: {total} tokens > {self.context_limit} maximum"
            )
        last_user = _texts([m for m in body["messages"] if m["role"] == "user"][-1]["content"])
        text, stop = self._answer("\n".join(last_user)), "end_turn"
        stop_sequence = None
        for sequence in body.get("stop_sequences") or []:
            if sequence in text:
                text, stop, stop_sequence = text[: text.index(sequence)], "stop_sequence", sequence
                break
        if REFUSE_TRIGGER in "\n".join(last_user):
            text, stop = "", "refusal"
        tokens = toy_tokens(text)
        room = self.context_limit - total
        if len(tokens) > body["max_tokens"]:
            text, stop = _first_tokens(text, body["max_tokens"]), "max_tokens"
        elif len(tokens) > room:
            text, stop = _first_tokens(text, room), "model_context_window_exceeded"
        created, read = self._cache_usage(body)
        usage = {
            "input_tokens": total - (created or 0) - (read or 0),
            "output_tokens": max(1, len(toy_tokens(text))),
            "cache_creation_input_tokens": created,
            "cache_read_input_tokens": read,
        }
        with self._lock:
            self.billed.append({name: value or 0 for name, value in usage.items()})
        return 200, {
            "id": "msg_" + hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:24],
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [{"type": "text", "text": text}] if text else [],
            "stop_reason": stop,
            "stop_sequence": stop_sequence,
            "usage": usage,
        }

    def _answer(self, prompt: str) -> str:
        for trigger, reply in self.answers.items():
            if trigger in prompt:
                return reply
        lines = [line.strip() for line in prompt.splitlines() if line.strip()]
        question, context = lines[-1], lines[:-1]
        wanted = {t.lower() for t in toy_tokens(question) if len(t) >= 3 or _CJK.match(t)}
        best, best_score = "", 0
        for line in context:
            score = len(wanted & {t.lower() for t in toy_tokens(line)})
            if score > best_score:
                best, best_score = line, score
        if best_score >= 2:
            return best
        return REFUSAL_ZH if _CJK.search(question) else REFUSAL_EN

    def _input_tokens(self, body: JSON) -> int:
        return sum(len(toy_tokens(text)) for text, _ in _blocks(body))

    def _cache_usage(self, body: JSON) -> tuple[int | None, int | None]:
        blocks = _blocks(body)
        marked = [i for i, (_, mark) in enumerate(blocks) if mark]
        if not marked:
            return None, None
        prefix = [text for text, _ in blocks[: marked[-1] + 1]]
        digest = hashlib.sha256(json.dumps([body["model"], prefix]).encode()).hexdigest()
        size = sum(len(toy_tokens(text)) for text in prefix)
        if size < self.min_cacheable:
            return 0, 0  # below the minimum: marked, but nothing is cached (nor billed as a write)
        with self._lock:
            seen = digest in self._prefixes
            self._prefixes.add(digest)
        return (0, size) if seen else (size, 0)


def _endpoint(method: str, path: str) -> tuple[str, str]:
    path = path.split("?", 1)[0]
    if method == "POST" and path == "/v1/messages":
        return "messages", ""
    if method == "POST" and path == "/v1/messages/count_tokens":
        return "count_tokens", ""
    if method == "POST" and path == "/v1/messages/batches":
        return "batches.create", ""
    match = _BATCH_PATH.match(path)
    if method == "POST" and match and match["action"] == "/cancel":
        return "batches.cancel", match["id"]
    if method == "GET" and match and match["action"] != "/cancel":
        return ("batches.results" if match["action"] else "batches.retrieve"), match["id"]
    return "unknown", ""


def _error(error_type: str, message: str) -> JSON:
    """The API's error body."""
    return {"type": "error", "error": {"type": error_type, "message": message}, "request_id": "req_loopback"}


def _all_text(body: JSON) -> str:
    """Every text block of a request body, joined (batch entries are scripted by triggers in it)."""
    return "\n".join(text for text, _ in _blocks(body))


def _texts(content: JSON) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [block.get("text", "") for block in content if block.get("type") == "text"]


def _blocks(body: JSON) -> list[tuple[str, bool]]:
    """(text, has cache_control) for the system blocks, then every message block, in prompt order."""
    out: list[tuple[str, bool]] = []
    system = body.get("system")
    if isinstance(system, str):
        out.append((system, False))
    elif system:
        out.extend((block.get("text", ""), "cache_control" in block) for block in system)
    for message in body.get("messages") or []:
        content = message["content"]
        if isinstance(content, str):
            out.append((content, False))
        else:
            out.extend((block.get("text", ""), "cache_control" in block) for block in content)
    return out


def _first_tokens(text: str, n: int) -> str:
    """The shortest prefix of ``text`` holding its first ``n`` toy tokens."""
    if n <= 0:
        return ""
    matches = list(_TOKEN.finditer(text))
    return text if len(matches) <= n else text[: matches[n - 1].end()]


def _make_handler(server: AnthropicLoopback) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        # HTTP/1.0: one request per connection, so shutdown never waits on an idle keep-alive socket.
        protocol_version = "HTTP/1.0"

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            headers = {name.lower(): value for name, value in self.headers.items()}
            digest, kind = server.fault_for(self.command, self.path, raw)
            if kind is not None:
                fault = server.fault_reply(kind, self.command, self.path, headers, raw)
                write_fault(self, kind, fault, retry_after_ms=server.faults.plan.retry_after_ms)
                server.faults.record(digest, kind)
                return
            status, payload, extra = server.dispatch(self.command, self.path, headers, raw)
            if digest and status == 200:
                server.faults.record(digest, None)
            cut = extra.pop(_CUT, None) is not None
            self.send_response(status)
            jsonl = self.path.endswith("/results") and status == 200
            self.send_header("Content-Type", "application/binary" if jsonl else "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("request-id", "req_loopback")
            for name, value in extra.items():
                self.send_header(name, value)
            self.end_headers()
            if cut:  # half the lines of the promised length, then an orderly close
                lines = payload.splitlines(keepends=True)
                self.wfile.write(b"".join(lines[: max(1, len(lines) // 2)]))
                self.close_connection = True
                return
            self.wfile.write(payload)

        do_GET = do_POST = _serve

        def log_message(self, format: str, *args: Any) -> None:
            """Silent: the request log is the record."""

    return _Handler


@pytest.fixture
def anthropic_server() -> Iterator[AnthropicLoopback]:
    """A started :class:`AnthropicLoopback`, stopped after the test."""
    with AnthropicLoopback() as server:
        yield server


def anthropic_generator(**keys: Any) -> AnthropicGenerator:
    """An AnthropicGenerator built from its settings record (``claude-sonnet-5`` unless told): keys naming a
    setting go into the record, the rest (``api_key``, ``sleep``, ``jitter``) to the constructor."""
    from evalkit.answers.generation.anthropic import AnthropicGenerator
    from evalkit.answers.generation.settings import AnthropicSettings

    fields = {item.name for item in dataclasses.fields(AnthropicSettings)}
    record = AnthropicSettings(
        **{"name": "anthropic", "model": "claude-sonnet-5", **{k: v for k, v in keys.items() if k in fields}}
    )
    return AnthropicGenerator(record, **{k: v for k, v in keys.items() if k not in fields})
