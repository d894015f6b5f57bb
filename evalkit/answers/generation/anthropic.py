"""Claude through the official ``anthropic`` SDK: single Messages calls, token counts and Message Batches.

Retries are evalkit's (:mod:`~evalkit.retry`, shared with the Cohere reranker), with the SDK's own loop
switched off (``max_retries=0``) so attempts are exactly ``1 + max_retries`` and the backoff is configurable
(``retry_base_delay_s``). Retried (the shared policy): 408/409/429/5xx but 501/505, 529 (OverloadedError)
included, lost or reset connections, bodies that are not JSON, empty or cut short, and replies that cannot be
right (a message with no text block and no stop reason that explains it, an unknown stop reason, a negative
token count). ``retry-after-ms`` / ``retry-after`` / ``x-should-retry`` are honoured. Exhausted retries are
one :class:`GenerationError` line naming the last failure. A batch is never resubmitted after a lost reply
(it may exist already): that is an error at once.

A lost reply may still have been billed (the provider did the work, the answer
never arrived): its attempt is added to the answer's usage as the provider bills
it, estimated from the reply that did arrive (its prompt, the cached part as a
cache *write*, its output), so a run under faults never records less than it paid.
Prompt caching is asked for (``cache_control``) only where the prefix reaches the
model's minimum cacheable length (:mod:`~evalkit.answers.generation.prompt_cache`, counted by the model).

Note: ``messages.create`` in anthropic 2.x takes no ``temperature``/``top_p``, so answers are not sampled
with a fixed seed: evalkit's cache is what makes a re-run reproducible.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import random
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from evalkit.answers.generation.anthropic_replies import count_problem, message_problem, results_problem
from evalkit.answers.generation.base import Generator
from evalkit.answers.generation.cached import overflow_answer
from evalkit.answers.generation.prompt_cache import (
    DEFAULT_MIN_CACHEABLE,
    cache_marks,
    min_cacheable_tokens,
    with_lost_attempts,
)
from evalkit.answers.generation.request import TRUNCATING_STOPS, GenerationError, GenerationRequest
from evalkit.answers.generation.settings import ANTHROPIC_API_KEY_ENV, AnthropicSettings, read_generator_settings
from evalkit.http_call import HttpError, http_error_in
from evalkit.http_sdk import sdk_client
from evalkit.records import Answer, Usage
from evalkit.retry import SHOULD_RETRY_HEADER, RetriesExhausted, RetryPolicy, Transient, call_with_retries

if TYPE_CHECKING:
    from anthropic import Anthropic
    from anthropic.types import Message

log = logging.getLogger(__name__)
T = TypeVar("T")

API_KEY_ENV = ANTHROPIC_API_KEY_ENV
_EPHEMERAL = {"type": "ephemeral"}
_TOO_LONG = "prompt is too long"  # the 400 message: "prompt is too long: N tokens > M maximum"
DEFAULT_WINDOWS: Mapping[str, int] = {
    "claude-sonnet-5": 1_000_000,
    "claude-haiku-4-5": 200_000,
}
"""Context windows by model id (conf/pricing/anthropic.yaml); a config's ``window`` or ``windows`` overrides."""


def _sdk() -> Any:
    """The ``anthropic`` package, imported on first use so evalkit imports without it."""
    try:
        import anthropic
    except ImportError as exc:  # pragma: no cover - the SDK is installed wherever this backend is used
        raise GenerationError(
            "generator=anthropic needs the package 'anthropic' (pip install anthropic==2.14.0); "
            "offline alternative: generator=local"
        ) from exc
    return anthropic


class AnthropicGenerator(Generator):
    """Claude Messages API; with ``batch`` the sweep's uncached requests go through Message Batches."""

    backend = "anthropic"
    batch_backend = "anthropic-batch"
    """Backend name on answers that came from a batch (billed at the batch multiplier)."""
    supports_batch = True
    min_cacheable: int | None = None
    """Minimum cacheable prefix in tokens; None: ``prompt_cache.MIN_CACHEABLE_TOKENS`` by model."""

    def __init__(
        self,
        settings: AnthropicSettings,
        *,
        api_key: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
        jitter: random.Random | None = None,
    ) -> None:
        """``settings``: the frozen record the config was read into, kept whole. ``api_key``: None reads
        ``$ANTHROPIC_API_KEY``; ``jitter``: the backoff's random source (seeded in tests), None: seeded by the OS."""
        key = api_key or os.environ.get(API_KEY_ENV, "")
        if not key:
            raise GenerationError(
                f"{API_KEY_ENV} is not set: export it to use generator=anthropic, or run offline with generator=local"
            )
        self.settings = settings
        self.model = settings.model
        windows = {**DEFAULT_WINDOWS, **settings.windows}
        self.window = settings.window if settings.window is not None else windows.get(settings.model)
        self.headroom = settings.headroom
        self.precount = settings.precount
        self.batch_enabled = settings.batch
        self.poll_interval_s = settings.poll_interval_s
        self.batch_timeout_s = settings.batch_timeout_s
        self.max_batch_requests = settings.max_batch_requests
        self.max_retries = settings.max_retries
        # Claude's servers say whether a retry may help (x-should-retry): the shared policy's hint parameter.
        self.retry = RetryPolicy(
            settings.max_retries,
            settings.retry_base_delay_s,
            settings.retry_max_delay_s,
            settings.retry_deadline_s,
            hint_header=SHOULD_RETRY_HEADER,
        )
        self._sleep = sleep
        self._jitter = jitter if jitter is not None else random.Random()
        self._sdk = _sdk()
        # The key is passed explicitly so the SDK never falls back to profiles or other credentials on disk.
        # max_retries=0: evalkit's loop retries; HTTP by evalkit's rule (http_call; the SDK 2.x is on httpx2).
        client = sdk_client(settings.timeout_s, int(settings.max_reply_mb * 1024 * 1024), "httpx2")
        self._client: Anthropic = self._sdk.Anthropic(
            api_key=key, base_url=settings.base_url, max_retries=0, http_client=client
        )

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], **overrides: Any) -> AnthropicGenerator:
        """Build from ``conf/generator/anthropic.yaml`` (a mapping, read strictly, or its typed settings); an
        override naming a setting (``model``, ``base_url``) replaces it in the record, ``api_key``, ``sleep`` and
        ``jitter`` go to the constructor."""
        settings = read_generator_settings(cfg, default_name="anthropic")
        if not isinstance(settings, AnthropicSettings):
            raise GenerationError(f"generator.name: {settings.name!r} is not generator=anthropic")
        fields = {item.name for item in dataclasses.fields(settings)}
        settings = dataclasses.replace(settings, **{k: v for k, v in overrides.items() if k in fields})
        return cls(settings, **{k: v for k, v in overrides.items() if k not in fields})

    # ----------------------------------------------------------------------- wire format

    def params(self, request: GenerationRequest, *, for_count: bool = False) -> dict[str, Any]:
        """Request body for ``messages.create`` (or ``count_tokens`` when ``for_count``).

        With ``cache_prefix``, ``cache_control: ephemeral`` marks the system block and the first block of the
        first user turn when that turn has more blocks after it (the shared context before the question),
        each only when the prefix up to it reaches the model's minimum cacheable length (:meth:`cacheable`).
        """
        wanted = request.cache_prefix and not for_count  # a mark changes no count: none is sent to the counter
        mark_system, mark_context = self.cacheable(request) if wanted else (False, False)
        messages: list[dict[str, Any]] = []
        marked_context = False
        for role, blocks in request.messages:
            content: list[dict[str, Any]] = []
            for i, text in enumerate(blocks):
                block: dict[str, Any] = {"type": "text", "text": text}
                if mark_context and not marked_context and role == "user" and i == 0 and len(blocks) > 1:
                    block["cache_control"] = dict(_EPHEMERAL)
                    marked_context = True
                content.append(block)
            messages.append({"role": role, "content": content})
        body: dict[str, Any] = {"model": request.model, "messages": messages}
        if request.system:
            body["system"] = [{"type": "text", "text": request.system}]
            if mark_system:
                body["system"][0]["cache_control"] = dict(_EPHEMERAL)
        if not for_count:
            body["max_tokens"] = request.max_tokens
            if request.stop_sequences:
                body["stop_sequences"] = list(request.stop_sequences)
        return body

    def cacheable(self, request: GenerationRequest) -> tuple[bool, bool]:
        """(system prompt, system + context block) reach the model's minimum cacheable length (its own counter)."""
        return cache_marks(request, self.min_cacheable or min_cacheable_tokens(request.model), self._prefix_tokens)

    def _prefix_tokens(self, body: dict[str, Any]) -> int:
        """Tokens of a prefix-only body, counted once per distinct prefix by this generator."""
        memo: dict[str, int] = self.__dict__.setdefault("_prefix_counts", {})
        key = json.dumps(body, sort_keys=True, ensure_ascii=False)
        if key not in memo:
            try:
                counted = self._call(
                    f"anthropic count_tokens ({body['model']}, cache prefix)",
                    lambda: self._client.messages.count_tokens(**body),
                    count_problem,
                )
                memo[key] = int(counted.input_tokens)
            except self._sdk.APIStatusError:
                memo[key] = DEFAULT_MIN_CACHEABLE  # uncountable (e.g. too long to count): mark it, harmlessly
        return memo[key]

    def to_answer(self, message: Message, question_id: str, *, backend: str | None = None) -> Answer:
        """An Answer from a Messages response (usage fields that come back null count as 0)."""
        usage = message.usage
        text = "".join(getattr(block, "text", "") for block in message.content if block.type == "text")
        stop = message.stop_reason or "end_turn"  # always set outside streaming; guard anyway
        return Answer(
            question_id=question_id,
            text=text,
            backend=backend or self.backend,
            model=message.model,
            usage=Usage(
                input_tokens=usage.input_tokens or 0,
                output_tokens=usage.output_tokens or 0,
                cache_creation_input_tokens=usage.cache_creation_input_tokens or 0,
                cache_read_input_tokens=usage.cache_read_input_tokens or 0,
            ),
            stop_reason=stop,
            truncated=stop in TRUNCATING_STOPS,
        )

    # ----------------------------------------------------------------------- single calls

    def generate(self, request: GenerationRequest) -> Answer:
        sdk = self._sdk
        params = self.params(request)
        lost: list[str] = []  # attempts whose reply was lost or broken: billed all the same

        def send() -> Message:
            try:
                return self._client.messages.create(**params)
            except (sdk.APIConnectionError, json.JSONDecodeError, sdk.APIResponseValidationError):
                lost.append("lost")
                raise

        def problem(message: Message) -> str | None:
            broken = message_problem(message)
            if broken is not None:
                lost.append("broken")
            return broken

        try:
            message = self._call(f"anthropic messages ({request.model})", send, problem)
        except sdk.BadRequestError as err:
            reason = _api_message(err)
            if _TOO_LONG in reason.lower():
                return overflow_answer(self, request, why=reason)
            raise GenerationError(f"anthropic rejected the request ({request.model}): {reason}") from err
        except sdk.APIStatusError as err:
            if err.status_code == 413:  # request body over the size limit: also "does not fit"
                return overflow_answer(self, request, why=_api_message(err))
            raise GenerationError(f"anthropic HTTP {err.status_code} for {request.model}: {_api_message(err)}") from err
        return with_lost_attempts(self.to_answer(message, request.question_id), len(lost))

    def count_tokens(self, request: GenerationRequest) -> int | None:
        """Input tokens by the model's own counter (``POST /v1/messages/count_tokens``)."""
        sdk = self._sdk
        params = self.params(request, for_count=True)
        try:
            counted = self._call(
                f"anthropic count_tokens ({request.model})",
                lambda: self._client.messages.count_tokens(**params),
                count_problem,
            )
        except sdk.BadRequestError as err:
            if _TOO_LONG in _api_message(err).lower():
                return None  # let the real call decide; it comes back as an overflow answer
            raise GenerationError(f"anthropic count_tokens rejected the request: {_api_message(err)}") from err
        except sdk.APIStatusError as err:
            raise GenerationError(f"anthropic count_tokens HTTP {err.status_code}: {_api_message(err)}") from err
        return int(counted.input_tokens)

    # ----------------------------------------------------------------------- retries

    def _call(
        self,
        what: str,
        send: Callable[[], T],
        problem: Callable[[T], str | None] = lambda _: None,
        *,
        resend_lost: bool = True,
    ) -> T:
        """``send()`` with retries; a non-retryable API status error passes through for the caller to map.

        ``resend_lost=False``: a request whose reply was lost or unreadable is not sent again (it may
        have been acted on: a second batch would be paid twice); that is a GenerationError at once.
        """
        sdk = self._sdk

        def attempt() -> T:
            try:
                result = send()
            except sdk.APIStatusError as err:
                if not self.retry.retryable(err.status_code, err.response.headers):
                    raise
                raise Transient(f"HTTP {err.status_code}: {_api_message(err)}", err.response.headers) from err
            except (sdk.APIConnectionError, json.JSONDecodeError, sdk.APIResponseValidationError, HttpError) as err:
                # A reset, a timeout, a body empty, not JSON or cut short; over the cap or too deep: one line at once.
                rule = http_error_in(err)
                if rule is not None and not rule.retryable:
                    raise GenerationError(f"{what}: {rule.reason}") from None
                reason = rule.reason if rule is not None else f"{type(err).__name__}: {err.__cause__ or err}"
                if not resend_lost:
                    raise GenerationError(
                        f"{what}: the reply was lost ({reason}); it may have been accepted, so it is not resent"
                    ) from err
                raise Transient(reason) from err
            broken = problem(result)
            if broken is not None:
                raise Transient(f"an impossible reply: {broken}")
            return result

        try:
            return call_with_retries(attempt, self.retry, sleep=self._sleep, jitter=self._jitter)
        except RetriesExhausted as exc:
            raise GenerationError(f"{what} {exc}") from exc

    # ----------------------------------------------------------------------- message batches

    def submit_batch(self, requests: Mapping[str, GenerationRequest]) -> str:
        items = [{"custom_id": cid, "params": self.params(request)} for cid, request in requests.items()]
        batch = self._call(
            "anthropic batches.create",
            lambda: self._client.messages.batches.create(requests=items),  # type: ignore[arg-type]
            lambda made: None if getattr(made, "id", None) else "a batch without an id",
            resend_lost=False,
        )
        return str(batch.id)

    def batch_status(self, batch_id: str) -> str:
        batch = self._call(
            f"anthropic batches.retrieve ({batch_id})",
            lambda: self._client.messages.batches.retrieve(batch_id),
            lambda got: None if getattr(got, "processing_status", None) else "a batch without a status",
        )
        return str(batch.processing_status)

    def batch_results(self, batch_id: str) -> dict[str, Answer]:
        """Answers by custom_id; errored, canceled and expired items become stop_reason ``error`` answers."""
        answers: dict[str, Answer] = {}
        # Read whole inside one attempt: a connection lost halfway through the JSONL retries the download.
        lines = self._call(
            f"anthropic batches.results ({batch_id})", lambda: self._read_results(batch_id), results_problem
        )
        for line in lines:
            result = line.result
            if result.type == "succeeded":
                answers[line.custom_id] = self.to_answer(result.message, "", backend=self.batch_backend)
                continue
            reason = str(result.type)
            if result.type == "errored":
                error = getattr(result.error, "error", None)
                reason = f"errored: {getattr(error, 'type', '')}: {getattr(error, 'message', '')}"
            answers[line.custom_id] = self._failed_item(reason)
            log.warning("batch %s item %s %s", batch_id, line.custom_id, reason)
        return answers

    def _read_results(self, batch_id: str) -> list[Any]:
        """Every line of the results stream; a stream cut mid-way is a lost connection (retried), not a crash."""
        import httpx2  # the SDK's own HTTP client; its errors while iterating a stream are not wrapped by the SDK

        try:
            return list(self._client.messages.batches.results(batch_id))
        except httpx2.TransportError as err:
            raise self._sdk.APIConnectionError(message=f"results stream cut: {err}", request=err.request) from err

    def _failed_item(self, reason: str) -> Answer:
        stop = "overflow" if _TOO_LONG in reason.lower() else "error"
        return Answer(
            question_id="",
            text="",
            backend=self.batch_backend,
            model="",  # filled in from the request by the caller
            usage=Usage(),  # an entry that errored, expired or was canceled is not billed
            stop_reason=stop,
            error="" if stop == "overflow" else reason,
        )


def _api_message(err: Any) -> str:
    """The provider's ``error.message`` when present, else the SDK's text."""
    return str(getattr(err, "api_message", None) or getattr(err, "message", None) or err)
