"""A loopback HTTP server that speaks Cohere's v2 wire format, for tests of the real SDK.

The server binds 127.0.0.1 on a free port and serves from a background thread.
Routes are a table of ``(method, path) -> handler``, so ``/v2/embed`` can be
added beside ``/v2/rerank`` later. Every request is recorded; the next replies
can be scripted (429 with ``Retry-After``, 5xx, 400 with a JSON message) to
drive a client's retry and error paths, and a seeded :class:`~tests.loopback.faults.FaultPlan`
injects flaky-API faults at a rate (malformed or truncated bodies, resets, 429/500/529, and
rerank results that cannot be right: a wrong count, a repeated or out-of-range index, a NaN score).

Scores are deterministic and content-only (query-word overlap), so a test can
predict the ranking and a pool split across requests scores the same as one
big request.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar

from tests.loopback.faults import FaultInjector, FaultPlan, write_fault
from tests.loopback.threaded import ThreadedLoopback

JSON = Any
Handler = Callable[[JSON], tuple[int, JSON]]
"""A route: parsed JSON body -> (status, JSON reply)."""

_WORDS = re.compile(r"\w+")


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it, and the status it answered."""

    method: str
    path: str
    headers: Mapping[str, str]
    """Header names lower-cased."""
    body: JSON
    """Parsed JSON body, or None when there was none or it was not JSON."""
    status: int
    fault: str | None = None
    """The injected fault kind, or None for a real reply."""


@dataclass(frozen=True)
class ScriptedReply:
    """A reply given to the next request instead of its route's answer."""

    status: int
    body: JSON | bytes = None
    """JSON to encode, or raw bytes sent as they are (a non-JSON error page)."""
    headers: Mapping[str, str] = field(default_factory=dict)


class LoopbackServer(ThreadedLoopback):
    """A JSON-over-HTTP server on 127.0.0.1 with a route table, a reply script and a request log."""

    def __init__(self, api_key: str | None = None, faults: FaultPlan | None = None) -> None:
        """``api_key``: when set, requests must carry ``Authorization: Bearer <api_key>`` (else 401).

        ``faults``: inject flaky-API faults at a seeded rate (none by default).
        """
        self.api_key = api_key
        self.faults = FaultInjector(faults)
        self.routes: dict[tuple[str, str], Handler] = {}
        self._script: deque[ScriptedReply] = deque()
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()

    # -- configuration ---------------------------------------------------------------------------

    def route(self, method: str, path: str, handler: Handler) -> None:
        self.routes[(method.upper(), path)] = handler

    def script(self, *replies: ScriptedReply) -> None:
        """Answer the next ``len(replies)`` requests (any route) with these, in order."""
        with self._lock:
            self._script.extend(replies)

    def fail_next(
        self, status: int, times: int = 1, message: str | None = None, retry_after: str | None = None
    ) -> None:
        """Script ``times`` error replies with a Cohere-style ``{"message": ...}`` body."""
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        reply = ScriptedReply(status, {"message": message or f"scripted error {status}"}, headers)
        self.script(*([reply] * times))

    # -- inspection ------------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """A copy of the request log, oldest first."""
        with self._lock:
            return list(self._requests)

    def requests_to(self, path: str) -> list[RecordedRequest]:
        return [request for request in self.requests if request.path == path]

    def reset(self) -> None:
        """Forget the log and any unused scripted replies."""
        with self._lock:
            self._requests.clear()
            self._script.clear()

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        return _make_handler(self)

    def fault_reply(self, kind: str, method: str, path: str, body: JSON) -> bytes:
        """The JSON bytes a fault of ``kind`` sends (error kinds: a Cohere error body)."""
        if kind == "wrong" and (handler := self.routes.get((method, path))) is not None:
            status, reply = handler(body)
            if status == 200 and isinstance(reply, dict):
                return json.dumps(self.corrupt(reply, body)).encode("utf-8")
        if kind == "over-limit":
            return json.dumps({"message": "loopback: request limit reached (a client retrying forever?)"}).encode()
        return json.dumps({"message": f"injected fault {kind}"}).encode("utf-8")

    def corrupt(self, reply: JSON, body: JSON) -> JSON:
        """A reply of the right shape that cannot be right; routes without a rule are sent unchanged."""
        return reply

    def record_fault(self, method: str, path: str, headers: Mapping[str, str], body: JSON, kind: str) -> None:
        with self._lock:
            self._requests.append(RecordedRequest(method, path, dict(headers), body, 0, fault=kind))

    # -- dispatch (called from handler threads) ---------------------------------------------------

    def dispatch(
        self, method: str, path: str, headers: Mapping[str, str], raw: bytes
    ) -> tuple[int, JSON, dict[str, str]]:
        try:
            body: JSON = json.loads(raw) if raw else None
            parse_error = None
        except ValueError as exc:
            body, parse_error = None, str(exc)
        with self._lock:
            scripted = self._script.popleft() if self._script else None
        if scripted is not None:
            status, reply, extra = scripted.status, scripted.body, dict(scripted.headers)
        elif self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            status, reply, extra = 401, {"message": "invalid api token"}, {}
        elif (handler := self.routes.get((method, path))) is None:
            status, reply, extra = 404, {"message": f"no route for {method} {path}"}, {}
        elif parse_error is not None:
            status, reply, extra = 400, {"message": f"invalid request: body is not JSON ({parse_error})"}, {}
        else:
            status, reply = handler(body)
            extra = {}
        with self._lock:
            self._requests.append(RecordedRequest(method, path, dict(headers), body, status))
        return status, reply, extra


def _make_handler(server: LoopbackServer) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        # HTTP/1.0: one request per connection, so shutdown never waits on an idle keep-alive socket.
        protocol_version = "HTTP/1.0"

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            headers = {name.lower(): value for name, value in self.headers.items()}
            path = self.path.split("?", 1)[0]
            digest, kind = server.faults.decide(f"{self.command} {path}", raw)
            if kind is not None:
                body = _json_or_none(raw)
                server.record_fault(self.command, path, headers, body, kind)
                fault = server.fault_reply(kind, self.command, path, body)
                write_fault(self, kind, fault, retry_after_ms=server.faults.plan.retry_after_ms)
                server.faults.record(digest, kind)
                return
            status, reply, extra = server.dispatch(self.command, path, headers, raw)
            if status == 200:
                server.faults.record(digest, None)
            if isinstance(reply, bytes):  # a raw body, e.g. a proxy's HTML error page
                payload, content_type = reply, "text/html"
            else:
                payload, content_type = b"" if reply is None else json.dumps(reply).encode("utf-8"), "application/json"
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            for name, value in extra.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_PUT = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:
            """Silent: the request log is the record, and stderr noise hides test output."""

    return _Handler


def _json_or_none(raw: bytes) -> JSON:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


# -- Cohere -----------------------------------------------------------------------------------------


def word_overlap(query: str, document: str) -> float:
    """Share of the query's distinct words that occur in the document, in [0, 1] (content-only)."""
    query_words = set(_WORDS.findall(query.lower()))
    if not query_words:
        return 0.0
    return len(query_words & set(_WORDS.findall(document.lower()))) / len(query_words)


def hashed_words(text: str, dim: int) -> list[float]:
    """A content-only embedding: the text's words hashed into ``dim`` counts (stable across processes)."""
    vector = [0.0] * dim
    for word in _WORDS.findall(text.lower()):
        vector[int(hashlib.sha256(word.encode()).hexdigest()[:8], 16) % dim] += 1.0
    return vector


class CohereServer(LoopbackServer):
    """Cohere's ``POST /v2/rerank`` with :func:`word_overlap` as the model, and ``POST /v2/embed``."""

    MAX_DOCUMENTS = 10_000
    """Cohere's documented cap per request; more is a 400."""

    def __init__(
        self,
        api_key: str | None = "test-key",
        score: Callable[[str, str], float] = word_overlap,
        faults: FaultPlan | None = None,
    ) -> None:
        super().__init__(api_key=api_key, faults=faults)
        self.score = score
        self.route("POST", "/v2/rerank", self._rerank)
        self.route("POST", "/v2/embed", self._embed)

    @property
    def rerank_requests(self) -> list[RecordedRequest]:
        return self.requests_to("/v2/rerank")

    @property
    def documents_per_request(self) -> list[int]:
        """Documents in each rerank request, in order (including those answered with an error)."""
        return [len((request.body or {}).get("documents") or []) for request in self.rerank_requests]

    MAX_EMBED_TEXTS = 96
    """Cohere's cap on texts per embed request; more is a 400."""
    EMBED_DIMENSIONS: ClassVar[dict[str, int]] = {"embed-v4.0": 1536}

    @property
    def embed_requests(self) -> list[RecordedRequest]:
        return self.requests_to("/v2/embed")

    def _embed(self, body: JSON) -> tuple[int, JSON]:
        problem = _embed_problem(body, self.MAX_EMBED_TEXTS)
        if problem is not None:
            return 400, {"message": problem}
        dim = body.get("output_dimension") or self.EMBED_DIMENSIONS.get(body["model"], 1024)
        texts: Sequence[str] = body["texts"]
        return 200, {
            "id": f"loopback-{len(self.requests)}",
            "response_type": "embeddings_by_type",
            "embeddings": {"float": [hashed_words(text, dim) for text in texts]},
            "texts": list(texts),
            "meta": {
                "api_version": {"version": "2"},
                "billed_units": {"input_tokens": sum(len(_WORDS.findall(text)) for text in texts)},
            },
        }

    def corrupt(self, reply: JSON, body: JSON) -> JSON:
        """One of four impossible replies (rerank or embed), chosen by the request (deterministic)."""
        if "embeddings" in reply:
            return _corrupt_embeddings(reply, body)
        results = [dict(result) for result in reply.get("results") or []]
        if not results:
            return reply
        n = len((body or {}).get("documents") or [])
        variant = sum(json.dumps(body, sort_keys=True).encode()) % 4
        if variant == 0:
            results = results[:-1]  # fewer results than documents
        elif variant == 1:
            results = [*results, dict(results[0])]  # a repeated index, more results than documents
        elif variant == 2:
            results[-1]["index"] = n  # out of range
        else:
            results[0]["relevance_score"] = math.nan  # serialised as NaN, which Python's json reads back
        return {**reply, "results": results}

    def _rerank(self, body: JSON) -> tuple[int, JSON]:
        problem = _rerank_problem(body, self.MAX_DOCUMENTS)
        if problem is not None:
            return 400, {"message": problem}
        documents: Sequence[str] = body["documents"]
        top_n = body.get("top_n") or len(documents)
        scored = [(self.score(body["query"], document), index) for index, document in enumerate(documents)]
        # Best first; ties keep input order, like a stable sort on the score.
        scored.sort(key=lambda item: (-item[0], item[1]))
        return 200, {
            "id": f"loopback-{len(self.requests)}",
            "results": [{"index": index, "relevance_score": score} for score, index in scored[:top_n]],
            "meta": {
                "api_version": {"version": "2"},
                "billed_units": {"search_units": math.ceil(len(documents) / 100)},
            },
        }


def _rerank_problem(body: JSON, max_documents: int) -> str | None:
    """Cohere-like validation: the message a 400 would carry, or None."""
    if not isinstance(body, dict):
        return "invalid request: body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "invalid request: model is required"
    if not isinstance(body.get("query"), str):
        return "invalid request: query must be a string"
    documents = body.get("documents")
    if not isinstance(documents, list) or not all(isinstance(document, str) for document in documents):
        return "invalid request: documents must be a list of strings"
    if not documents:
        return "invalid request: documents must not be empty"
    if len(documents) > max_documents:
        return f"invalid request: too many documents ({len(documents)} > {max_documents})"
    for name in ("top_n", "max_tokens_per_doc"):
        value = body.get(name)
        if value is not None and (not isinstance(value, int) or value < 1):
            return f"invalid request: {name} must be a positive integer"
    return None


def _embed_problem(body: JSON, max_texts: int) -> str | None:
    """Cohere-like validation of an embed request: the message a 400 would carry, or None."""
    if not isinstance(body, dict):
        return "invalid request: body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "invalid request: model is required"
    if body.get("input_type") not in ("search_document", "search_query", "classification", "clustering"):
        return f"invalid request: input_type {body.get('input_type')!r} is not valid"
    texts = body.get("texts")
    if not isinstance(texts, list) or not texts or not all(isinstance(text, str) for text in texts):
        return "invalid request: texts must be a non-empty list of strings"
    if len(texts) > max_texts:
        return f"invalid request: too many texts ({len(texts)} > {max_texts})"
    if body.get("embedding_types") not in (None, ["float"]):
        return "loopback: only embedding_types ['float'] is served"
    return None


def _corrupt_embeddings(reply: JSON, body: JSON) -> JSON:
    vectors = [list(vector) for vector in reply["embeddings"]["float"]]
    variant = sum(json.dumps(body, sort_keys=True).encode()) % 4
    if variant == 0:
        vectors = vectors[:-1]  # fewer vectors than texts
    elif variant == 1:
        vectors = [*vectors, vectors[0]]  # more vectors than texts
    elif variant == 2:
        vectors[0] = vectors[0][:-1]  # one vector a component short
    else:
        vectors[-1][0] = math.nan
    return {**reply, "embeddings": {"float": vectors}}
