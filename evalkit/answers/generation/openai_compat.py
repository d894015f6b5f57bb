"""Any OpenAI-compatible chat endpoint through the official ``openai`` SDK (``generator=openai``).

OpenAI, Azure OpenAI's v1 API, vLLM, TGI, Ollama and llama.cpp's server all take the
same ``POST {base_url}/chat/completions`` body. The request is streamed
(``stream: true``) so the time to the first content token is measured per request;
the reply's usage comes from the final chunk (``stream_options.include_usage``).

Rules:
- Every attempt runs under a whole-request deadline (``timeout_s``, connect to last
  byte; :mod:`evalkit.http_deadline`), so a server that trickles its body cannot
  hold a request longer than that.
- Retries are evalkit's (:mod:`evalkit.retry`), the SDK's own loop is off
  (``max_retries=0``): 408/409/429/5xx (``Retry-After`` honoured), lost or reset
  connections, a deadline passed, bodies that are not JSON and replies that cannot
  be right (no choice, no finish reason). Any other 4xx is one
  :class:`GenerationError` line at once: a 401/403 names the key's variable (never
  the key), a 404 names the model and the URL; a prompt the server says is too long
  is an ``overflow`` answer.
- The key is read from the environment variable ``api_key_env`` names (null: no
  key, for a local server) and never printed, logged or put in a cache key. The
  cache key is the request body as sent (model, messages, max_tokens, stops,
  temperature, seed, ``extra_body``): never the URL, key, timeouts or retries.
- Answers carry the model id configured (the price lookup's id), not the one the
  server echoes (llama.cpp echoes a file path, OpenAI a dated snapshot).
"""

from __future__ import annotations

import json
import logging
import os
import random
import time
from collections.abc import Callable, Mapping
from typing import Any

from evalkit.answers.generation.base import Generator
from evalkit.answers.generation.cached import overflow_answer
from evalkit.answers.generation.request import TRUNCATING_STOPS, GenerationError, GenerationRequest
from evalkit.http_deadline import Deadline, DeadlineExceeded, run_with_deadline, shutdown_response
from evalkit.records import Answer, Usage
from evalkit.retry import RetriesExhausted, RetryPolicy, Transient, call_with_retries

log = logging.getLogger(__name__)

INSTALL_HINT = "pip install openai==1.109.1 (a default dependency of evalkit)"
STOPS = {"stop": "end_turn", "length": "max_tokens"}
"""OpenAI finish reasons in evalkit's names (the local backend's mapping); others are kept as sent."""
_TOO_LONG = (
    "context_length_exceeded",
    "exceed_context_size",
    "exceeds the available context size",
    "maximum context length",
    "context length",
    "too many tokens",
    "prompt is too long",
)
"""How OpenAI, vLLM, llama.cpp and TGI say a prompt does not fit (lower-case substrings of the error)."""


def _sdk() -> Any:
    try:
        import openai
    except ImportError as exc:  # pragma: no cover - a default dependency
        raise GenerationError(f"generator=openai needs the package 'openai': {INSTALL_HINT}") from exc
    return openai


def read_api_key(env: str | None, backend: str) -> str:
    """The key from ``env`` ('' when ``env`` is None: a server without keys); a one-line error when unset."""
    if env is None:
        return ""
    key = os.environ.get(env, "")
    if not key:
        raise GenerationError(
            f"{env} is not set: export it to use {backend}, or set api_key_env: null for a server that needs no key"
        )
    return key


def chat_body(request: GenerationRequest, settings: Mapping[str, Any], *, stream: bool) -> dict[str, Any]:
    """The chat-completions body: the request's turns (blocks joined, as generator=local) plus sampling."""
    messages = [{"role": "system", "content": request.system}] if request.system else []
    messages += [{"role": role, "content": "".join(blocks)} for role, blocks in request.messages]
    body: dict[str, Any] = {
        "model": request.model,
        "messages": messages,
        "max_tokens": request.max_tokens,
        "temperature": settings["temperature"],
    }
    if settings.get("seed") is not None:
        body["seed"] = settings["seed"]
    if request.stop_sequences:
        body["stop"] = list(request.stop_sequences)
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


class OpenAICompatGenerator(Generator):
    """One OpenAI-compatible chat endpoint; requests streamed, each under a whole-request deadline."""

    backend = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.openai.com/v1",
        api_key_env: str | None = "OPENAI_API_KEY",
        window: int | None = None,
        headroom: int = 0,
        temperature: float = 0.0,
        seed: int | None = 0,
        extra_body: Mapping[str, Any] | None = None,
        stream: bool = True,
        concurrency: int = 4,
        timeout_s: float = 120.0,
        max_retries: int = 4,
        retry_base_delay_s: float = 0.5,
        retry_max_delay_s: float = 60.0,
        retry_deadline_s: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
        jitter: random.Random | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise GenerationError(f"generator.base_url: {base_url!r} is not an http:// or https:// URL")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.window = window
        self.headroom = headroom
        self.stream = stream
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.sampling: dict[str, Any] = {"temperature": temperature, "seed": seed}
        self.extra_body = dict(extra_body or {})
        self.retry = RetryPolicy(max_retries, retry_base_delay_s, retry_max_delay_s, retry_deadline_s)
        self._sleep = sleep
        self._jitter = jitter if jitter is not None else random.Random()
        self._sdk = _sdk()
        key = read_api_key(api_key_env, "generator=openai")
        # max_retries=0: evalkit's loop retries. The SDK's timeout bounds each phase (connect, each read) by
        # the whole deadline; the deadline itself is enforced around each attempt (run_with_deadline).
        self._client = self._sdk.OpenAI(api_key=key, base_url=self.base_url, max_retries=0, timeout=timeout_s)

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], **overrides: Any) -> OpenAICompatGenerator:
        """Build from ``conf/generator/openai.yaml`` (a mapping, read strictly, or its typed settings)."""
        from evalkit.answers.generation.settings import OpenAISettings, read_generator_settings

        settings = read_generator_settings(cfg, default_name="openai")
        if not isinstance(settings, OpenAISettings):
            raise GenerationError(f"generator.name: {settings.name!r} is not generator=openai")
        args: dict[str, Any] = {
            "base_url": settings.base_url,
            "api_key_env": settings.api_key_env,
            "window": settings.window,
            "headroom": settings.headroom,
            "temperature": settings.temperature,
            "seed": settings.seed,
            "extra_body": dict(settings.extra_body),
            "stream": settings.stream,
            "concurrency": settings.concurrency,
            "timeout_s": settings.timeout_s,
            "max_retries": settings.max_retries,
            "retry_base_delay_s": settings.retry_base_delay_s,
            "retry_max_delay_s": settings.retry_max_delay_s,
            "retry_deadline_s": settings.retry_deadline_s,
        }
        args.update(overrides)
        return cls(str(args.pop("model", settings.model)), **args)

    def key_params(self) -> Mapping[str, Any]:
        # What changes the answer besides the request: the sampling and any extra body fields (never the URL,
        # the key, timeouts or retries). Streaming or not gives the same answer.
        return {**self.sampling, "extra_body": self.extra_body}

    # ----------------------------------------------------------------------- one request

    def generate(self, request: GenerationRequest) -> Answer:
        body = chat_body(request, self.sampling, stream=self.stream)
        what = f"openai-compatible chat ({request.model} at {self.base_url})"
        try:
            return self._with_retries(what, lambda deadline: self._attempt(body, request, deadline))
        except self._sdk.APIStatusError as err:
            reason = _api_message(err)
            said = f"{reason} {_error_kind(err)}".lower()
            if err.status_code in (400, 413, 422) and any(s in said for s in _TOO_LONG):
                return overflow_answer(self, request, why=reason)
            raise GenerationError(self._status_line(err.status_code, reason, request.model)) from err

    def _status_line(self, status: int, reason: str, model: str) -> str:
        where = f"{self.base_url}"
        if status in (401, 403):
            env = self.api_key_env or "(no key: api_key_env is null)"
            return f"{where} refused the key in {env} (HTTP {status}): {reason}"
        if status == 404:
            return f"{where}: model {model!r} not found, or no /chat/completions there (HTTP 404): {reason}"
        return f"{where} rejected the request for {model!r} (HTTP {status}): {reason}"

    def _attempt(self, body: dict[str, Any], request: GenerationRequest, deadline: Deadline) -> Answer:
        """One call: streamed chunks read until the last byte, checking the deadline after each."""
        start = time.monotonic()
        extra = {**self.extra_body}
        if not self.stream:
            done = self._client.chat.completions.create(**body, extra_body=extra or None)
            return self._answer(request, _full_text(done), _finish(done), done.usage, None, time.monotonic() - start)
        first: float | None = None
        parts: list[str] = []
        finish: str | None = None
        usage: Any = None
        stream = self._client.chat.completions.create(**body, extra_body=extra or None)
        deadline.on_expiry(lambda: shutdown_response(stream.response))
        try:
            for chunk in stream:
                deadline.check(f"chat completion from {self.base_url}")
                if getattr(chunk, "usage", None) is not None:
                    usage = chunk.usage
                for choice in chunk.choices or ():
                    text = getattr(choice.delta, "content", None) if choice.delta is not None else None
                    if text:
                        if first is None:
                            first = time.monotonic() - start
                        parts.append(text)
                    if choice.finish_reason:
                        finish = choice.finish_reason
        finally:
            stream.close()
        return self._answer(request, "".join(parts), finish, usage, first, time.monotonic() - start)

    def _answer(
        self, request: GenerationRequest, text: str, finish: str | None, usage: Any, first: float | None, total: float
    ) -> Answer:
        if finish is None:
            raise Transient("an impossible reply: no finish_reason (the stream ended early or was empty)")
        stop = STOPS.get(finish, finish)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(usage, "completion_tokens", 0) or 0)
        if prompt < 0 or completion < 0:
            raise Transient(f"an impossible reply: negative token counts ({prompt}, {completion})")
        cached_in = getattr(getattr(usage, "prompt_tokens_details", None), "cached_tokens", 0) or 0
        return Answer(
            question_id=request.question_id,
            text=text.strip(),
            backend=self.backend,
            model=request.model,
            usage=Usage(
                input_tokens=prompt - int(cached_in),
                output_tokens=completion,
                cache_read_input_tokens=int(cached_in),
                estimated=usage is None,
            ),
            stop_reason=stop,
            truncated=stop in TRUNCATING_STOPS,
            first_token_s=first,
            total_s=total,
        )

    # ----------------------------------------------------------------------- retries

    def _with_retries(self, what: str, send: Callable[[Deadline], Answer]) -> Answer:
        """``send`` under the whole-request deadline, retried by the shared policy; other status errors pass."""
        sdk = self._sdk
        import httpx  # the SDK's HTTP client: errors while iterating a stream reach us unwrapped

        def attempt() -> Answer:
            try:
                return run_with_deadline(send, self.timeout_s, what=what)
            except sdk.APIStatusError as err:
                if not self.retry.retryable(err.status_code, err.response.headers):
                    raise
                raise Transient(f"HTTP {err.status_code}: {_api_message(err)}", err.response.headers) from err
            except (
                sdk.APIConnectionError,
                sdk.APIResponseValidationError,
                sdk.APIError,
                httpx.TransportError,
                json.JSONDecodeError,
                DeadlineExceeded,
            ) as err:
                # A reset, a refused connection, a deadline passed, a body cut short or not JSON.
                raise Transient(f"{type(err).__name__}: {err.__cause__ or err}") from err

        try:
            return call_with_retries(attempt, self.retry, sleep=self._sleep, jitter=self._jitter)
        except RetriesExhausted as exc:
            raise GenerationError(f"{what} {exc}") from exc


def _full_text(completion: Any) -> str:
    choices = getattr(completion, "choices", None) or []
    if not choices:
        raise Transient("an impossible reply: no choices")
    return str(getattr(choices[0].message, "content", "") or "")


def _finish(completion: Any) -> str | None:
    choices = getattr(completion, "choices", None) or []
    return choices[0].finish_reason if choices else None


def _error_kind(err: Any) -> str:
    """The error body's ``type`` and ``code`` (llama.cpp: ``exceed_context_size_error``; OpenAI: a code)."""
    body = getattr(err, "body", None)
    return f"{body.get('type', '')} {body.get('code', '')}" if isinstance(body, Mapping) else ""


def _api_message(err: Any) -> str:
    """The server's ``error.message`` when present, else the SDK's text; one bounded line."""
    body = getattr(err, "body", None)
    message = body.get("message") if isinstance(body, Mapping) else None
    text = str(message or getattr(err, "message", None) or err)
    return " ".join(text.split())[:300]
