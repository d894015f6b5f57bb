"""A whole-request deadline for a blocking HTTP call: from connect to the last byte, not per socket read.

The rule: :func:`run_with_deadline` returns ``call(deadline)``'s result, or raises
:class:`DeadlineExceeded` once ``seconds`` have passed since it started, whatever the
server does (a body trickled one byte at a time defeats every per-read timeout of an
HTTP client; this does not). The call runs in a daemon worker thread and the caller
stops waiting at the deadline. The worker is not killed (Python cannot); it is told:
the :class:`Deadline` it receives raises from :meth:`Deadline.check` once passed, so a
loop over a streamed body stops at its next chunk; what the worker registered with
:meth:`Deadline.on_expiry` (e.g. :func:`shutdown_response`, which shuts the response's
socket down and so wakes a blocked read) is called at the deadline; and the HTTP
client's per-phase timeouts end a silent socket in any case.

Shared by every remote backend that streams or waits on HTTP (``generator=openai``,
``embedder=openai``); it knows nothing about any API.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

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
    closers: list[Callable[[], None]] = field(default_factory=list, compare=False, repr=False)
    """What to close when the deadline passes (a response's socket), so an abandoned worker stops at once."""

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

    def on_expiry(self, close: Callable[[], None]) -> None:
        """Call ``close`` (from the waiting thread) if the deadline passes before the call returns."""
        self.closers.append(close)

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
        for close in list(deadline.closers):
            with contextlib.suppress(Exception):  # best effort: the worker also stops by its own timeouts
                close()
        raise DeadlineExceeded(f"{what} took longer than its whole-request deadline of {seconds:g} s")
    if outcome.error is not None:
        raise outcome.error
    return outcome.value  # type: ignore[return-value]


def shutdown_response(response: Any) -> None:
    """Wake a thread blocked reading an ``httpx`` response: shut its socket down, then close it.

    ``close()`` alone does not interrupt a ``recv`` already blocked in another thread; ``shutdown`` does.
    """
    stream = getattr(response, "extensions", {}).get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if sock is not None:
        with contextlib.suppress(OSError):  # already closed
            sock.shutdown(socket.SHUT_RDWR)
    response.close()
