"""Where submitted Message Batches are remembered, so a killed run polls them again instead of paying twice.

A batch is found again by the request keys (response cache keys) it holds:
a pending request that an uncollected batch holds is polled again with it,
never resubmitted, whatever else is pending now (a second invocation may add
questions).

Two stores, one record (:class:`BatchRecord`):

- :class:`FileJournal`: a small JSON file in the run folder (``batches.json``),
  rewritten atomically (write a temporary file, then rename) after every change;
  it survives a fresh cache file, and a collected batch whose answers the cache
  no longer holds is downloaded again rather than resubmitted;
- :class:`CacheJournal`: evalkit's SQLite cache (insert-only: ``key:<request key>:<n>``
  names the n-th batch holding a request, ``rec:<id>`` the batch, ``done:<id>`` its
  outcomes): the default when no journal file is given.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Protocol

from evalkit.answers.generation.request import GenerationError
from evalkit.cache import Cache, decode_json, encode_json

BatchState = Literal["submitted", "collected"]
JOURNAL_VERSION = 1


@dataclass(frozen=True)
class BatchRecord:
    """One submitted batch: what was in it, which attempt it was, and how its entries ended."""

    batch_id: str
    custom_ids: Mapping[str, str]
    """custom_id -> request key (the response cache key)."""
    attempt: int = 0
    """0 for a first submission, 1 for the retry of entries that errored, expired or were canceled."""
    state: BatchState = "submitted"
    outcomes: Mapping[str, str] = field(default_factory=dict)
    """custom_id -> ``succeeded`` or the failure (``expired``, ``canceled``, ``errored: <type>: <message>``)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.batch_id,
            "attempt": self.attempt,
            "state": self.state,
            "custom_ids": dict(self.custom_ids),
            "outcomes": dict(self.outcomes),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BatchRecord:
        return cls(
            batch_id=str(data["id"]),
            custom_ids={str(k): str(v) for k, v in data["custom_ids"].items()},
            attempt=int(data.get("attempt", 0)),
            state="collected" if data.get("state") == "collected" else "submitted",
            outcomes={str(k): str(v) for k, v in (data.get("outcomes") or {}).items()},
        )


class BatchJournal(Protocol):
    """What :func:`~evalkit.answers.generation.batches.generate_many` needs of a journal."""

    def holding(self, keys: Collection[str]) -> list[BatchRecord]:
        """Every batch holding one of these request keys, oldest first."""
        ...

    def submitted(self, record: BatchRecord) -> None:
        """Remember a batch the moment the provider has accepted it (before polling)."""
        ...

    def collected(self, batch_id: str, outcomes: Mapping[str, str]) -> None:
        """Mark a batch collected (only after its answers are stored)."""
        ...


class FileJournal:
    """The journal as one JSON file: ``{"version": 1, "batches": [record, ...]}``, oldest first."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._records: list[BatchRecord] = self._read()

    @property
    def records(self) -> tuple[BatchRecord, ...]:
        return tuple(self._records)

    def holding(self, keys: Collection[str]) -> list[BatchRecord]:
        wanted = set(keys)
        return [record for record in self._records if wanted.intersection(record.custom_ids.values())]

    def submitted(self, record: BatchRecord) -> None:
        self._records.append(record)
        self._write()

    def collected(self, batch_id: str, outcomes: Mapping[str, str]) -> None:
        self._records = [
            replace(r, state="collected", outcomes=dict(outcomes)) if r.batch_id == batch_id else r
            for r in self._records
        ]
        self._write()

    def _read(self) -> list[BatchRecord]:
        if not self.path.exists():
            return []
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return [BatchRecord.from_json(item) for item in data["batches"]]
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise GenerationError(
                f"{self.path}: not a readable batch journal ({type(exc).__name__}: {exc}); "
                "it names batches already paid for: fix or move it aside (moving it resubmits them)"
            ) from exc

    def _write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(
            {"version": JOURNAL_VERSION, "batches": [record.to_json() for record in self._records]},
            ensure_ascii=False,
            indent=1,
        )
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)  # atomic: a kill leaves the old journal or the new one, never half of one
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


class CacheJournal:
    """The journal in evalkit's cache (insert-only; the keys are in the module docstring)."""

    def __init__(self, cache: Cache, namespace: str) -> None:
        self.cache = cache
        self.namespace = namespace

    def holding(self, keys: Collection[str]) -> list[BatchRecord]:
        ids: list[str] = []
        probe = {key: 0 for key in keys}
        while probe:  # follow each key's chain key:<k>:0, :1, ... in bulk
            found = self.cache.get_many(self.namespace, [f"key:{k}:{n}" for k, n in probe.items()])
            probe = {k: n + 1 for k, n in probe.items() if f"key:{k}:{n}" in found}
            ids.extend(decode_json(blob) for blob in found.values())
        records = []
        for batch_id in dict.fromkeys(ids):
            blob = self.cache.get(self.namespace, f"rec:{batch_id}")
            if blob is None:
                continue
            record = BatchRecord.from_json(decode_json(blob))
            done = self.cache.get(self.namespace, f"done:{batch_id}")
            if done is not None:
                record = replace(record, state="collected", outcomes=decode_json(done))
            records.append(record)
        return records

    def submitted(self, record: BatchRecord) -> None:
        self.cache.put(self.namespace, f"rec:{record.batch_id}", encode_json(record.to_json()))
        index: dict[str, bytes] = {}
        probe = {key: 0 for key in record.custom_ids.values()}
        while probe:  # the first free slot of each key's chain, found in bulk
            taken = self.cache.get_many(self.namespace, [f"key:{k}:{n}" for k, n in probe.items()])
            for k, n in probe.items():
                if f"key:{k}:{n}" not in taken:
                    index[f"key:{k}:{n}"] = encode_json(record.batch_id)
            probe = {k: n + 1 for k, n in probe.items() if f"key:{k}:{n}" in taken}
        self.cache.put_many(self.namespace, index)

    def collected(self, batch_id: str, outcomes: Mapping[str, str]) -> None:
        self.cache.put(self.namespace, f"done:{batch_id}", encode_json(dict(outcomes)))
