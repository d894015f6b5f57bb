"""One content-addressed cache for every expensive call (SQLite).

A key is the SHA-256 of everything that changes the output (model id and
version, text, parameters) plus ``CACHE_VERSION``; never timeouts, retries or
other transport settings. Values are bytes: float32 vectors for embeddings,
JSON for scores and LLM responses. Re-running a sweep, or a quarter later,
re-pays only for keys that changed.

A cache heals rather than stops a run: a file that is not an evalkit cache (not SQLite, malformed,
another schema) is moved aside with one warning naming both paths and a new cache is started, and a
stored value that no longer decodes is dropped with one warning per namespace, so it is recomputed.
Nothing in it is a result, only a saving: losing an entry costs a recomputation, never a wrong number.
A path that cannot hold a cache at all (a directory, a device) is a :class:`CacheUnusableError`.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from evalkit.cache_file import CacheUnusableError, move_aside, open_database, reconnect
from evalkit.console import warn

CACHE_VERSION = "1"
"""Bumped whenever a stored value's meaning changes, so old entries are never reused."""

_T = TypeVar("_T")
_MAX_SQL_VARIABLES = 900  # below SQLite's historic 999 limit on bound parameters


def cache_key(*parts: Any) -> str:
    """Hash of the parts that determine an output, plus the cache version.

    Parts are serialised as canonical JSON (sorted keys), so a dict's order
    does not change its key.
    """
    payload = json.dumps([CACHE_VERSION, *parts], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def text_hash(text: str) -> str:
    """SHA-256 of a text's UTF-8 bytes; the content address of a chunk or query."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def encode_vector(vector: np.ndarray) -> bytes:
    """Store a vector as little-endian float32 bytes."""
    return np.asarray(vector, dtype="<f4").tobytes()


def decode_vector(blob: bytes) -> np.ndarray:
    """Inverse of :func:`encode_vector`."""
    return np.frombuffer(blob, dtype="<f4").copy()


def encode_json(value: Any) -> bytes:
    """Store a JSON-serialisable value."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True).encode("utf-8")


def decode_json(blob: bytes) -> Any:
    """Inverse of :func:`encode_json`."""
    return json.loads(blob.decode("utf-8"))


@dataclass
class CacheStats:
    """Lookups served from the cache and misses, per namespace (for reports and benchmarks)."""

    hits: dict[str, int] = field(default_factory=dict)
    misses: dict[str, int] = field(default_factory=dict)

    def count(self, namespace: str, hits: int, misses: int) -> None:
        self.hits[namespace] = self.hits.get(namespace, 0) + hits
        self.misses[namespace] = self.misses.get(namespace, 0) + misses


class Cache:
    """SQLite-backed key/value store, safe to share within one process.

    Writes are committed at once, so an interrupted sweep keeps every value it
    paid for. A file found damaged while in use (SQLite reads pages lazily, so a truncated file
    can open cleanly) is moved aside and replaced as on opening, and the operation runs again on
    the new, empty cache: what was lost is recomputed.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db = open_database(path)
        self._warned: set[str] = set()
        self.stats = CacheStats()

    def _guarded(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        with self._lock:
            try:
                return work(self._db)
            except sqlite3.DatabaseError as exc:
                if isinstance(exc, sqlite3.OperationalError) or str(self.path) == ":memory:":
                    raise
                self._db.close()
                aside = move_aside(self.path)
                warn(f"the cache {self.path} is damaged ({exc}); moved it to {aside} and started a new one")
                self._db = reconnect(self.path)
                return work(self._db)

    def get_many(self, namespace: str, keys: Iterable[str]) -> dict[str, bytes]:
        """Values for the keys that are present (absent keys are simply missing)."""
        wanted = list(dict.fromkeys(keys))

        def read(db: sqlite3.Connection) -> dict[str, bytes]:
            found: dict[str, bytes] = {}
            for i in range(0, len(wanted), _MAX_SQL_VARIABLES):
                batch = wanted[i : i + _MAX_SQL_VARIABLES]
                marks = ",".join("?" * len(batch))
                query = f"SELECT key, value FROM entries WHERE namespace = ? AND key IN ({marks})"
                found.update((key, bytes(value)) for key, value in db.execute(query, [namespace, *batch]))
            return found

        found = self._guarded(read)
        self.stats.count(namespace, len(found), len(wanted) - len(found))
        return found

    def get_decoded(self, namespace: str, keys: Iterable[str], decode: Callable[[bytes], Any]) -> dict[str, Any]:
        """Decoded values for the keys present; a value that does not decode is dropped, so it is recomputed.

        Dropping matters: ``put_many`` keeps a key's first value, so a corrupt entry left in place would
        never be replaced. One warning per namespace says how many entries were dropped.
        """
        decoded: dict[str, Any] = {}
        broken: list[str] = []
        for key, blob in self.get_many(namespace, keys).items():
            try:
                decoded[key] = decode(blob)
            except (ValueError, TypeError, KeyError, UnicodeDecodeError):
                broken.append(key)
        if broken:
            self.delete_many(namespace, broken)
            if namespace not in self._warned:
                self._warned.add(namespace)
                warn(f"{len(broken)} cached {namespace} value(s) in {self.path} did not decode; recomputing them")
        return decoded

    def delete_many(self, namespace: str, keys: Iterable[str]) -> None:
        wanted = list(dict.fromkeys(keys))

        def delete(db: sqlite3.Connection) -> None:
            for i in range(0, len(wanted), _MAX_SQL_VARIABLES):
                batch = wanted[i : i + _MAX_SQL_VARIABLES]
                marks = ",".join("?" * len(batch))
                db.execute(f"DELETE FROM entries WHERE namespace = ? AND key IN ({marks})", [namespace, *batch])

        self._guarded(delete)

    def get(self, namespace: str, key: str) -> bytes | None:
        return self.get_many(namespace, [key]).get(key)

    def put_many(self, namespace: str, items: Mapping[str, bytes]) -> None:
        """Store values; an existing key keeps its first value (same key, same output)."""
        if not items:
            return
        rows = [(namespace, key, value) for key, value in items.items()]

        def write(db: sqlite3.Connection) -> None:
            try:
                db.execute("BEGIN")
                db.executemany("INSERT OR IGNORE INTO entries (namespace, key, value) VALUES (?, ?, ?)", rows)
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise

        self._guarded(write)

    def put(self, namespace: str, key: str, value: bytes) -> None:
        self.put_many(namespace, {key: value})

    def count(self, namespace: str | None = None) -> int:
        if namespace is None:
            return int(self._guarded(lambda db: db.execute("SELECT COUNT(*) FROM entries").fetchone()[0]))
        query = "SELECT COUNT(*) FROM entries WHERE namespace = ?"
        return int(self._guarded(lambda db: db.execute(query, (namespace,)).fetchone()[0]))

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Cache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = [
    "CACHE_VERSION",
    "Cache",
    "CacheStats",
    "CacheUnusableError",
    "cache_key",
    "decode_json",
    "decode_vector",
    "encode_json",
    "encode_vector",
    "text_hash",
]
