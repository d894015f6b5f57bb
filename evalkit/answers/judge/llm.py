"""The judge's LLM: ragas' ``InstructorLLM`` around ``anthropic.AsyncAnthropic``, and the judge's config.

ragas and anthropic are imported only inside :func:`ragas_llm`, after ``RAGAS_DO_NOT_TRACK=true``.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalkit.answers.judge.metrics import DEFAULT_METRIC, metric_spec
from evalkit.answers.judge.records import JudgeError
from evalkit.http_call import SDK_MAX_BYTES
from evalkit.http_sdk import sdk_async_client
from evalkit.retry import RetriesExhausted, RetryPolicy, Transient, call_with_retries_async
from evalkit.settings import ConfigError, parse_settings

if TYPE_CHECKING:
    from ragas.llms.base import InstructorBaseRagasLLM

API_KEY_ENV = "ANTHROPIC_API_KEY"
TELEMETRY_ENV = "RAGAS_DO_NOT_TRACK"
"""ragas reports usage to its developers unless this is the string ``true``."""
INSTRUCTOR_ATTEMPTS = "max_retries"
"""instructor's attempts per call (1: no re-ask), carried in ``model_args``; instructor consumes it."""


def ragas_llm(
    model: str,
    base_url: str | None = None,
    api_key: str | None = None,
    max_tokens: int = 1024,
    *,
    max_retries: int = 2,
    timeout_s: float = 120.0,
    max_reply_mb: float = SDK_MAX_BYTES / (1024 * 1024),
    max_connections: int = 16,
) -> InstructorBaseRagasLLM:
    """ragas' LLM wrapper (``InstructorLLM``) around ``anthropic.AsyncAnthropic``, for the judge metrics.

    ``api_key`` defaults to ``$ANTHROPIC_API_KEY``; ``base_url`` points the SDK elsewhere (tests use a
    loopback server). ``max_retries``: retries under evalkit's one rule (:mod:`evalkit.retry`: 408/409/429/5xx/529,
    connection errors, 2xx replies whose body is not JSON), run by a middleware. Sets ``RAGAS_DO_NOT_TRACK``
    to ``true`` unless the caller set it, before ragas is imported.
    """
    os.environ.setdefault(TELEMETRY_ENV, "true")
    key = api_key or os.environ.get(API_KEY_ENV, "")
    if not key:
        raise JudgeError(f"{API_KEY_ENV} is not set: export it to use the advisory Claude judge, or leave it off")
    try:
        import anthropic
        import httpx2  # noqa: F401  (the HTTP package of anthropic 2.x; its absence is this one-line error)
        from ragas import _analytics
        from ragas.llms import llm_factory
    except Exception as exc:  # ImportError, or ragas failing inside its own imports
        raise JudgeError(
            f"the judge needs ragas==0.4.3 with langchain-community==0.4.1 and anthropic==2.14.0: {exc}"
        ) from exc
    # ragas reads the variable once and caches it: re-read in case something asked before it was set.
    _analytics.do_not_track.cache_clear()
    # Every request under evalkit's HTTP rule (http_call): a whole-request deadline that holds on any server, a
    # reply cap, depth-safe JSON, at most max_connections at once, and no kept-alive connection reused.
    http_client = sdk_async_client(timeout_s, int(max_reply_mb * 1024 * 1024), "httpx2", max_connections)
    client = anthropic.AsyncAnthropic(
        api_key=key,
        base_url=base_url,
        max_retries=0,  # evalkit's rule retries (the middleware), never the SDK's own loop as well
        timeout=timeout_s,
        http_client=http_client,
        middleware=[_evalkit_retries(anthropic, RetryPolicy(max_retries))],
    )
    llm = llm_factory(model, provider="anthropic", client=client)
    # Not ragas' temperature/top_p defaults (DESIGN §9). ``max_retries`` is instructor's, consumed by it and
    # never sent: its default (3) re-sends on *any* exception, API errors included, on top of the SDK's.
    llm.model_args = {"max_tokens": int(max_tokens), INSTRUCTOR_ATTEMPTS: 1}
    return llm


def _evalkit_retries(anthropic: Any, policy: RetryPolicy) -> Any:
    """SDK middleware running evalkit's one retry rule (:mod:`evalkit.retry`) around each request.

    The SDK's own loop is off (``max_retries=0`` on the client): which statuses are retried, how ``Retry-After``
    and ``x-should-retry`` are read, the backoff and its cap are the rule every other backend follows. A 2xx
    whose body is not JSON (empty, cut, garbage) is retried like a 5xx. When the rule gives up, the last reply
    goes back to the SDK, which raises its own error for it (the judge turns that into a NaN row or one line).
    """
    jitter = random.Random()

    class EvalkitRetries(anthropic.Middleware):
        async def handle_async(self, request: Any, call_next: Any) -> Any:
            last: list[Any] = []

            async def attempt() -> Any:
                try:
                    response = await call_next(request)
                except anthropic.APIConnectionError as exc:  # timeouts too: the reply never arrived whole
                    raise Transient(f"{type(exc).__name__}: {exc}") from exc
                last[:] = [response]
                status, headers = response.http_response.status_code, response.http_response.headers
                if 200 <= status < 300:
                    try:
                        await response.parse()  # parsed once; the SDK reuses it
                    except json.JSONDecodeError as exc:
                        raise Transient(f"unreadable reply (HTTP {status}): {exc}", headers) from exc
                    return response
                if policy.retryable(status, headers):
                    raise Transient(f"HTTP {status}", headers)
                return response  # a refusal a retry cannot fix: the SDK raises its error for it

            try:
                return await call_with_retries_async(attempt, policy, jitter=jitter)
            except RetriesExhausted as exc:
                if not last:  # never a reply: the connection error itself, its own causes kept (the HTTP rule's
                    error = exc.last.__cause__  # reason, which the row's note names)
                    if error is None:
                        raise exc from None
                    raise error  # noqa: B904  (raising the SDK's error as the SDK would)
                return last[0]

    return EvalkitRetries()


@dataclass(frozen=True)
class JudgeConfig:
    """``conf/judge/*.yaml``, read strictly (:func:`evalkit.settings.parse_settings`)."""

    model: str = field(metadata={"allow_empty": False})
    name: str = field(default="claude", metadata={"choices": ("claude",)})
    """The judge option (``+judge=claude``): ragas with Claude."""
    max_tokens: int = field(default=1024, metadata={"min": 1})
    metric: str = DEFAULT_METRIC
    n_noise_repeats: int = field(default=5, metadata={"min": 0})
    """Repeats of one judgement for the noise floor; 0 or 1: no noise floor."""
    max_concurrency: int = field(default=4, metadata={"min": 1})
    max_retries: int = field(default=2, metadata={"min": 0, "max": 100})
    timeout_s: float = field(default=120.0, metadata={"above": 0.0})
    """Each request's whole deadline, from connect to the reply's last byte (evalkit.http_call)."""
    max_reply_mb: float = field(default=64.0, metadata={"above": 0.0})
    """A larger reply is refused (that row's note says so), never held whole."""
    base_url: str | None = None

    @classmethod
    def from_mapping(cls, cfg: Mapping[str, Any], where: str = "judge") -> JudgeConfig:
        """Read a config section strictly (unknown keys, wrong types and unknown metrics are one-line errors)."""
        config = parse_settings(cls, cfg, where)
        try:
            metric_spec(config.metric)
        except ValueError as exc:
            raise ConfigError(f"{where}.metric: {exc}") from None
        return config

    def llm(self, api_key: str | None = None, base_url: str | None = None) -> InstructorBaseRagasLLM:
        """:func:`ragas_llm` with these settings (``base_url`` overrides the config's)."""
        return ragas_llm(
            self.model,
            base_url or self.base_url,
            api_key,
            self.max_tokens,
            max_retries=self.max_retries,
            timeout_s=self.timeout_s,
            max_reply_mb=self.max_reply_mb,
        )
