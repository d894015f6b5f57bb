"""The one HTTP rule: every request evalkit makes, or lets an SDK make, goes through here.

- ``timeout_s`` bounds the request from connect to the reply's last byte. A socket timeout alone bounds
  each read, so a server trickling one byte every half second would hold a request open for ever; here
  a watchdog shuts the socket down at the deadline. It keeps its own reference to the socket, taken
  right after connecting: ``http.client`` hands the socket to the response and forgets it when the
  reply will close the connection (HTTP/1.0, ``Connection: close``), so a watchdog that looked for it
  on the connection found nothing to shut and the read went on for ever.
- A reply is read in pieces and refused once it passes ``max_bytes`` (or declares more in its
  Content-Length), so memory stays bounded by the cap whatever the server sends. A body that ends
  before its declared Content-Length is refused (retryable): a body cut short may still parse.
- Only ``http://`` and ``https://`` URLs with a host: ``file:///`` and the like are refused, never read.
- JSON is read depth-safe: :class:`DepthGuard` counts nesting on the raw bytes as they arrive (a loop,
  not recursion) and refuses past :data:`MAX_DEPTH`, so no parser ever sees a 100,000-deep reply.
- An event stream (a streamed chat reply) is refused once one line passes :data:`MAX_EVENT_LINE`:
  an SDK's event decoder copies its line buffer on every piece, so a cap-sized line with no newline cost a
  few copies of the cap per request in flight (a position run at 4 in flight peaked 80 MB higher).

:func:`request` reads a whole reply (the external retriever, MLflow, the PR comment). The SDKs (OpenAI,
Anthropic, Cohere, the judge's async Anthropic) send through :class:`Exchange` too: :mod:`evalkit.http_sdk`
only adapts it to httpx's transport interface (streamed bodies are read piece by piece under the same deadline).

Failures are :class:`HttpError`: one bounded line, ``retryable`` when another attempt may get through (a
lost connection, a timeout, a body cut short or not JSON), never for a reply over the cap or nested too
deep (the same request gets the same reply). A reply's status is the caller's to judge: it gets every status.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import ssl
import threading
from collections.abc import Iterator, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

SCHEMES = ("http", "https")
PIECE = 1 << 16
"""Bytes read at a time: memory past the cap is never asked for."""
MAX_DEPTH = 64
"""Nesting a JSON reply may have (an external retriever's reply is four deep, an OpenAI chunk about six)."""
SDK_MAX_BYTES = 64 * 1024 * 1024
"""The cap on one reply to an SDK whose settings have no ``max_reply_mb``."""
MAX_EVENT_LINE = 1024 * 1024
"""Bytes one line of a ``text/event-stream`` reply may have (an OpenAI chunk is under 1 KB)."""


class HttpError(Exception):
    """A request that got no usable reply: one bounded line, and whether a retry may fix it."""

    def __init__(self, reason: str, retryable: bool) -> None:
        super().__init__(" ".join(reason.split())[:300])
        self.reason = str(self)
        self.retryable = retryable


def http_error_in(exc: BaseException | None) -> HttpError | None:
    """The :class:`HttpError` behind ``exc`` (an SDK wraps its transport's errors), or None."""
    seen = 0
    while exc is not None and seen < 16:
        if isinstance(exc, HttpError):
            return exc
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


@dataclass(frozen=True)
class Reply:
    """A whole reply, read within the deadline and under the cap."""

    status: int
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be called (not http/https, no host, a bad port), or None when it can."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return f"{url!r} is not a URL ({exc})"
    if parts.scheme.lower() not in SCHEMES:
        return f"{url!r} is not an http:// or https:// URL"
    if not parts.hostname:
        return f"{url!r} has no host"
    if port == 0:
        return f"{url!r} has port 0"
    return None


_SPECIAL = re.compile(rb'[\[\]{}"\\]')


class DepthGuard:
    """Counts JSON nesting on bytes fed in pieces (strings and escapes understood); refuses past ``limit``.

    Works on any stream of JSON texts (a body, JSON lines, server-sent events): brackets inside strings
    do not count, and a stray closing bracket never makes the depth negative.
    """

    def __init__(self, limit: int = MAX_DEPTH) -> None:
        self.limit = limit
        self.depth = 0
        self.in_string = False
        self.escaped = False  # the last piece ended on a backslash inside a string

    def feed(self, piece: bytes) -> None:
        skip = 0 if self.escaped else -1
        self.escaped = False
        for match in _SPECIAL.finditer(piece):
            at = match.start()
            if at == skip:
                continue
            char = piece[at]
            if self.in_string:
                if char == 0x5C:  # a backslash: the next byte is escaped, perhaps in the next piece
                    skip = at + 1
                    self.escaped = skip == len(piece)
                elif char == 0x22:
                    self.in_string = False
            elif char == 0x22:
                self.in_string = True
            elif char in (0x5B, 0x7B):
                self.depth += 1
                if self.depth > self.limit:
                    raise HttpError(f"the reply is JSON nested deeper than {self.limit} levels", retryable=False)
            elif char in (0x5D, 0x7D):
                self.depth = max(0, self.depth - 1)


class LineGuard:
    """Refuses a stream once one line (ended by ``\\n`` or ``\\r``) passes ``limit`` bytes; fed in pieces.

    Pieces are at most :data:`PIECE` bytes, under any sensible limit, so only a line that spans pieces can pass it.
    """

    def __init__(self, limit: int = MAX_EVENT_LINE) -> None:
        self.limit = limit
        self.run = 0  # bytes since the last line end

    def feed(self, piece: bytes) -> None:
        ends = [at for at in (piece.find(b"\n"), piece.find(b"\r")) if at >= 0]
        if ends:
            longest = self.run + min(ends)  # the line running into this piece ends here
            self.run = len(piece) - max(piece.rfind(b"\n"), piece.rfind(b"\r")) - 1
        else:
            self.run += len(piece)
            longest = self.run
        if max(longest, self.run) > self.limit:
            raise HttpError(f"the event stream has a line over the {self.limit:,} byte cap", retryable=False)


def loads_json(body: bytes) -> Any:
    """The body as JSON: :class:`HttpError` (retryable) when it is not JSON, (not retryable) when nested too deep."""
    DepthGuard().feed(body)
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise HttpError(f"the reply is not JSON ({len(body):,} bytes)", retryable=True) from None


class _Watchdog:
    """Shuts the request's socket down at the deadline, from its own reference to the socket."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.expired = threading.Event()
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(timeout_s, self._cut)
        self._timer.daemon = True
        self._timer.start()

    def hold(self, sock: socket.socket | None) -> None:
        """Keep ``sock`` to shut at the deadline (at once when it has already passed)."""
        with self._lock:
            self._sock = sock
        if self.expired.is_set():
            self._cut()

    def _cut(self) -> None:  # a blocked read returns at once, so the request ends as a timeout
        self.expired.set()
        with self._lock:
            sock = self._sock
        if sock is not None:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def late(self) -> HttpError:
        return HttpError(f"no whole reply within timeout_s={self.timeout_s:g} s", retryable=True)

    def stop(self) -> None:
        self._timer.cancel()


class Exchange:
    """One request sent and its reply's head read; :meth:`pieces` reads the body under the deadline and cap."""

    def __init__(
        self,
        method: str,
        url: str,
        body: bytes | None,
        *,
        timeout_s: float,
        max_bytes: int,
        headers: Mapping[str, str] | None = None,
        depth_guard: bool = False,
    ) -> None:
        problem = url_problem(url)
        if problem is not None:
            raise HttpError(problem, retryable=False)
        parts = urlsplit(url)
        kind = http.client.HTTPSConnection if parts.scheme.lower() == "https" else http.client.HTTPConnection
        self.max_bytes = max_bytes
        self._guard = DepthGuard() if depth_guard else None
        self._connection = kind(str(parts.hostname), parts.port, timeout=timeout_s)
        self._watchdog = _Watchdog(timeout_s)
        try:
            self._connection.connect()
            self._watchdog.hold(self._connection.sock)  # ours: http.client forgets it for a closing reply
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            self._connection.request(method, target, body=body, headers=dict(headers or {}))
            self._reply = self._connection.getresponse()
        except BaseException as exc:
            self.close()
            raise self._failure(exc) from None
        self.status = self._reply.status
        self.version = self._reply.version
        self.headers = [(k, v) for k, v in self._reply.getheaders()]
        declared = (self._reply.getheader("content-length") or "").strip()
        self.declared = int(declared) if declared.isdigit() else None
        # An event stream the client asked for (Accept) or the server says it sends: its lines are capped.
        accept = " ".join(v for k, v in (headers or {}).items() if k.lower() == "accept").lower()
        kind = (self._reply.getheader("content-type") or "").lower()
        streamed = "text/event-stream" in accept or kind.startswith("text/event-stream")
        self._lines = LineGuard() if depth_guard and streamed else None
        if self.declared is not None and self.declared > max_bytes:
            self.close()
            raise HttpError(f"the reply declares {self.declared:,} bytes, over the {max_bytes:,} byte cap", False)

    def _failure(self, exc: BaseException) -> BaseException:
        if isinstance(exc, HttpError):
            return exc
        if self._watchdog.expired.is_set() or isinstance(exc, TimeoutError):
            return self._watchdog.late()
        if isinstance(exc, OSError | http.client.HTTPException | ssl.SSLError | ValueError):
            return HttpError(f"{type(exc).__name__}: {exc}", retryable=True)
        return exc

    def pieces(self) -> Iterator[bytes]:
        """The body in pieces; :class:`HttpError` past the deadline, the cap, the depth, or cut short."""
        received = 0
        try:
            while True:
                if self._watchdog.expired.is_set():
                    raise self._watchdog.late()
                piece = self._reply.read1(PIECE)
                if not piece:
                    break
                received += len(piece)
                if received > self.max_bytes:
                    raise HttpError(f"the reply passed the {self.max_bytes:,} byte cap (the rest was not read)", False)
                if self._guard is not None:
                    self._guard.feed(piece)
                if self._lines is not None:
                    self._lines.feed(piece)
                yield piece
            if self._watchdog.expired.is_set():
                raise self._watchdog.late()
            if self.declared is not None and received < self.declared and not self._reply.chunked:
                raise HttpError(f"the reply ended after {received:,} of its declared {self.declared:,} bytes", True)
        except BaseException as exc:
            raise self._failure(exc) from None
        finally:
            self.close()

    def close(self) -> None:
        self._watchdog.stop()
        with suppress(Exception):
            self._connection.close()
        reply = getattr(self, "_reply", None)
        if reply is not None:
            with suppress(Exception):
                reply.close()


def request(
    method: str,
    url: str,
    body: bytes | None,
    *,
    timeout_s: float,
    max_bytes: int,
    headers: Mapping[str, str] | None = None,
) -> Reply:
    """Send one request and read the whole reply within ``timeout_s`` and ``max_bytes`` (see the module's rule)."""
    exchange = Exchange(method, url, body, timeout_s=timeout_s, max_bytes=max_bytes, headers=headers)
    received = b"".join(exchange.pieces())
    return Reply(exchange.status, received, {k.lower(): v for k, v in exchange.headers})
