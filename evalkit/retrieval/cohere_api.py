"""What Cohere's rerank and embed clients share: the key, the SDK client, and one line per failure.

Retries are evalkit's (:mod:`~evalkit.retry`), not the SDK's: the client is built with
``max_retries=0`` so every HTTP request is counted and the retry budget is one number in the config.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from evalkit.http_call import SDK_MAX_BYTES, HttpError
from evalkit.http_sdk import sdk_client
from evalkit.retry import RetryPolicy, Transient, attempts_text, call_with_retries

T = TypeVar("T")

SDK_API_KEY_ENV = "CO_API_KEY"
"""The variable the SDK itself documents; read when ``api_key_env`` is unset."""


def resolve_api_key(api_key: str | None, api_key_env: str, error: type[Exception], what: str, offline: str) -> str:
    """The key given, else the variable ``api_key_env``, else ``CO_API_KEY`` (``what``: "reranker=cohere")."""
    if api_key:
        return api_key
    for name in dict.fromkeys((api_key_env, SDK_API_KEY_ENV)):
        value = os.environ.get(name, "").strip()
        if value:
            return value
    raise error(f"{what} needs an API key: set {api_key_env} (or {SDK_API_KEY_ENV}), or {offline}")


def make_client(
    api_key: str,
    base_url: str | None,
    timeout: float,
    error: type[Exception],
    what: str,
    max_reply_mb: float = SDK_MAX_BYTES / (1024 * 1024),
) -> Any:
    """A ``cohere.ClientV2`` with the SDK's own retries off; a reply over ``max_reply_mb`` is refused unread."""
    try:
        import cohere
    except ImportError as exc:
        raise error(f"{what} needs the cohere SDK (pip install cohere)") from exc
    options: dict[str, Any] = {"api_key": api_key, "timeout": timeout, "max_retries": 0, "client_name": "evalkit"}
    if base_url is not None:
        # Passing base_url=None explicitly would bypass the SDK's CO_API_URL default, so only pass a real URL.
        options["base_url"] = base_url
    # Every request under evalkit's HTTP rule (evalkit.http_call): a whole-request deadline, a reply cap.
    options["httpx_client"] = sdk_client(timeout, int(max_reply_mb * 1024 * 1024))
    return cohere.ClientV2(**options)


def problem(exc: BaseException, impossible: type[Exception]) -> str:
    """One bounded line for a failure that has no HTTP error status."""
    from cohere.core.parse_error import ParsingError

    if isinstance(exc, ParsingError):
        text = f"an unexpected response (HTTP {exc.status_code}): {exc}"
    elif isinstance(exc, impossible):
        text = f"an impossible reply: {exc}"
    else:
        text = f"{type(exc).__name__}: {exc}"
    return " ".join(text.split())[:300]


def describe(exc: Any, what: str, attempts: int, retryable: bool, api_key_env: str) -> str:
    """One line: status, the server's message, and what to do about it (``what``: "Cohere rerank (model)")."""
    status = exc.status_code
    body = exc.body
    message = body.get("message") if isinstance(body, Mapping) else body
    # One line, bounded: a proxy's 502 may carry a whole HTML page.
    text = " ".join(str(message).split())[:300] if message not in (None, "") else "(no message)"
    hint = ""
    if status in (401, 498):
        hint = f" (check {api_key_env})"
    elif retryable:
        hint = f" (gave up after {attempts_text(attempts)})"
    return f"{what} failed: HTTP {status}: {text}{hint}"


@dataclass
class Attempts:
    """HTTP requests one call took (the caller reads it after success or failure alike)."""

    n: int = 0


def call_with_cohere_retries(
    send: Callable[[], T],
    retry: RetryPolicy,
    impossible: type[Exception],
    attempts: Attempts,
    *,
    sleep: Callable[[float], None],
    jitter: random.Random,
    on_resend: Callable[[], None] | None = None,
    error: type[Exception] = RuntimeError,
) -> T:
    """``send()`` (one SDK request and the check of its reply) under evalkit's retries.

    Retried: the policy's transient statuses, connection errors, bodies the SDK cannot parse and replies
    ``send`` finds ``impossible``. ``on_resend`` runs before a resend after a reply that arrived but could
    not be used (the server may have done, and billed, that work). A status a retry cannot fix is raised
    as the SDK's ``ApiError``; a reply over the cap or nested too deep (the HTTP rule's final refusals) as one
    ``error`` line; exhausted retries as :class:`~evalkit.retry.RetriesExhausted`.
    """
    from cohere.core.api_error import ApiError
    from cohere.core.parse_error import ParsingError
    from httpx import TransportError

    def attempt() -> T:
        attempts.n += 1
        try:
            return send()
        except ApiError as exc:
            if not retry.retryable(exc.status_code, exc.headers):
                raise
            raise Transient(f"HTTP {exc.status_code}", exc.headers) from exc
        except HttpError as exc:  # the HTTP rule's: a deadline passed, a body cut short, over the cap, too deep
            if not exc.retryable:
                raise error(f"{exc.reason}") from None
            raise Transient(exc.reason) from exc
        except (ParsingError, TransportError, impossible) as exc:
            raise Transient(problem(exc, impossible)) from exc

    def before_resend(failure: Transient) -> None:
        cause = failure.__cause__
        status = getattr(cause, "status_code", None) if isinstance(cause, ApiError) else 200
        if on_resend is not None and status is not None and status < 300:
            on_resend()

    return call_with_retries(attempt, retry, sleep=sleep, jitter=jitter, on_retry=before_resend)
