"""The one shape of a warning on the console: ``evalkit: warning: <line>`` on stderr.

A plain line rather than :func:`warnings.warn`, whose default format puts a source path and line
number in front of the message, which reads as a crash to a user watching a sweep.
"""

from __future__ import annotations

import sys


def warn(line: str) -> None:
    sys.stderr.write(f"evalkit: warning: {line}\n")
