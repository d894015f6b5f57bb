"""Opening the cache file: refuse a path that cannot hold one, move aside a file that is not one.

Nothing in a cache is a result, only a saving, so a file that is not an evalkit cache (not SQLite,
damaged, another schema) is renamed beside itself with one warning naming both paths and a new cache
is started; the run recomputes what it needs. A path that cannot hold a cache file at all (a
directory, a device, a file used as a folder, no permission) is a :class:`CacheUnusableError`: the
user's to fix, one line, before any work.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from evalkit.console import warn

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    value BLOB NOT NULL,
    PRIMARY KEY (namespace, key)
) WITHOUT ROWID;
"""

_COLUMNS = ("namespace", "key", "value")
_SIDE_FILES = ("-wal", "-shm", "-journal")


class CacheUnusableError(ValueError):
    """The cache path cannot hold a cache file (a directory, a device, a file in a non-directory)."""


class _NotACache(Exception):
    """The file opened, but is not an evalkit cache (the message says why)."""


def _check_path(path: Path) -> None:
    if path.exists() and not path.is_file():
        kind = "a directory" if path.is_dir() else "not a regular file"
        raise CacheUnusableError(f"cache_path {path} is {kind}; give the path of a cache file (it is created)")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise CacheUnusableError(f"cache_path {path}: {parent} is not a directory")
            break


def _check_schema(db: sqlite3.Connection) -> None:
    """Raise :class:`_NotACache` unless the file is intact and its table (if any) is evalkit's."""
    # Reading the schema reads the header and page 1: enough to tell a non-database or a foreign table.
    # Not PRAGMA quick_check: it reads every page (4.6 s for a 135 MB cache); damage deeper in the
    # file is healed when it is met (Cache._guarded).
    columns = tuple(row[1] for row in db.execute("PRAGMA table_info(entries)"))
    if columns and columns != _COLUMNS:
        raise _NotACache(f"another schema: table entries has columns {', '.join(columns)}")


def move_aside(path: Path) -> Path:
    """Rename the file (and SQLite's side files) out of the way; the new name is returned."""
    aside = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
    suffix = 1
    while aside.exists():
        aside, suffix = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}-{suffix}"), suffix + 1
    path.rename(aside)
    for side in _SIDE_FILES:
        extra = path.with_name(path.name + side)
        if extra.exists():
            extra.rename(aside.with_name(aside.name + side))
    return aside


def _connect(path: str) -> sqlite3.Connection:
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    try:
        _check_schema(db)  # before WAL mode, which rewrites the header of a file that may not be ours
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(_SCHEMA)
    except BaseException:
        db.close()
        raise
    return db


def open_database(path: str | Path) -> sqlite3.Connection:
    """A connection to a valid cache at ``path``: an invalid file is moved aside and a new one started."""
    if str(path) == ":memory:":
        return _connect(":memory:")
    where = Path(path)
    _check_path(where)
    where.parent.mkdir(parents=True, exist_ok=True)
    try:
        return _connect(str(where))
    except sqlite3.OperationalError as exc:
        # Cannot open or write (permissions, a lock held elsewhere): the file may be fine, so leave it be.
        raise CacheUnusableError(f"cache_path {where}: {exc}") from None
    except (sqlite3.DatabaseError, _NotACache) as exc:
        cause = str(exc) or type(exc).__name__
    aside = move_aside(where)
    warn(f"the cache {where} is not a valid evalkit cache ({cause}); moved it to {aside} and started a new one")
    return _connect(str(where))


def reconnect(path: Path) -> sqlite3.Connection:
    """A connection to a new cache at ``path`` after the old file was moved aside."""
    return _connect(str(path))
