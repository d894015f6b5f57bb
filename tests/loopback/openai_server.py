"""A loopback HTTP server speaking the OpenAI wire format, for tests of the real ``openai`` SDK.

Two modes on 127.0.0.1 (a free port, a daemon thread; stopped by ``stop`` or at exit):

- a **proxy** (``upstream=<url>``): forwards every request to a real server (llama.cpp's,
  started by xllamacpp) and streams its reply back as it arrives, counting requests by path,
  so a test sees how many requests reached the model;
- a **stand-in**: ``/v1/chat/completions`` streams (SSE) or returns an echo answer with
  usage; ``/v1/embeddings`` returns deterministic unit vectors of ``dim`` numbers.

In both modes ``script`` holds faults for the next requests, one per request, in order:
``429`` (``Retry-After: 0``), ``500``, ``503``, ``401``, ``404``, ``too-long`` (400 with
OpenAI's ``context_length_exceeded``), ``malformed`` (a 200 whose events are not JSON),
``reset`` (a 200 whose body is cut by a TCP reset), ``trickle`` (a 200 whose body comes one
byte every 50 ms for ``trickle_s`` seconds; ``trickle_finished`` counts bodies sent whole).
"""

from __future__ import annotations

import hashlib
import json
import socket
import struct
import threading
import time
import urllib.request
from collections import Counter, deque
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.loopback.threaded import ThreadedLoopback

FAULTS = ("429", "500", "503", "401", "404", "too-long", "malformed", "reset", "trickle")


def unit_vector(text: str, dim: int) -> list[float]:
    """A deterministic unit vector for a text (its hash's bytes, centred)."""
    raw = hashlib.sha256(text.encode()).digest() * (dim // 32 + 1)
    values = [b - 127.5 for b in raw[:dim]]
    norm = sum(v * v for v in values) ** 0.5
    return [v / norm for v in values]


class OpenAILoopback(ThreadedLoopback):
    """An OpenAI-compatible stand-in, or a counting proxy in front of a real server."""

    thread_name = "openai-loopback"

    def __init__(self, upstream: str | None = None, *, dim: int = 8, trickle_s: float = 30.0) -> None:
        self.upstream = upstream.rstrip("/") if upstream else None
        self.dim = dim
        self.trickle_s = trickle_s
        self.script: deque[str] = deque()
        self.counts: Counter[str] = Counter()
        """Requests received, by path (faulted ones included)."""
        self.bodies: list[dict[str, Any]] = []
        self.headers_seen: list[dict[str, str]] = []
        self.trickle_finished = 0
        self.prefill_s_per_kchar = 0.0
        """Seconds of 'prompt processing' per 1,000 prompt characters before the first streamed token."""
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with server._lock:
                    server.counts[self.path] += 1
                    server.headers_seen.append({k.lower(): v for k, v in self.headers.items()})
                    fault = server.script.popleft() if server.script else None
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {}
                with server._lock:
                    server.bodies.append(body)
                if fault is not None:
                    server.fault(self, fault, body)
                elif server.upstream is not None:
                    server.forward(self, raw)
                elif self.path.endswith("/embeddings"):
                    server.embeddings(self, body)
                else:
                    server.chat(self, body)

        return Handler

    # ------------------------------------------------------------------ replies

    def send_json(self, handler: BaseHTTPRequestHandler, status: int, payload: Any, **headers: str) -> None:
        data = json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            handler.send_header(name.replace("_", "-"), value)
        handler.end_headers()
        handler.wfile.write(data)

    def sse_head(self, handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Connection", "close")
        handler.end_headers()
        handler.close_connection = True

    def chat(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        last = str(body["messages"][-1]["content"]).splitlines()[-1]
        words = f"echo: {last}".split(" ")
        usage = {"prompt_tokens": 10 * len(body["messages"]), "completion_tokens": len(words), "total_tokens": 0}
        if not body.get("stream"):
            message = {"role": "assistant", "content": " ".join(words)}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            reply = {"id": "c1", "object": "chat.completion", "created": 0, "model": body["model"]}
            self.send_json(handler, 200, {**reply, "choices": [choice], "usage": usage})
            return
        self.sse_head(handler)
        if self.prefill_s_per_kchar:
            chars = sum(len(str(m.get("content", ""))) for m in body["messages"])
            time.sleep(self.prefill_s_per_kchar * chars / 1000)
        base = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": body["model"]}
        for i, word in enumerate(words):
            delta = {"content": word if i == 0 else " " + word}
            self._event(handler, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
        self._event(handler, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        self._event(handler, {**base, "choices": [], "usage": usage})
        handler.wfile.write(b"data: [DONE]\n\n")

    def _event(self, handler: BaseHTTPRequestHandler, payload: Any) -> None:
        handler.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")
        handler.wfile.flush()

    def embeddings(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [{"object": "embedding", "index": i, "embedding": unit_vector(t, self.dim)} for i, t in enumerate(texts)]
        usage = {"prompt_tokens": sum(len(t.split()) for t in texts), "total_tokens": 0}
        self.send_json(handler, 200, {"object": "list", "data": data, "model": body["model"], "usage": usage})

    def forward(self, handler: BaseHTTPRequestHandler, raw: bytes) -> None:
        """Pass the request to the real server and its reply back, chunk by chunk, as it arrives."""
        request = urllib.request.Request(
            self.upstream + handler.path, data=raw, headers={"Content-Type": "application/json"}
        )
        try:
            reply = urllib.request.urlopen(request, timeout=600)
        except urllib.error.HTTPError as err:
            reply = err
        handler.send_response(reply.status)
        handler.send_header("Content-Type", reply.headers.get("Content-Type", "application/json"))
        handler.send_header("Connection", "close")
        handler.end_headers()
        handler.close_connection = True
        try:
            while chunk := reply.read1(65536) if hasattr(reply, "read1") else reply.read():
                handler.wfile.write(chunk)
                handler.wfile.flush()
        except OSError:
            pass  # the client went away (a killed run): the real server finishes on its own

    def fault(self, handler: BaseHTTPRequestHandler, kind: str, body: dict[str, Any]) -> None:
        error = {"error": {"message": f"scripted {kind}", "type": "test", "code": None}}
        if kind == "429":
            self.send_json(handler, 429, error, Retry_After="0")
        elif kind in ("500", "503", "401", "404"):
            self.send_json(handler, int(kind), error)
        elif kind == "too-long":
            too_long = {
                "message": "This model's maximum context length is 10 tokens",
                "code": "context_length_exceeded",
            }
            self.send_json(handler, 400, {"error": {**too_long, "type": "invalid_request_error"}})
        elif kind == "malformed":
            self.sse_head(handler)
            handler.wfile.write(b'data: {"id": "c1", "choices": [{"delta": {"content": "x"},, <html>\n\n')
        elif kind == "reset":
            self.sse_head(handler)
            handler.wfile.write(b'data: {"id": "c1", "object": "chat.completion.chunk", "choi')
            handler.wfile.flush()
            # SO_LINGER 0: close() sends RST instead of FIN, the "connection reset by peer" a client sees.
            handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            handler.connection.close()
        elif kind == "trickle":
            self.sse_head(handler)
            end = time.monotonic() + self.trickle_s
            try:
                while time.monotonic() < end:
                    handler.wfile.write(b" ")
                    handler.wfile.flush()
                    time.sleep(0.05)
                handler.wfile.write(b"\n\n")
                with self._lock:
                    self.trickle_finished += 1
            except OSError:
                pass  # the client hung up: what the deadline is for
        else:
            raise ValueError(f"unknown fault {kind!r} (known: {', '.join(FAULTS)})")
