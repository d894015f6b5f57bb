"""One retry policy for every API backend: which failures a retry may fix, how long to wait, when to stop.

Pure: :class:`RetryPolicy` decides and computes waits; :func:`call_with_retries`
runs the loop but sleeps through the ``sleep`` it is given and reads time through
the ``clock`` it is given, so tests drive it without waiting. A backend turns each
failure a retry may fix into :class:`Transient` (one bounded reason line, plus the
response headers when there were any) and maps :class:`RetriesExhausted` to its own
one-line error; any other exception passes through at once (the backend's to map).

Used by the Anthropic generator (``evalkit.answers.generation.anthropic``), the Cohere reranker
(``evalkit.retrieval.rerank.cohere``) and the advisory judge's async client (``evalkit.answers.judge.llm``,
:func:`call_with_retries_async`): one set of retryable statuses,
one reading of ``retry-after-ms`` / ``Retry-After`` / ``x-should-retry``, one backoff.
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

T = TypeVar("T")

TRANSIENT_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, *range(520, 530)})
"""Timeouts, conflicts (a lock), rate limits, server and gateway trouble, 529 overloaded (and Cloudflare's 52x).
501 (not implemented) and 505 (HTTP version) are permanent: a retry sends the same request to the same answer."""


SHOULD_RETRY_HEADER = "x-should-retry"
"""The header Anthropic's API (and Stainless-generated SDKs' servers) send to say whether a retry may help."""


class Transient(Exception):
    """A failure a retry may fix: a retryable status, a lost connection, a reply that cannot be used."""

    def __init__(self, reason: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(reason)
        self.reason = " ".join(reason.split())[:300]  # one bounded line: a proxy may send a whole HTML page
        self.headers = dict(headers or {})


class RetriesExhausted(Exception):
    """The last :class:`Transient` after ``attempts`` tries (retries ran out, or the deadline did)."""

    def __init__(self, last: Transient, attempts: int, why: str) -> None:
        super().__init__(f"failed after {attempts_text(attempts)}{why}: {last.reason}")
        self.last = last
        self.attempts = attempts


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry; the same rules for every API backend."""

    max_retries: int = 4
    """Retries after the first attempt (attempts = 1 + max_retries)."""
    base_delay_s: float = 0.5
    """First backoff ceiling; doubles each retry (the anthropic SDK's own default is 0.5 s)."""
    max_delay_s: float = 60.0
    """Cap on any single wait, a server's ``retry-after`` included."""
    deadline_s: float | None = None
    """Give up rather than wait past this many seconds since the first attempt; None: no deadline."""
    statuses: frozenset[int] = TRANSIENT_STATUSES
    """HTTP statuses a retry may fix (a 2xx whose body could not be read is always retried)."""
    hint_header: str | None = SHOULD_RETRY_HEADER
    """A header whose ``true`` / ``false`` overrides the status rule (the server knows best); None: statuses only."""

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        if not (self.base_delay_s >= 0 and self.max_delay_s >= 0):
            raise ValueError(f"retry delays must be >= 0, got {self.base_delay_s} and {self.max_delay_s}")
        if self.deadline_s is not None and not self.deadline_s > 0:
            raise ValueError(f"deadline_s must be > 0 or None, got {self.deadline_s}")

    def retryable(self, status: int | None, headers: Mapping[str, str] | None = None) -> bool:
        """Whether a reply with ``status`` is worth another attempt; the server's hint (``hint_header``) wins."""
        hint = _header(headers, self.hint_header) if self.hint_header is not None else None
        if hint in ("true", "false"):
            return hint == "true"
        if status is None:
            return True  # no status at all: the reply never arrived whole
        return status in self.statuses or 200 <= status < 300  # a 2xx here: its body could not be read

    def delay(self, retry: int, headers: Mapping[str, str] | None = None, jitter: random.Random | None = None) -> float:
        """Seconds before retry number ``retry`` (0-based): the server's wait, else exponential backoff.

        With ``jitter`` (a seeded :class:`random.Random`) the backoff is full jitter, uniform in
        [0, ceiling], which spreads parallel workers refused together; without it, the ceiling itself.
        """
        asked = retry_after_seconds(headers)
        if asked is not None:
            return min(asked, self.max_delay_s)
        ceiling = min(self.max_delay_s, self.base_delay_s * 2.0**retry)
        return ceiling if jitter is None else jitter.uniform(0.0, ceiling)

    def next_wait(
        self,
        retry: int,
        elapsed_s: float,
        headers: Mapping[str, str] | None = None,
        jitter: random.Random | None = None,
    ) -> float | None:
        """The wait before retry ``retry``, or None to give up (retries used, or the wait would pass the deadline)."""
        if retry >= self.max_retries:
            return None
        wait = self.delay(retry, headers, jitter)
        if self.deadline_s is not None and elapsed_s + wait > self.deadline_s:
            return None
        return wait


def call_with_retries(
    attempt: Callable[[], T],
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], None] = time.sleep,
    jitter: random.Random | None = None,
    clock: Callable[[], float] = time.monotonic,
    on_retry: Callable[[Transient], None] | None = None,
) -> T:
    """``attempt()`` until it returns, retrying :class:`Transient`; :class:`RetriesExhausted` when it gives up.

    ``on_retry`` sees each failure that is about to be retried (e.g. to count a billed resend).
    """
    start = clock()
    retry = 0
    while True:
        try:
            return attempt()
        except Transient as failure:
            wait = _wait_or_give_up(policy, failure, retry, clock() - start, jitter)
            if on_retry is not None:
                on_retry(failure)
            sleep(wait)
            retry += 1


async def call_with_retries_async(
    attempt: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], Awaitable[None]] | None = None,
    jitter: random.Random | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """:func:`call_with_retries` for a coroutine (an async SDK's call): the same rule, awaited.

    ``sleep``: None waits with ``asyncio.sleep`` (imported here: asyncio is not loaded for the sync callers).
    """
    if sleep is None:
        import asyncio

        sleep = asyncio.sleep
    start = clock()
    retry = 0
    while True:
        try:
            return await attempt()
        except Transient as failure:
            await sleep(_wait_or_give_up(policy, failure, retry, clock() - start, jitter))
            retry += 1


def _wait_or_give_up(
    policy: RetryPolicy, failure: Transient, retry: int, elapsed_s: float, jitter: random.Random | None
) -> float:
    """The wait before retry ``retry`` after ``failure``; :class:`RetriesExhausted` when the policy gives up."""
    wait = policy.next_wait(retry, elapsed_s, failure.headers, jitter)
    if wait is None:
        why = "" if retry >= policy.max_retries else f" (deadline {policy.deadline_s:g} s)"
        raise RetriesExhausted(failure, retry + 1, why) from failure
    return wait


def attempts_text(n: int) -> str:
    return f"{n} attempt" if n == 1 else f"{n} attempts"


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """The wait a server asks for: ``retry-after-ms``, else ``Retry-After`` (seconds or an HTTP date); None if none."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = _header(headers, name)
        if value is None:
            continue
        try:
            seconds: float | None = float(value.strip()) / scale
        except ValueError:
            seconds = _date_seconds(value) if name == "retry-after" else None
        if seconds is not None and math.isfinite(seconds):
            return max(0.0, seconds)
    return None


def _header(headers: Mapping[str, str] | None, name: str) -> str | None:
    """A header by name, whatever its case (httpx headers are case-free, a plain dict is not)."""
    if not headers:
        return None
    return next((value for key, value in headers.items() if key.lower() == name), None)


def _date_seconds(value: str) -> float | None:
    try:
        when = email.utils.parsedate_to_datetime(value.strip())
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - datetime.now(UTC)).total_seconds()
