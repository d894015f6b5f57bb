"""Ctrl-C and SIGTERM stop a run cleanly: one line, exit 130 / 143, finished units kept.

Every unit and run file is written atomically, so whatever was in flight is simply not
there; the same command resumes from the finished units.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class Stopped(BaseException):
    """The run was interrupted; ``code`` is the conventional exit status (128 + signal)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _raise(signum: int, _frame: FrameType | None) -> None:
    raise Stopped(128 + signum)


@contextmanager
def stop_on_signals() -> Iterator[None]:
    previous = {s: signal.signal(s, _raise) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    except KeyboardInterrupt:
        raise Stopped(128 + signal.SIGINT) from None
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
