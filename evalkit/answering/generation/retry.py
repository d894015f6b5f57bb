"""Retrying a flaky API call: bounded attempts, exponential backoff with full jitter, the server's wait honoured.

A backend turns each failure a retry may fix into :class:`Transient` (a one-line
reason, plus the response headers when there were any); :func:`call_with_retries`
sleeps and tries again, at most ``1 + max_retries`` times, then raises one
:class:`~evalkit.answering.generation.request.GenerationError` naming the last
reason. Any other exception passes through at once: it is the backend's to map.
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

from evalkit.answering.generation.request import GenerationError

T = TypeVar("T")


class Transient(Exception):
    """A failure a retry may fix: 408/409/429/5xx/529, a lost connection, a reply that cannot be used."""

    def __init__(self, reason: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(reason)
        self.reason = " ".join(reason.split())[:300]  # one bounded line: a proxy may send a whole HTML page
        self.headers = dict(headers or {})


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry."""

    max_retries: int = 4
    """Retries after the first attempt (attempts = 1 + max_retries)."""
    base_delay_s: float = 0.5
    """First backoff ceiling; doubles each retry (the anthropic SDK's own default is 0.5 s)."""
    max_delay_s: float = 60.0
    """Cap on any single wait, a server's ``retry-after`` included."""

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        if not (self.base_delay_s >= 0 and self.max_delay_s >= 0):
            raise ValueError(f"retry delays must be >= 0, got {self.base_delay_s} and {self.max_delay_s}")

    def delay(self, retry: int, headers: Mapping[str, str] | None = None) -> float:
        """Seconds before retry number ``retry`` (0-based): the server's wait, else full-jitter backoff."""
        asked = retry_after_seconds(headers)
        if asked is not None:
            return min(asked, self.max_delay_s)
        ceiling = min(self.max_delay_s, self.base_delay_s * 2.0**retry)
        # Full jitter (uniform in [0, ceiling]) spreads parallel workers that were refused together.
        return random.uniform(0.0, ceiling)


def call_with_retries(
    attempt: Callable[[], T],
    policy: RetryPolicy,
    what: str,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """``attempt()`` until it returns, retrying :class:`Transient`; one GenerationError when retries run out."""
    for retry in range(policy.max_retries + 1):
        try:
            return attempt()
        except Transient as failure:
            if retry == policy.max_retries:
                attempts = retry + 1
                raise GenerationError(
                    f"{what} failed after {attempts} attempt{'s' if attempts != 1 else ''}: {failure.reason}"
                ) from failure
            sleep(policy.delay(retry, failure.headers))
    raise AssertionError("unreachable: the loop returns or raises")


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """The wait a server asks for: ``retry-after-ms``, else ``Retry-After`` (seconds or an HTTP date); None if none."""
    if not headers:
        return None
    lower = {name.lower(): value for name, value in headers.items()}
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = lower.get(name)
        if value is None:
            continue
        try:
            seconds = float(value.strip()) / scale
        except ValueError:
            seconds = _date_seconds(value) if name == "retry-after" else None
        if seconds is not None and math.isfinite(seconds):
            return max(0.0, seconds)
    return None


def _date_seconds(value: str) -> float | None:
    try:
        when = email.utils.parsedate_to_datetime(value.strip())
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - datetime.now(UTC)).total_seconds()
