"""Seeded fault injection for the loopback servers: flaky-API replies a client must retry through.

A :class:`FaultPlan` says how often (``rate``) and how (``kinds``) requests fail. Whether a
request fails depends only on the seed, the request's own bytes and how many times that exact
request was seen before, never on thread timing, so a run is reproducible with worker threads.
A request is faulted at most ``max_consecutive`` times in a row, so a client with more retries
than that always gets through (a bounded loop), and ``max_requests`` stops a runaway client
with a non-retryable 400.

Kinds (what the wire shows; each is a real failure seen from real APIs or proxies):

- ``malformed``: HTTP 200 whose body is not JSON;
- ``empty``: HTTP 200 with an empty body;
- ``truncated``: HTTP 200 whose body stops halfway (the connection closes before Content-Length);
- ``reset``: the connection is reset (RST) in the middle of the response;
- ``429``: rate limited, with ``retry-after-ms`` and ``Retry-After`` headers;
- ``500``, ``529``: server error, overloaded;
- ``wrong``: HTTP 200, valid JSON of a response that cannot be right (the server decides what:
  Cohere sends a wrong result count, a repeated or out-of-range index or a NaN score; Anthropic a
  message without a text block).

A faulted reply never touches the server's model state (prompt-cache prefixes, batches), so a
run with faults answers exactly what a clean run answers.
"""

from __future__ import annotations

import hashlib
import socket
import struct
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler

FAULT_KINDS = ("malformed", "empty", "truncated", "reset", "429", "500", "529", "wrong")
"""Every kind, in a fixed order (a request's kind is picked from the plan's ``kinds`` by hash)."""

STATUS_OF = {"429": 429, "500": 500, "529": 529}


@dataclass(frozen=True)
class FaultPlan:
    """How often and how the server fails; the default fails nothing."""

    rate: float = 0.0
    """Chance that a request (seen fewer than ``max_consecutive`` times) is faulted."""
    kinds: tuple[str, ...] = FAULT_KINDS
    seed: int = 0
    max_consecutive: int = 3
    """The same request is faulted at most this many times in a row; the next one is served."""
    max_requests: int = 10_000
    """Past this many requests every reply is a 400 (a client stuck in a loop fails fast and clearly)."""
    retry_after_ms: int = 2
    """The wait a 429 asks for (``retry-after-ms``; ``Retry-After`` carries 0 seconds)."""

    def __post_init__(self) -> None:
        unknown = sorted(set(self.kinds) - set(FAULT_KINDS))
        if unknown or not self.kinds:
            raise ValueError(f"unknown fault kinds {unknown} (known: {', '.join(FAULT_KINDS)})")
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"fault rate must lie in [0, 1], got {self.rate}")


class FaultInjector:
    """Decides, per request, whether and how to fail it; counts what it did (thread-safe)."""

    def __init__(self, plan: FaultPlan | None = None) -> None:
        self.plan = plan or FaultPlan()
        self.injected: Counter[str] = Counter()
        """Faults sent, by kind."""
        self.served: Counter[str] = Counter()
        """Clean replies by request digest: a value above 1 means a client paid twice for one request."""
        self.total = 0
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()

    def decide(self, scope: str, raw: bytes) -> tuple[str, str | None]:
        """(request digest, fault kind or None) for one request; ``over-limit`` past ``max_requests``."""
        digest = hashlib.sha256(scope.encode() + b"\0" + raw).hexdigest()
        plan = self.plan
        with self._lock:
            self.total += 1
            if self.total > plan.max_requests:
                return digest, "over-limit"
            nth = self._seen[digest]
            self._seen[digest] += 1
        if nth >= plan.max_consecutive or plan.rate <= 0.0:
            return digest, None
        draw = hashlib.sha256(f"{plan.seed}:{digest}:{nth}".encode()).digest()
        chance = int.from_bytes(draw[:8], "big") / 2.0**64
        if chance >= plan.rate:
            return digest, None
        return digest, plan.kinds[int.from_bytes(draw[8:12], "big") % len(plan.kinds)]

    def record(self, digest: str, kind: str | None) -> None:
        with self._lock:
            if kind is None:
                self.served[digest] += 1
                # A clean reply ends the run of faults: the next identical request starts afresh.
                self._seen[digest] = self.plan.max_consecutive
            else:
                self.injected[kind] += 1

    @property
    def paid_twice(self) -> int:
        """Requests answered cleanly more than once (a cache that failed to hold a paid answer)."""
        with self._lock:
            return sum(1 for n in self.served.values() if n > 1)


def write_fault(handler: BaseHTTPRequestHandler, kind: str, body: bytes, *, retry_after_ms: int = 2) -> None:
    """Send fault ``kind`` on the handler's connection.

    ``body``: the JSON sent for ``wrong`` (a reply that cannot be right) and for the error kinds
    (the provider's error body); the other kinds send their own broken bytes.
    """
    if kind in STATUS_OF:
        extra = {"retry-after-ms": str(retry_after_ms), "Retry-After": "0"} if kind == "429" else {}
        _reply(handler, STATUS_OF[kind], body, extra)
    elif kind == "over-limit":
        _reply(handler, 400, body, {})
    elif kind == "wrong":
        _reply(handler, 200, body, {})
    elif kind == "malformed":
        _reply(handler, 200, b'{"id": "partial", "results": [{"index": 0,, <html>', {})
    elif kind == "empty":
        _reply(handler, 200, b"", {})
    elif kind == "truncated":
        payload = b'{"id": "cut", "type": "message", "results": [], "content": [{"type": "text", "text": "'
        _head(handler, 200, {"Content-Length": str(len(payload) * 2)})
        handler.wfile.write(payload)  # half the promised bytes, then an orderly close
        handler.close_connection = True
    elif kind == "reset":
        _head(handler, 200, {"Content-Length": "4096"})
        handler.wfile.write(b'{"id": "reset", ')
        handler.wfile.flush()
        # SO_LINGER 0: close() sends RST instead of FIN, the "connection reset by peer" a client sees.
        handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        handler.connection.close()
        handler.close_connection = True
    else:
        raise ValueError(f"unknown fault kind {kind!r}")


def _head(handler: BaseHTTPRequestHandler, status: int, headers: Mapping[str, str]) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    for name, value in headers.items():
        handler.send_header(name, value)
    handler.end_headers()


def _reply(handler: BaseHTTPRequestHandler, status: int, body: bytes, headers: Mapping[str, str]) -> None:
    _head(handler, status, {"Content-Length": str(len(body)), **headers})
    handler.wfile.write(body)
