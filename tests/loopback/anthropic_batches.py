"""The Message Batches half of the loopback Anthropic server: create, retrieve, results (JSONL), cancel.

A batch answers ``in_progress`` for ``batch_polls`` retrieves, then ``ended``
(a canceled one passes through ``canceling``). Each entry ends one way:

- ``succeeded``: the loopback model's reply (:meth:`AnthropicLoopback.respond`);
- ``errored``: the text holds ``[[batch-error]]`` (always), or the model's own 400;
- ``expired`` / ``canceled``: the text holds ``[[batch-expired]]`` / ``[[batch-canceled]]``
  (always), or the batch was canceled before it ended (every entry canceled);
- scripted by custom_id (:meth:`BatchDesk.script`): the n-th time an entry with that
  custom_id is processed, in any batch, it takes the n-th scripted outcome, then succeeds.

Results come in reverse order (the API promises none). Faults on the results download
(:meth:`BatchDesk.fault_results`): ``malformed-line`` puts a line that is not JSON in the
middle of the stream, ``cut`` sends half the lines of the promised length and closes.
5xx / 529 on create and retrieve come from the server's seeded fault plan
(``fault_endpoints``).
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

JSON = Any
BATCH_ERROR_TRIGGER = "[[batch-error]]"
BATCH_EXPIRED_TRIGGER = "[[batch-expired]]"
BATCH_CANCELED_TRIGGER = "[[batch-canceled]]"
OUTCOMES = ("succeeded", "errored", "expired", "canceled")
RESULTS_FAULTS = ("malformed-line", "cut")
_CUSTOM_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_STAMP = "2026-11-30T00:00:00Z"
_EXPIRES = "2026-12-01T00:00:00Z"


@dataclass
class _Batch:
    batch_id: str
    requests: list[dict[str, Any]]
    polls_left: int
    canceled: bool = False
    results: list[dict[str, Any]] | None = None


class BatchDesk:
    """The batches a loopback server holds (thread-safe)."""

    def __init__(
        self,
        respond: Callable[[JSON], tuple[int, JSON]],
        texts: Callable[[JSON], str],
        error: Callable[[str, str], JSON],
        url: Callable[[], str],
        batch_polls: int,
    ) -> None:
        self._respond, self._texts, self._error, self._url = respond, texts, error, url
        self.batch_polls = batch_polls
        """Retrieves a new batch answers ``in_progress`` before it ends."""
        self.created: list[str] = []
        """Batch ids in creation order (one per successful create)."""
        self._batches: dict[str, _Batch] = {}
        self._scripts: dict[str, deque[str]] = {}
        self._results_faults: deque[str] = deque()
        self._lock = threading.Lock()

    # -- scripting --------------------------------------------------------------------------------

    def script(self, custom_id: str, outcomes: Sequence[str]) -> None:
        """The next times an entry with this custom_id is processed, end it with these outcomes in turn."""
        unknown = sorted(set(outcomes) - set(OUTCOMES))
        if unknown:
            raise ValueError(f"unknown outcomes {unknown} (known: {', '.join(OUTCOMES)})")
        with self._lock:
            self._scripts.setdefault(custom_id, deque()).extend(outcomes)

    def fault_results(self, *kinds: str) -> None:
        """Spoil the next results downloads, one kind each (``malformed-line``, ``cut``)."""
        unknown = sorted(set(kinds) - set(RESULTS_FAULTS))
        if unknown:
            raise ValueError(f"unknown results faults {unknown} (known: {', '.join(RESULTS_FAULTS)})")
        with self._lock:
            self._results_faults.extend(kinds)

    def take_results_fault(self) -> str | None:
        with self._lock:
            return self._results_faults.popleft() if self._results_faults else None

    def finish(self) -> None:
        """Let every open batch end at its next retrieve."""
        with self._lock:
            for batch in self._batches.values():
                batch.polls_left = 0

    def status(self, batch_id: str) -> str:
        with self._lock:
            batch = self._batches[batch_id]
            return "ended" if batch.results is not None else ("canceling" if batch.canceled else "in_progress")

    # -- endpoints --------------------------------------------------------------------------------

    def create(self, body: JSON) -> tuple[int, JSON]:
        requests = (body or {}).get("requests") or []
        ids = [r.get("custom_id", "") for r in requests]
        if not requests or len(set(ids)) != len(ids) or not all(_CUSTOM_ID.match(i) for i in ids):
            return 400, self._error(
                "invalid_request_error", "requests: custom_id must be unique and match ^[a-zA-Z0-9_-]{1,64}$"
            )
        with self._lock:
            batch = _Batch(f"msgbatch_{len(self._batches) + 1:04d}", list(requests), self.batch_polls)
            self._batches[batch.batch_id] = batch
            self.created.append(batch.batch_id)
        return 200, self._json(batch)

    def retrieve(self, batch_id: str) -> tuple[int, JSON]:
        with self._lock:
            batch = self._batches.get(batch_id)
            if batch is not None:
                batch.polls_left -= 1
        if batch is None:
            return 404, self._error("not_found_error", f"batch {batch_id} not found")
        if batch.polls_left < 0 and batch.results is None:
            batch.results = [self._entry(r, batch.canceled) for r in reversed(batch.requests)]
        return 200, self._json(batch)

    def cancel(self, batch_id: str) -> tuple[int, JSON]:
        with self._lock:
            batch = self._batches.get(batch_id)
            if batch is not None and batch.results is None:
                batch.canceled = True
        if batch is None:
            return 404, self._error("not_found_error", f"batch {batch_id} not found")
        return 200, self._json(batch)

    def results(self, batch_id: str, fault: str | None) -> tuple[int, bytes]:
        batch = self._batches.get(batch_id)
        if batch is None or batch.results is None:
            return 404, json.dumps(self._error("not_found_error", f"batch {batch_id} has no results yet")).encode()
        lines = [json.dumps(item, ensure_ascii=False) + "\n" for item in batch.results]
        if fault == "malformed-line":
            lines.insert(len(lines) // 2, '{"custom_id": "broken", "result": {"type": "succ\n')
        return 200, "".join(lines).encode("utf-8")

    # -- the model's side ---------------------------------------------------------------------------

    def _entry(self, request: dict[str, Any], canceled: bool) -> dict[str, Any]:
        cid = request["custom_id"]
        with self._lock:
            script = self._scripts.get(cid)
            scripted = script.popleft() if script else None
        texts = self._texts(request["params"])
        outcome = scripted or (
            "canceled"
            if canceled or BATCH_CANCELED_TRIGGER in texts
            else "expired"
            if BATCH_EXPIRED_TRIGGER in texts
            else "errored"
            if BATCH_ERROR_TRIGGER in texts
            else "succeeded"
        )
        if outcome == "errored":
            return {"custom_id": cid, "result": {"type": "errored", "error": self._error(
                "invalid_request_error", "messages: scripted batch item failure")}}  # fmt: skip
        if outcome in ("expired", "canceled"):
            return {"custom_id": cid, "result": {"type": outcome}}
        status, reply = self._respond(request["params"])
        if status == 200:
            return {"custom_id": cid, "result": {"type": "succeeded", "message": reply}}
        return {"custom_id": cid, "result": {"type": "errored", "error": reply}}

    def _json(self, batch: _Batch) -> JSON:
        ended = batch.results is not None
        kinds = Counter(item["result"]["type"] for item in batch.results or [])
        status = "ended" if ended else ("canceling" if batch.canceled else "in_progress")
        return {
            "id": batch.batch_id,
            "type": "message_batch",
            "processing_status": status,
            "request_counts": {
                "processing": 0 if ended else len(batch.requests),
                "succeeded": kinds["succeeded"],
                "errored": kinds["errored"],
                "canceled": kinds["canceled"],
                "expired": kinds["expired"],
            },
            "created_at": _STAMP,
            "expires_at": _EXPIRES,
            "ended_at": _STAMP if ended else None,
            "cancel_initiated_at": _STAMP if batch.canceled else None,
            "archived_at": None,
            "results_url": f"{self._url()}/v1/messages/batches/{batch.batch_id}/results" if ended else None,
        }
