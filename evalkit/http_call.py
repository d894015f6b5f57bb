"""One HTTP request evalkit makes itself: a whole-request deadline, a size cap, http(s) only, JSON read depth-safe.

The rule, for every call whose transport is evalkit's own (the external retriever's endpoint):

- ``timeout_s`` bounds the request from connect to the reply's last byte. A socket timeout alone bounds
  each read, so a server trickling one byte every half second would hold a request open for ever; here
  a watchdog shuts the socket down at the deadline and the request fails as a timeout.
- A reply is read in pieces and refused once it passes ``max_bytes`` (or declares more in its
  Content-Length), so memory stays bounded by the cap whatever the server sends.
- Only ``http://`` and ``https://`` URLs with a host: ``file:///`` and the like are refused, never read.
- :func:`loads_json` refuses a body nested deeper than :data:`MAX_DEPTH` (one line, not a RecursionError).

Failures are :class:`HttpError`: one bounded line, ``retryable`` when another attempt may get through (a
lost connection, a timeout, a body that is not JSON), never for a reply over the cap or nested too deep
(the same request gets the same reply). A reply's status is the caller's to judge: it gets every status.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

SCHEMES = ("http", "https")
PIECE = 1 << 16
"""Bytes read at a time: memory past the cap is never asked for."""
MAX_DEPTH = 64
"""Nesting a JSON reply may have (an external retriever's reply is four deep, five with a hit's tags)."""


class HttpError(Exception):
    """A request that got no usable reply: one bounded line, and whether a retry may fix it."""

    def __init__(self, reason: str, retryable: bool) -> None:
        super().__init__(" ".join(reason.split())[:300])
        self.reason = str(self)
        self.retryable = retryable


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
    problem = url_problem(url)
    if problem is not None:
        raise HttpError(problem, retryable=False)
    parts = urlsplit(url)
    kind = http.client.HTTPSConnection if parts.scheme.lower() == "https" else http.client.HTTPConnection
    connection = kind(str(parts.hostname), parts.port, timeout=timeout_s)
    expired = threading.Event()

    def cut() -> None:  # the deadline: a blocked read returns at once, so the request ends as a timeout
        expired.set()
        sock = connection.sock
        if sock is not None:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    watchdog = threading.Timer(timeout_s, cut)
    watchdog.daemon = True
    watchdog.start()
    late = HttpError(f"no whole reply within timeout_s={timeout_s:g} s", retryable=True)
    try:
        connection.connect()
        if expired.is_set():  # the deadline passed while connecting, before there was a socket to cut
            raise late
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        connection.request(method, target, body=body, headers=dict(headers or {}))
        reply = connection.getresponse()
        declared = reply.getheader("content-length", "")
        if declared.strip().isdigit() and int(declared) > max_bytes:
            raise HttpError(f"the reply declares {int(declared):,} bytes, over the {max_bytes:,} byte cap", False)
        received = bytearray()
        while piece := reply.read1(PIECE):
            received += piece
            if len(received) > max_bytes:
                raise HttpError(f"the reply passed the {max_bytes:,} byte cap (the rest was not read)", False)
        if expired.is_set():
            raise late
        return Reply(reply.status, bytes(received), {k.lower(): v for k, v in reply.getheaders()})
    except HttpError:
        raise
    except (OSError, http.client.HTTPException, ssl.SSLError, ValueError) as exc:
        if expired.is_set() or isinstance(exc, TimeoutError):
            raise late from None
        raise HttpError(f"{type(exc).__name__}: {exc}", retryable=True) from None
    finally:
        watchdog.cancel()
        connection.close()


def loads_json(body: bytes) -> Any:
    """The body as JSON: :class:`HttpError` (retryable) when it is not JSON, (not retryable) when nested too deep."""
    try:
        value = json.loads(body)
    except RecursionError:
        raise HttpError(f"the reply is JSON nested deeper than {MAX_DEPTH} levels", retryable=False) from None
    except (ValueError, UnicodeDecodeError):
        raise HttpError(f"the reply is not JSON ({len(body):,} bytes)", retryable=True) from None
    if _deeper_than(value, MAX_DEPTH):
        raise HttpError(f"the reply is JSON nested deeper than {MAX_DEPTH} levels", retryable=False)
    return value


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether lists and objects nest more than ``limit`` levels (a loop, not recursion: it cannot overflow)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False
