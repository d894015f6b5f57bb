"""The annotation page's HTTP server (standard library only): 127.0.0.1, a random token, same origin only.

Guards, checked on every request before anything is read:

- bound to ``127.0.0.1`` only (never a public interface);
- the token (``secrets.token_urlsafe``, printed in the URL once) must come as
  ``?token=`` or the ``X-Evalkit-Token`` header, compared in constant time;
- the ``Host`` header must name this server (a DNS-rebinding page cannot
  reach it), an ``Origin`` header must be this server's, and a
  ``Sec-Fetch-Site: cross-site`` request is refused;
- edits are ``POST`` with ``Content-Type: application/json`` and a body of 1 to :data:`MAX_BODY` bytes
  whose ``Content-Length`` is a plain decimal number; a malformed request (a length that is not one,
  a body shorter than it says or slower than :data:`READ_TIMEOUT_S`, bytes that are not JSON, JSON
  nested too deep) is a 4xx answer with one reason, never a traceback, and the server keeps serving;
- routes are a fixed table (no path is ever joined to a folder), documents are
  looked up by id among those the set's loader read (which already refused
  paths outside the set's folder), and the page renders every text with
  ``textContent`` under a Content-Security-Policy that allows only its own
  script and style.
"""

from __future__ import annotations

import hmac
import json
import secrets
import sys
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

from evalkit.curate.annotate.api import AnnotationApi, EditError, NotFound
from evalkit.curate.annotate.store import AnnotationStore, StoreError

__all__ = ["AnnotationServer", "serve"]

MAX_BODY = 1_000_000
"""Largest edit body accepted, in bytes (an edit is a few spans: 1 MB is far beyond any real one)."""
READ_TIMEOUT_S = 10.0
"""Longest wait for the next bytes of a request (its headers or its body) before a 408."""
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_ASSETS = {"/app.js": ("app.js", "text/javascript"), "/app.css": ("app.css", "text/css")}


def _asset(name: str) -> str:
    return resources.files("evalkit.curate.annotate").joinpath("assets", name).read_text(encoding="utf-8")


class AnnotationServer(ThreadingHTTPServer):
    """One set's annotation server; ``url`` carries the token."""

    daemon_threads = True

    def __init__(
        self, api: AnnotationApi, port: int = 0, token: str | None = None, read_timeout_s: float = READ_TIMEOUT_S
    ) -> None:
        self.api = api
        self.read_timeout_s = read_timeout_s
        self.token = token or secrets.token_urlsafe(24)
        super().__init__(("127.0.0.1", port), _Handler)
        self.port = int(self.server_address[1])
        self.origins = {f"http://127.0.0.1:{self.port}", f"http://localhost:{self.port}"}
        self.hosts = {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/?token={self.token}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A request that broke its handler (a dropped connection mid-answer): one line, never a traceback."""
        error = sys.exc_info()[1]
        print(f"evalkit annotate: a request failed: {type(error).__name__}: {error}", file=sys.stderr)

    def start(self) -> threading.Thread:
        """Serve in a background thread (tests and embedding); ``shutdown()`` stops it."""
        thread = threading.Thread(target=self.serve_forever, name="evalkit-annotate", daemon=True)
        thread.start()
        return thread


class _Handler(BaseHTTPRequestHandler):
    server: AnnotationServer
    server_version = "evalkit-annotate"
    sys_version = ""

    def setup(self) -> None:
        self.timeout = self.server.read_timeout_s  # a stalled client costs one thread this long, then a 408
        super().setup()

    def log_message(self, format: str, *args: Any) -> None:
        return  # the token is in request lines; never log them

    # ----- guards ---------------------------------------------------------------------------------------------
    def _refusal(self) -> tuple[HTTPStatus, str] | None:
        """Why this request is refused, or None."""
        if self.headers.get("Host", "") not in self.server.hosts:
            return HTTPStatus.FORBIDDEN, "wrong Host header"
        origin = self.headers.get("Origin")
        if origin is not None and origin not in self.server.origins:
            return HTTPStatus.FORBIDDEN, "cross-origin request refused"
        if self.headers.get("Sec-Fetch-Site", "") == "cross-site":
            return HTTPStatus.FORBIDDEN, "cross-site request refused"
        query = parse_qs(urlsplit(self.path).query)
        given = self.headers.get("X-Evalkit-Token") or (query.get("token") or [""])[0]
        if not hmac.compare_digest(given.encode("utf-8"), self.server.token.encode("utf-8")):
            return HTTPStatus.FORBIDDEN, "missing or wrong token (use the URL the server printed)"
        return None

    def _send(self, status: HTTPStatus, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Content-Security-Policy", CSP)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: HTTPStatus, payload: Any) -> None:
        self._send(status, json.dumps(payload, ensure_ascii=False).encode("utf-8"), "application/json; charset=utf-8")

    def _error(self, status: HTTPStatus, message: str) -> None:
        self._json(status, {"error": message})

    # ----- routes ---------------------------------------------------------------------------------------------
    def do_GET(self) -> None:
        refused = self._refusal()
        if refused:
            return self._error(*refused)
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        api = self.server.api
        routes: dict[str, Callable[[], Any]] = {
            "/api/state": api.state,
            "/api/question": lambda: api.question(query.get("id", "")),
            "/api/doc": lambda: api.document(query.get("id", "")),
            "/api/find": lambda: api.find(query.get("q", "")),
        }
        if parts.path == "/":
            return self._send(HTTPStatus.OK, _page(self.server.token).encode("utf-8"), "text/html; charset=utf-8")
        if parts.path in _ASSETS:
            name, kind = _ASSETS[parts.path]
            return self._send(HTTPStatus.OK, _asset(name).encode("utf-8"), f"{kind}; charset=utf-8")
        if parts.path not in routes:
            return self._error(HTTPStatus.NOT_FOUND, "not found")
        self._answer(routes[parts.path])

    def do_POST(self) -> None:
        refused = self._refusal()
        if refused:
            return self._error(*refused)
        if urlsplit(self.path).path != "/api/edit":
            return self._error(HTTPStatus.NOT_FOUND, "not found")
        if self.headers.get("Content-Type", "").split(";")[0].strip() != "application/json":
            return self._error(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "edits are JSON")
        body = self._body()
        if isinstance(body, tuple):
            return self._error(*body)
        try:
            payload = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            return self._error(HTTPStatus.BAD_REQUEST, "body is not JSON")
        except RecursionError:
            return self._error(HTTPStatus.BAD_REQUEST, "body is JSON nested too deep")
        if not isinstance(payload, dict):
            return self._error(HTTPStatus.BAD_REQUEST, "body must be a JSON object")
        self._answer(lambda: self.server.api.edit(payload))

    def _body(self) -> bytes | tuple[HTTPStatus, str]:
        """The request's body, or why it is refused (the connection is closed after a refusal: unread bytes)."""
        stated = self.headers.get("Content-Length")
        if stated is None:
            return HTTPStatus.LENGTH_REQUIRED, "an edit needs a Content-Length"
        if not (stated.isascii() and stated.isdigit()):
            self.close_connection = True
            return HTTPStatus.BAD_REQUEST, f"Content-Length {stated[:40]!r} is not a number of bytes"
        length = int(stated)
        if not 0 < length <= MAX_BODY:
            self.close_connection = True
            return HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"body must be 1 to {MAX_BODY} bytes, not {length}"
        try:
            body = self.rfile.read(length)
        except TimeoutError:
            self.close_connection = True
            return HTTPStatus.REQUEST_TIMEOUT, f"the body did not arrive within {self.server.read_timeout_s:g} s"
        if len(body) < length:
            self.close_connection = True
            return HTTPStatus.BAD_REQUEST, f"body is {len(body)} bytes, Content-Length says {length}"
        return body

    def _answer(self, work: Callable[[], Any]) -> None:
        try:
            payload = work()
        except NotFound as exc:
            return self._error(HTTPStatus.NOT_FOUND, str(exc))
        except EditError as exc:
            return self._error(HTTPStatus.UNPROCESSABLE_ENTITY, str(exc))
        except StoreError as exc:
            return self._error(HTTPStatus.CONFLICT, str(exc))
        self._json(HTTPStatus.OK, payload)

    def _not_allowed(self) -> None:
        self._error(HTTPStatus.METHOD_NOT_ALLOWED, "not allowed")

    do_PUT = do_DELETE = do_PATCH = _not_allowed


def _page(token: str) -> str:
    """The page shell; the token (URL-safe base64: nothing to escape) rides along for the script's requests."""
    assert all(c.isalnum() or c in "-_" for c in token)
    return _asset("index.html").replace("{{token}}", token)


def serve(root: str, port: int = 0, open_browser: bool = False) -> int:
    """Run the annotation server for the set at ``root`` until interrupted; returns the exit status."""
    store = AnnotationStore(root)
    server = AnnotationServer(AnnotationApi(store), port)
    for line in store.problems[:20]:
        print(f"warning: {line}", file=sys.stderr)
    print(
        f"evalkit annotate: {len(store.items)} questions, {len(store.documents)} documents in {root}\n"
        f"open {server.url}\n(Ctrl+C stops; every change is already saved)",
        flush=True,
    )
    if open_browser:
        import webbrowser

        webbrowser.open(server.url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
