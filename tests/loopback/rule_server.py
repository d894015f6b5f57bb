"""A loopback HTTP server that answers every request with one behaviour, framed one way.

Framing: ``http10`` (an HTTP/1.0 reply, read until the server closes), ``close`` (HTTP/1.1 with
``Connection: close``, the default of Python's ``http.server``) or ``keepalive`` (HTTP/1.1, the
connection kept for the next request). Behaviour: ``ok`` (the body given), ``trickle`` (one byte every
``trickle_s``), ``huge`` (``HUGE_BYTES`` streamed in pieces, never held), ``malformed`` (not JSON),
``deep`` (JSON nested 100,000 levels), ``short`` (half the body its Content-Length declares, then closed).
Every connection is a daemon thread that stops when the client hangs up or after ``MAX_SERVE_S``.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Self

MAX_SERVE_S = 20.0
HUGE_BYTES = 200 * 1024 * 1024
DEEP = 100_000
FRAMINGS = ("http10", "close", "keepalive")
FAULTS = ("trickle", "huge", "malformed", "deep", "short")


class RuleServer:
    """Serve one behaviour under one framing on 127.0.0.1 until stopped (a ``with`` block)."""

    def __init__(
        self, framing: str, behaviour: str, ok_body: bytes = b"{}", content_type: str = "application/json"
    ) -> None:
        self.framing, self.behaviour = framing, behaviour
        self.ok_body, self.content_type = ok_body, content_type
        self.trickle_s = 0.5
        self.requests = 0
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self._stopped = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def __enter__(self) -> Self:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        self._listener.close()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        started = time.monotonic()
        sock.settimeout(MAX_SERVE_S)
        buffered = b""
        with sock:
            try:
                while time.monotonic() - started < MAX_SERVE_S:
                    buffered = _read_request(sock, buffered)
                    if buffered is None:
                        return
                    self.requests += 1
                    if not self._reply(sock) or self.framing != "keepalive":
                        return
            except OSError:  # the client hung up: the reply stops here
                return

    def _head(self, length: int | None, chunked: bool = False) -> bytes:
        version = "HTTP/1.0" if self.framing == "http10" else "HTTP/1.1"
        lines = [f"{version} 200 OK", f"Content-Type: {self.content_type}"]
        if length is not None:
            lines.append(f"Content-Length: {length}")
        if chunked:
            lines.append("Transfer-Encoding: chunked")
        if self.framing == "close":
            lines.append("Connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def _reply(self, sock: socket.socket) -> bool:
        """Write the reply; True when the connection may serve another request."""
        framed = self.framing != "http10"  # an HTTP/1.0 body ends when the server closes
        if self.behaviour == "ok":
            sock.sendall(self._head(len(self.ok_body)) + self.ok_body)
            return True
        if self.behaviour == "trickle":
            sock.sendall(self._head(10_000 if framed else None))
            for _ in range(int(MAX_SERVE_S / self.trickle_s)):
                sock.sendall(b" ")
                time.sleep(self.trickle_s)
            return False
        if self.behaviour == "huge":
            keep = self.framing == "keepalive"
            sock.sendall(self._head(None, chunked=keep))
            piece = b"a" * (1 << 16)
            frame = f"{len(piece):x}\r\n".encode() + piece + b"\r\n" if keep else piece
            for _ in range(HUGE_BYTES // len(piece)):
                sock.sendall(frame)
            return False
        body = {"malformed": b"{not json at all", "deep": b"[" * DEEP + b"]" * DEEP, "short": self.ok_body}
        payload = body[self.behaviour]
        if self.behaviour == "short":
            sock.sendall(self._head(len(payload) * 2) + payload)
            return False
        sock.sendall(self._head(len(payload) if framed else None) + payload)
        return framed


def _read_request(sock: socket.socket, buffered: bytes) -> bytes | None:
    """Read one request (head and Content-Length body); what follows it, or None when the client closed."""
    data = buffered
    while b"\r\n\r\n" not in data:
        piece = sock.recv(65536)
        if not piece:
            return None
        data += piece
    head, _, rest = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    while len(rest) < length:
        piece = sock.recv(65536)
        if not piece:
            return None
        rest += piece
    return rest[length:]
