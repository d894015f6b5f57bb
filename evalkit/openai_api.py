"""What every OpenAI-compatible backend shares: the client, the key, one attempt under the deadline, retries.

Used by ``generator=openai`` (:mod:`evalkit.answers.generation.openai_compat`) and
``embedder=openai`` (:mod:`evalkit.retrieval.embedding.openai_compat`). Rules:

- the key comes from the environment variable the config names (None: no key, for a local
  server); it is passed to the SDK explicitly and never printed, logged or cached;
- the SDK's HTTP client is :func:`evalkit.http_sdk.sdk_client`: every request follows the one
  HTTP rule (a whole-request deadline that holds on closing and keep-alive servers alike, the
  ``max_reply_mb`` cap, depth-safe JSON, a body shorter than its Content-Length refused);
- the SDK's own retry loop is off (``max_retries=0``): :func:`call` retries by the shared
  policy (:mod:`evalkit.retry`): 408/409/429/5xx (``Retry-After`` honoured), lost or reset
  connections, deadlines passed, bodies cut short or not JSON are retried; a reply over the cap
  or nested too deep is one ``error`` line at once (the same request gets the same reply); any
  other status error reaches the caller as the SDK's ``APIStatusError``, for :func:`status_line`.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from evalkit.http_call import HttpError, http_error_in, url_problem
from evalkit.http_sdk import sdk_client
from evalkit.retry import RetriesExhausted, RetryPolicy, Transient, call_with_retries

T = TypeVar("T")

INSTALL_HINT = "pip install openai==1.109.1 (a default dependency of evalkit)"
DEFAULT_BASE_URL = "https://api.openai.com/v1"


def sdk(error: type[Exception], what: str) -> Any:
    """The ``openai`` package, imported on first use so evalkit imports without it."""
    try:
        import openai
    except ImportError as exc:  # pragma: no cover - a default dependency
        raise error(f"{what} needs the package 'openai': {INSTALL_HINT}") from exc
    return openai


def read_api_key(env: str | None, what: str, error: type[Exception]) -> str:
    """The key in ``env`` ('' when ``env`` is None: a server without keys); a one-line error when unset."""
    if env is None:
        return ""
    key = os.environ.get(env, "")
    if not key:
        raise error(f"{env} is not set: export it to use {what}, or set api_key_env: null for a server without keys")
    return key


def check_base_url(base_url: str, where: str, error: type[Exception]) -> str:
    problem = url_problem(base_url)
    if problem is not None:
        raise error(f"{where}: {problem}")
    return base_url.rstrip("/")


def make_client(
    openai: Any,
    api_key_env: str | None,
    base_url: str,
    timeout_s: float,
    max_bytes: int,
    what: str,
    error: type[Exception],
) -> Any:
    """An ``openai.OpenAI`` client with the key from ``api_key_env``, the HTTP rule, no retry loop of its own."""
    key = read_api_key(api_key_env, what, error)
    # Each HTTP request's whole deadline and size cap are the transport's (evalkit.http_call). An empty key
    # sends no Authorization header.
    client = sdk_client(timeout_s, max_bytes)
    return openai.OpenAI(api_key=key, base_url=base_url, max_retries=0, timeout=timeout_s, http_client=client)


def call(
    openai: Any,
    send: Callable[[], T],
    *,
    what: str,
    policy: RetryPolicy,
    error: type[Exception],
    sleep: Callable[[float], None] = time.sleep,
    jitter: random.Random | None = None,
) -> T:
    """``send()`` (its HTTP requests under the rule), retried by the shared policy.

    A status error a retry cannot fix passes through (``openai.APIStatusError``); a reply over the cap or
    nested too deep is one ``error`` line; exhausted retries are one ``error`` line naming the last failure.
    ``send`` raises :class:`~evalkit.retry.Transient` for a reply
    that parsed but cannot be right.
    """
    import httpx  # the SDK's HTTP client: errors while iterating a stream reach the caller unwrapped

    def attempt() -> T:
        try:
            return send()
        except openai.APIStatusError as err:
            if not policy.retryable(err.status_code, err.response.headers):
                raise
            raise Transient(f"HTTP {err.status_code}: {api_message(err)}", err.response.headers) from err
        except (openai.APIError, httpx.TransportError, json.JSONDecodeError, HttpError) as err:
            # A reset, a refused connection, a deadline passed, a body cut short or not JSON; the rule's own
            # refusals (over the cap, nested too deep) are final: the same request gets the same reply.
            rule = http_error_in(err)
            if rule is not None and not rule.retryable:
                raise error(f"{what}: {rule.reason}") from None
            raise Transient(
                rule.reason if rule is not None else f"{type(err).__name__}: {err.__cause__ or err}"
            ) from err

    try:
        return call_with_retries(attempt, policy, sleep=sleep, jitter=jitter)
    except RetriesExhausted as exc:
        raise error(f"{what} {exc}") from exc


def status_line(status: int, reason: str, *, base_url: str, model: str, api_key_env: str | None, path: str) -> str:
    """One line for a status a retry cannot fix: 401/403 name the key's variable (never the key), 404 the model."""
    if status in (401, 403):
        env = api_key_env or "(no key: api_key_env is null)"
        return f"{base_url} refused the key in {env} (HTTP {status}): {reason}"
    if status == 404:
        return f"{base_url}: model {model!r} not found, or no {path} there (HTTP 404): {reason}"
    return f"{base_url} rejected the request for {model!r} (HTTP {status}): {reason}"


def error_kind(err: Any) -> str:
    """The error body's ``type`` and ``code`` (llama.cpp: ``exceed_context_size_error``; OpenAI: a code)."""
    body = getattr(err, "body", None)
    return f"{body.get('type', '')} {body.get('code', '')}" if isinstance(body, Mapping) else ""


def api_message(err: Any) -> str:
    """The server's ``error.message`` when present, else the SDK's text; one bounded line."""
    body = getattr(err, "body", None)
    message = body.get("message") if isinstance(body, Mapping) else None
    text = str(message or getattr(err, "message", None) or err)
    return " ".join(text.split())[:300]
