"""A whole-request deadline for a blocking HTTP call: from connect to the last byte, not per socket read.

The rule: :func:`run_with_deadline` returns ``call(deadline)``'s result, or raises
:class:`DeadlineExceeded` once ``seconds`` have passed since it started, whatever the
server does (a body trickled one byte at a time defeats every per-read timeout of an
HTTP client; this does not). The call runs in a daemon worker thread and the caller
stops waiting at the deadline. The worker is not killed (Python cannot); it is told:
the :class:`Deadline` it receives raises from :meth:`Deadline.check` once passed, so a
loop over a streamed body stops at its next chunk, and :meth:`Deadline.phase_timeout`
gives the HTTP client's per-phase timeouts, so a silent socket ends it too. An
abandoned worker therefore stops by itself within one phase timeout.

Shared by every remote backend that streams or waits on HTTP (``generator=openai``,
``embedder=openai``); it knows nothing about any API.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")


class DeadlineExceeded(Exception):
    """The whole request took longer than its deadline (a retry may succeed: it is a timeout)."""


@dataclass(frozen=True)
class Deadline:
    """A point in time (``clock()`` seconds) after which a request is abandoned."""

    seconds: float
    """The whole-request budget this deadline was made from."""
    at: float
    """``clock()`` value at which it passes."""
    clock: Callable[[], float] = field(default=time.monotonic, compare=False)

    @classmethod
    def after(cls, seconds: float, clock: Callable[[], float] = time.monotonic) -> Deadline:
        if not seconds > 0:
            raise ValueError(f"a deadline needs a positive number of seconds, got {seconds}")
        return cls(seconds, clock() + seconds, clock)

    def remaining(self) -> float:
        """Seconds left (0 once passed)."""
        return max(0.0, self.at - self.clock())

    def check(self, what: str = "request") -> None:
        """Raise :class:`DeadlineExceeded` when the deadline has passed (call between chunks of a body)."""
        if self.clock() >= self.at:
            raise DeadlineExceeded(f"{what} took longer than its whole-request deadline of {self.seconds:g} s")

    def phase_timeout(self) -> float:
        """A per-phase (connect, read, write) timeout that cannot outlive the deadline by more than itself."""
        return max(0.001, self.remaining())


@dataclass
class _Outcome(Generic[T]):
    done: threading.Event = field(default_factory=threading.Event)
    value: T | None = None
    error: BaseException | None = None


def run_with_deadline(call: Callable[[Deadline], T], seconds: float, *, what: str = "request") -> T:
    """``call(deadline)`` in a worker thread: its result, its exception, or :class:`DeadlineExceeded` at the end."""
    deadline = Deadline.after(seconds)
    outcome: _Outcome[T] = _Outcome()

    def work() -> None:
        try:
            outcome.value = call(deadline)
        except BaseException as exc:  # handed to the caller's thread, re-raised there as is
            outcome.error = exc
        finally:
            outcome.done.set()

    # A daemon thread: an abandoned worker must never keep the process alive at exit.
    threading.Thread(target=work, name=f"deadline:{what}"[:60], daemon=True).start()
    if not outcome.done.wait(seconds):
        raise DeadlineExceeded(f"{what} took longer than its whole-request deadline of {seconds:g} s")
    if outcome.error is not None:
        raise outcome.error
    return outcome.value  # type: ignore[return-value]
