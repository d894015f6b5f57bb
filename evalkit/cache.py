"""One content-addressed cache for every expensive call (SQLite).

A key is the SHA-256 of everything that changes the output (model id and
version, text, parameters) plus ``CACHE_VERSION``; never timeouts, retries or
other transport settings. Values are bytes: float32 vectors for embeddings,
JSON for scores and LLM responses. Re-running a sweep, or a quarter later,
re-pays only for keys that changed.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

CACHE_VERSION = "1"
"""Bumped whenever a stored value's meaning changes, so old entries are never reused."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    value BLOB NOT NULL,
    PRIMARY KEY (namespace, key)
) WITHOUT ROWID;
"""

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
    paid for.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self.stats = CacheStats()

    def get_many(self, namespace: str, keys: Iterable[str]) -> dict[str, bytes]:
        """Values for the keys that are present (absent keys are simply missing)."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, bytes] = {}
        with self._lock:
            for i in range(0, len(wanted), _MAX_SQL_VARIABLES):
                batch = wanted[i : i + _MAX_SQL_VARIABLES]
                marks = ",".join("?" * len(batch))
                rows = self._db.execute(
                    f"SELECT key, value FROM entries WHERE namespace = ? AND key IN ({marks})",
                    [namespace, *batch],
                )
                found.update((key, bytes(value)) for key, value in rows)
        self.stats.count(namespace, len(found), len(wanted) - len(found))
        return found

    def get(self, namespace: str, key: str) -> bytes | None:
        return self.get_many(namespace, [key]).get(key)

    def put_many(self, namespace: str, items: Mapping[str, bytes]) -> None:
        """Store values; an existing key keeps its first value (same key, same output)."""
        if not items:
            return
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany(
                "INSERT OR IGNORE INTO entries (namespace, key, value) VALUES (?, ?, ?)",
                [(namespace, key, value) for key, value in items.items()],
            )
            self._db.execute("COMMIT")

    def put(self, namespace: str, key: str, value: bytes) -> None:
        self.put_many(namespace, {key: value})

    def count(self, namespace: str | None = None) -> int:
        with self._lock:
            if namespace is None:
                return int(self._db.execute("SELECT COUNT(*) FROM entries").fetchone()[0])
            query = "SELECT COUNT(*) FROM entries WHERE namespace = ?"
            return int(self._db.execute(query, (namespace,)).fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Cache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
