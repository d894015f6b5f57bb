"""One writer per run folder: a second process on the same plan is refused with one line, never a crash."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_FILE = ".lock"


class RunLocked(RuntimeError):
    """Another process is writing this run folder."""


@contextmanager
def run_lock(run_dir: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``run_dir`` (released when the process ends, even by kill -9)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / LOCK_FILE
    handle = path.open("a+", encoding="utf-8")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise RunLocked(
                f"{run_dir} is being written by {holder}; wait for it to finish, or give this run another run_id="
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"process {os.getpid()}")
        handle.flush()
        yield
    finally:
        handle.close()
