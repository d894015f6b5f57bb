"""The one HTTP rule (:mod:`evalkit.http_call`) as httpx transports, for the SDKs evalkit drives.

:func:`sdk_client` is an ``httpx.Client`` given to the OpenAI, Anthropic and Cohere SDKs; :func:`sdk_async_client`
its ``httpx.AsyncClient`` twin (the judge's ``AsyncAnthropic``), running the same code on a pool of threads of
its own so the event loop never blocks on a socket. Every request is one :class:`~evalkit.http_call.Exchange`:
the SDK's own timeout is ignored (``timeout_s`` is each request's whole deadline), no connection is reused, and
failures are :class:`~evalkit.http_call.HttpError` (an SDK wraps them as its connection error, with this as the
cause: :func:`~evalkit.http_call.http_error_in` finds it).
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Any

from evalkit.http_call import SDK_MAX_BYTES, Exchange


def sdk_client(timeout_s: float, max_bytes: int = SDK_MAX_BYTES, library: str = "httpx") -> Any:
    """An ``httpx.Client`` for an SDK (``http_client=``): every request under the rule, no pooling.

    ``library``: the HTTP library the SDK is built on (``httpx``, or ``httpx2`` for anthropic 2.x); its
    client, transport and stream classes are used, so the SDK's own type checks and error handling hold.
    """
    httpx = importlib.import_module(library)
    return httpx.Client(transport=_transport_class(httpx)(timeout_s, max_bytes), timeout=timeout_s)


def sdk_async_client(
    timeout_s: float, max_bytes: int = SDK_MAX_BYTES, library: str = "httpx", max_connections: int = 16
) -> Any:
    """An ``httpx.AsyncClient`` for an async SDK: every request under the rule, at most ``max_connections`` at once.

    Each request's connect, send and reads run on the transport's own threads (``max_connections`` of them),
    so a request waits for a free thread, never the event loop for a socket; no connection is reused.
    """
    httpx = importlib.import_module(library)
    transport = _async_transport_class(httpx)(timeout_s, max_bytes, max_connections)
    return httpx.AsyncClient(transport=transport, timeout=timeout_s)


_FRAMING = ("content-length", "transfer-encoding")


def _exchange_for(request: Any, body: bytes, timeout_s: float, max_bytes: int) -> Exchange:
    """An httpx request sent through :class:`Exchange` (the SDK's own timeout ignored: ``timeout_s`` rules)."""
    return Exchange(
        request.method,
        str(request.url),
        body or None,
        timeout_s=timeout_s,
        max_bytes=max_bytes,
        # http.client frames the body itself (read whole first): the SDK's framing headers would lie.
        headers={k: v for k, v in request.headers.items() if k.lower() not in _FRAMING},
        depth_guard=True,
    )


def _version(exchange: Exchange) -> dict[str, bytes]:
    """The reply's HTTP version as httpx records it (for the SDK's logs)."""
    return {"http_version": b"HTTP/1.0" if exchange.version == 10 else b"HTTP/1.1"}


@cache
def _transport_class(httpx: Any) -> Any:
    """An httpx transport (of the library ``httpx``) that sends each request through :class:`Exchange`."""

    class Body(httpx.SyncByteStream):  # type: ignore[misc,name-defined]
        def __init__(self, exchange: Exchange) -> None:
            self._exchange = exchange

        def __iter__(self) -> Iterator[bytes]:
            yield from self._exchange.pieces()

        def close(self) -> None:
            self._exchange.close()

    class RuleTransport(httpx.BaseTransport):  # type: ignore[misc,name-defined]
        def __init__(self, timeout_s: float, max_bytes: int) -> None:
            self.timeout_s = timeout_s
            self.max_bytes = max_bytes

        def handle_request(self, request: Any) -> Any:
            exchange = _exchange_for(request, request.read(), self.timeout_s, self.max_bytes)
            return httpx.Response(
                exchange.status,
                headers=exchange.headers,
                stream=Body(exchange),
                request=request,
                extensions=_version(exchange),
            )

    return RuleTransport


@cache
def _async_transport_class(httpx: Any) -> Any:
    """The async twin of :func:`_transport_class`: each blocking step on the transport's own threads."""

    class AsyncBody(httpx.AsyncByteStream):  # type: ignore[misc,name-defined]
        def __init__(self, exchange: Exchange, pool: ThreadPoolExecutor) -> None:
            self._exchange = exchange
            self._pieces = exchange.pieces()
            self._pool = pool

        async def __aiter__(self) -> AsyncIterator[bytes]:
            loop = asyncio.get_running_loop()
            while True:  # each read waits on a thread under the request's deadline; the loop stays free
                piece = await loop.run_in_executor(self._pool, next, self._pieces, None)
                if piece is None:
                    return
                yield piece

        async def aclose(self) -> None:
            self._exchange.close()

    class RuleAsyncTransport(httpx.AsyncBaseTransport):  # type: ignore[misc,name-defined]
        def __init__(self, timeout_s: float, max_bytes: int, max_connections: int) -> None:
            self.timeout_s = timeout_s
            self.max_bytes = max_bytes
            self._pool = ThreadPoolExecutor(max_connections, thread_name_prefix="evalkit-http")

        async def handle_async_request(self, request: Any) -> Any:
            body = await request.aread()
            loop = asyncio.get_running_loop()
            exchange = await loop.run_in_executor(
                self._pool, _exchange_for, request, body, self.timeout_s, self.max_bytes
            )
            return httpx.Response(
                exchange.status,
                headers=exchange.headers,
                stream=AsyncBody(exchange, self._pool),
                request=request,
                extensions=_version(exchange),
            )

        async def aclose(self) -> None:
            self._pool.shutdown(wait=False)

    return RuleAsyncTransport
