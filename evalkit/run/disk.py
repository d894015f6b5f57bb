"""The paths a run writes, checked before any work, and the disk's failures as one line.

A sweep writes under ``reports_dir`` (run folders, the unit store) and into ``cache_path``; the gate
and the report write beside a run. A path that cannot take a file (read-only, a file where a folder
should be, a device, no permission, a full disk) is found up front by writing a small probe file
and removing it, so a refused run leaves nothing behind. A disk that fills up later is only found
when a write fails: :func:`describe_os_error` turns that into the same kind of line (path and cause),
and the run folder's manifest still says ``running``, so every reader refuses it
(:func:`evalkit.run.folder.load_run`).
"""

from __future__ import annotations

import errno
import os
import re
import sqlite3
import tempfile
from pathlib import Path

_PROBE_BYTES = 4096  # one page: a full tmpfs refuses it, an empty file alone would not notice


class UnwritableError(ValueError):
    """A path the run must write cannot be written; the message is one line naming the path and the cause."""


def _nearest_existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if os.path.lexists(candidate):
            return candidate
    return Path("/")


def _errno(exc: OSError) -> int | None:
    """The error number, also from pyarrow's OSErrors, which carry it only in the message."""
    if exc.errno:
        return int(exc.errno)
    found = re.search(r"\[errno (\d+)\]", str(exc), re.IGNORECASE)
    return int(found.group(1)) if found else None


def _cause(exc: OSError) -> str:
    number = _errno(exc)
    return os.strerror(number).lower() if number else str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _write_probe(folder: Path, what: str, path: Path) -> None:
    try:
        fd, name = tempfile.mkstemp(prefix=".evalkit-probe-", dir=folder)
    except OSError as exc:
        raise UnwritableError(f"{what} {path}: cannot write in {folder} ({_cause(exc)})") from None
    try:
        os.write(fd, b"\0" * _PROBE_BYTES)
        os.fsync(fd)
    except OSError as exc:
        raise UnwritableError(f"{what} {path}: cannot write in {folder} ({_cause(exc)})") from None
    finally:
        os.close(fd)
        os.unlink(name)


def probe_folder(path: Path, what: str, named: Path | None = None) -> None:
    """Raise :class:`UnwritableError` unless files can be written under ``path`` (created later if absent).

    ``named``: the path the user gave, when ``path`` is the folder that holds it.
    """
    found, named = _nearest_existing(path), named or path
    if not found.is_dir():
        where = f"{found} is not a directory" if found != named else "is a file, not a folder"
        raise UnwritableError(f"{what} {named}: {where}")
    _write_probe(found, what, named)


def probe_file(path: Path, what: str) -> None:
    """Raise :class:`UnwritableError` unless ``path`` can be created, or opened for writing if it exists."""
    if os.path.lexists(path):
        if path.is_dir() or not path.is_file():
            kind = "a directory" if path.is_dir() else "not a regular file"
            raise UnwritableError(f"{what} {path} is {kind}; give the path of a file (it is created)")
        try:
            os.close(os.open(path, os.O_RDWR))  # opens, changes nothing
        except OSError as exc:
            raise UnwritableError(f"{what} {path}: cannot write it ({_cause(exc)})") from None
    probe_folder(path.parent, what, named=path)


def is_disk_error(exc: BaseException) -> bool:
    """An error of the file system, not of evalkit: a full disk, a read-only mount, no permission, a bad path."""
    if isinstance(exc, sqlite3.OperationalError):
        text = str(exc)
        return any(s in text for s in ("disk is full", "readonly", "disk I/O error", "unable to open"))
    return isinstance(exc, OSError) and _errno(exc) in _DISK_ERRNOS


_DISK_ERRNOS = {
    errno.ENOSPC,
    errno.EDQUOT,
    errno.EROFS,
    errno.EACCES,
    errno.EPERM,
    errno.ENOTDIR,
    errno.EISDIR,
    errno.EIO,
    errno.EFBIG,
    errno.ENAMETOOLONG,
}


def describe_os_error(exc: BaseException, folder: Path, cache: Path) -> str:
    """One line: the path written and the cause (the cache for SQLite's errors, else ``folder`` when none is named)."""
    if isinstance(exc, OSError):
        path = exc.filename if exc.filename is not None else folder
        return f"{path}: {_cause(exc)}"
    return f"{cache}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
