"""Any OpenAI-compatible chat endpoint through the official ``openai`` SDK (``generator=openai``).

OpenAI, Azure OpenAI's v1 API, vLLM, TGI, Ollama and llama.cpp's server all take the
same ``POST {base_url}/chat/completions`` body. The request is streamed
(``stream: true``) so the time to the first content token is measured per request;
the reply's usage comes from the final chunk (``stream_options.include_usage``).

Rules (the transport's in :mod:`evalkit.openai_api`, shared with ``embedder=openai``):
- Every request follows the one HTTP rule (:mod:`evalkit.http_call`): a whole-request
  deadline (``timeout_s``, connect to last byte, on closing and keep-alive servers alike),
  a reply cap (``max_reply_mb``), depth-safe JSON, a body cut short refused.
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

import dataclasses
import logging
import random
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from evalkit import openai_api
from evalkit.answers.generation.base import Generator
from evalkit.answers.generation.cached import overflow_answer
from evalkit.answers.generation.request import TRUNCATING_STOPS, GenerationError, GenerationRequest
from evalkit.records import Answer, Usage
from evalkit.retry import RetryPolicy, Transient

if TYPE_CHECKING:
    from evalkit.answers.generation.settings import OpenAISettings

log = logging.getLogger(__name__)

WHAT = "generator=openai"
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


_EVENTS = {"Accept": "text/event-stream"}


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
        settings: OpenAISettings,
        *,
        sleep: Callable[[float], None] = time.sleep,
        jitter: random.Random | None = None,
    ) -> None:
        """``settings``: the frozen record the config was read into, kept whole (``sleep``, ``jitter``: for tests)."""
        self.settings = settings
        self.model = settings.model
        self.base_url = openai_api.check_base_url(settings.base_url, "generator.base_url", GenerationError)
        self.api_key_env = settings.api_key_env
        self.window = settings.window
        self.headroom = settings.headroom
        self.stream = settings.stream
        self.concurrency = settings.concurrency
        self.timeout_s = settings.timeout_s
        self.sampling: dict[str, Any] = {"temperature": settings.temperature, "seed": settings.seed}
        self.extra_body = dict(settings.extra_body)
        self.retry = RetryPolicy(
            settings.max_retries, settings.retry_base_delay_s, settings.retry_max_delay_s, settings.retry_deadline_s
        )
        self._sleep = sleep
        self._jitter = jitter if jitter is not None else random.Random()
        self._sdk = openai_api.sdk(GenerationError, WHAT)
        self._client = openai_api.make_client(
            self._sdk,
            settings.api_key_env,
            self.base_url,
            settings.timeout_s,
            int(settings.max_reply_mb * 1024 * 1024),
            WHAT,
            GenerationError,
        )

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], **overrides: Any) -> OpenAICompatGenerator:
        """Build from ``conf/generator/openai.yaml`` (a mapping, read strictly, or its typed settings); an override
        naming a setting replaces it in the record, ``sleep`` and ``jitter`` go to the constructor."""
        from evalkit.answers.generation.settings import OpenAISettings, read_generator_settings

        settings = read_generator_settings(cfg, default_name="openai")
        if not isinstance(settings, OpenAISettings):
            raise GenerationError(f"generator.name: {settings.name!r} is not generator=openai")
        fields = {item.name for item in dataclasses.fields(settings)}
        settings = dataclasses.replace(settings, **{k: v for k, v in overrides.items() if k in fields})
        return cls(settings, **{k: v for k, v in overrides.items() if k not in fields})

    def key_params(self) -> Mapping[str, Any]:
        # What changes the answer besides the request: the sampling and any extra body fields (never the URL,
        # the key, timeouts or retries). Streaming or not gives the same answer.
        return {**self.sampling, "extra_body": self.extra_body}

    # ----------------------------------------------------------------------- one request

    def generate(self, request: GenerationRequest) -> Answer:
        body = chat_body(request, self.sampling, stream=self.stream)
        what = f"openai-compatible chat ({request.model} at {self.base_url})"
        try:
            return openai_api.call(
                self._sdk,
                lambda: self._attempt(body, request),
                what=what,
                policy=self.retry,
                error=GenerationError,
                sleep=self._sleep,
                jitter=self._jitter,
            )
        except self._sdk.APIStatusError as err:
            reason = openai_api.api_message(err)
            said = f"{reason} {openai_api.error_kind(err)}".lower()
            if err.status_code in (400, 413, 422) and any(s in said for s in _TOO_LONG):
                return overflow_answer(self, request, why=reason)
            line = openai_api.status_line(
                err.status_code,
                reason,
                base_url=self.base_url,
                model=request.model,
                api_key_env=self.api_key_env,
                path="/chat/completions",
            )
            raise GenerationError(line) from err

    def _attempt(self, body: dict[str, Any], request: GenerationRequest) -> Answer:
        """One call: streamed chunks read until the last byte (the transport holds the deadline)."""
        start = time.monotonic()
        extra = {**self.extra_body}
        if not self.stream:
            done = self._client.chat.completions.create(**body, extra_body=extra or None)
            return self._answer(request, _full_text(done), _finish(done), done.usage, None, time.monotonic() - start)
        first: float | None = None
        parts: list[str] = []
        finish: str | None = None
        usage: Any = None
        # Accept: an event stream (as the SSE spec asks), so the transport caps its lines (http_call.LineGuard).
        stream = self._client.chat.completions.create(**body, extra_body=extra or None, extra_headers=_EVENTS)
        try:
            for chunk in stream:
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


def _full_text(completion: Any) -> str:
    choices = getattr(completion, "choices", None) or []
    if not choices:
        raise Transient("an impossible reply: no choices")
    return str(getattr(choices[0].message, "content", "") or "")


def _finish(completion: Any) -> str | None:
    choices = getattr(completion, "choices", None) or []
    return choices[0].finish_reason if choices else None
