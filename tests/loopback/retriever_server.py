"""A production retriever behind HTTP on 127.0.0.1: ``POST {"queries": [...], "k": N}`` -> ``{"results": [...]}``.

It answers with any ``answer(queries, k)`` function (the gold retriever of ``tests/external``), injects
seeded faults from :mod:`tests.loopback.faults` (a faulted request never reaches ``answer``), and can
go down for good after some batches (``dead_after``: every later request is a 503), so a test can
watch a sweep lose an endpoint mid-run and resume. It records the query ids it answered.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.loopback.faults import FaultInjector, FaultPlan, write_fault
from tests.loopback.threaded import ThreadedLoopback

Answer = Callable[[list[dict[str, Any]], int], list[list[dict[str, Any]]]]
RETRIED_KINDS = ("malformed", "empty", "truncated", "reset", "429", "500", "529")
"""What a flaky endpoint sends that a retry gets through (``wrong``, a reply of the wrong shape, is not retried)."""


class RetrieverServer(ThreadedLoopback):
    thread_name = "loopback-retriever"

    def __init__(self, answer: Answer, faults: FaultPlan | None = None, dead_after: int | None = None) -> None:
        self.answer = answer
        self.faults = FaultInjector(faults)
        self.dead_after = dead_after
        self.answered: list[str] = []
        """Query ids answered cleanly, in the order their batches were served."""
        self.batches = 0
        self.dead_replies = 0
        self._lock = threading.Lock()

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # the test output stays the test's
                return

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with server._lock:
                    dead = server.dead_after is not None and server.batches >= server.dead_after
                    if dead:
                        server.dead_replies += 1
                if dead:
                    write_fault(self, "500", b'{"error": "production is down"}')
                    return
                digest, kind = server.faults.decide("POST", raw)
                if kind is not None:
                    write_fault(self, kind, b'{"error": "injected"}')
                    server.faults.record(digest, kind)
                    return
                request = json.loads(raw)
                results = server.answer(request["queries"], int(request["k"]))
                body = json.dumps({"results": results}, ensure_ascii=False).encode("utf-8")
                with server._lock:
                    server.batches += 1
                    server.answered.extend(q["id"] for q in request["queries"])
                server.faults.record(digest, None)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler
