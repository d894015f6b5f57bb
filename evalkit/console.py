"""Shapes shared by the console and the page: a warning (``evalkit: warning: <line>`` on stderr), a duration.

A plain line rather than :func:`warnings.warn`, whose default format puts a source path and line
number in front of the message, which reads as a crash to a user watching a sweep.
"""

from __future__ import annotations

import sys


def warn(line: str) -> None:
    sys.stderr.write(f"evalkit: warning: {line}\n")


def milliseconds(seconds: float | None) -> str:
    """Seconds as milliseconds, two significant digits below 10 ms (a search can take 0.08 ms)."""
    if seconds is None or seconds != seconds:
        return "n/a"
    ms = 1000 * float(seconds)
    return f"{ms:.2g} ms" if ms < 10 else f"{ms:,.0f} ms"
