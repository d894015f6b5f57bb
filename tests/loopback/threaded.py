"""The lifecycle every loopback test server shares: a ThreadingHTTPServer on 127.0.0.1 in a thread."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


class ThreadedLoopback:
    """Start, stop and address a loopback HTTP server; subclasses supply the request handler class."""

    _httpd: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    thread_name = "loopback-http"
    port = 0
    """0: any free port; a test that restarts a server at the same address sets the one it had."""

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("server not started")
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> Self:
        if self._httpd is not None:
            return self
        httpd = ThreadingHTTPServer(("127.0.0.1", self.port), self.handler_class())
        httpd.daemon_threads = True
        self._httpd = httpd
        # A short poll interval keeps stop() (and so each test teardown) quick.
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, name=self.thread_name, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
