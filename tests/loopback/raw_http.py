"""A raw HTTP server on 127.0.0.1 that answers each request with bytes a test writes itself.

A real socket speaking (or failing to speak) HTTP/1.1: ``reply(sock, request)`` gets the connected
socket and the parsed request (its JSON body, when it has one) and writes anything, at any pace: a
wrong status, a body trickled a byte at a time, a Content-Length that lies, a reset. Every connection
is served on its own daemon thread and closed after one request; :meth:`RawHttpServer.stop` (or leaving
the ``with`` block) closes the listening socket, and a reply that is still trickling stops when the
client hangs up or after ``MAX_SERVE_S``.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Self

MAX_SERVE_S = 20.0
"""No connection is served longer than this, whatever the reply does."""


@dataclass(frozen=True)
class Request:
    """What the client sent: the request line, its body, and the body as JSON (None when it is not)."""

    line: str
    body: bytes
    json: Any


Reply = Callable[[socket.socket, Request], None]


def read_request(sock: socket.socket) -> Request:
    data = b""
    while b"\r\n\r\n" not in data:
        piece = sock.recv(65536)
        if not piece:
            break
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = next((int(v) for k, _, v in (h.partition(":") for h in lines[1:]) if k.lower() == "content-length"), 0)
    while len(body) < length:
        piece = sock.recv(65536)
        if not piece:
            break
        body += piece
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    return Request(lines[0], body, parsed)


def response(status: str, body: bytes, content_type: str = "application/json", length: int | None = None) -> bytes:
    """A whole HTTP/1.1 response; ``length`` overrides the Content-Length it declares (None: the body's)."""
    declared = len(body) if length is None else length
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {declared}\r\nConnection: close\r\n\r\n"
    )
    return head.encode("latin-1") + body


class RawHttpServer:
    """Serve ``reply`` on 127.0.0.1 (any free port) until stopped."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.requests: list[Request] = []
        self._listener: socket.socket | None = None
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        assert self._listener is not None, "server not started"
        host, port = self._listener.getsockname()[:2]
        return f"http://{host}:{port}/search"

    def start(self) -> Self:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), name="raw-http", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                sock, _ = listener.accept()
            except OSError:  # closed by stop()
                return
            threading.Thread(target=self._serve, args=(sock,), name="raw-http-conn", daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        sock.settimeout(MAX_SERVE_S)
        started = time.monotonic()
        try:
            request = read_request(sock)
            with self._lock:
                self.requests.append(request)
            if time.monotonic() - started < MAX_SERVE_S:
                self.reply(sock, request)
        except OSError:  # the client hung up (a timeout on its side): nothing more to send
            pass
        finally:
            sock.close()
