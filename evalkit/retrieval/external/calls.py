"""Calling the external retriever: a Python function or an HTTP endpoint, in batches, replies cached.

Python: ``retriever.target=package.module:function`` is imported from the working directory (then
``sys.path``) and called as ``function(queries, k)`` in this process, one batch at a time (the function
need not be thread-safe). HTTP: ``retriever.url`` gets ``POST {"queries": [...], "k": N}`` as JSON and
answers ``{"results": [[hit, ...], ...]}``; up to ``max_concurrency`` batches in flight, each through
:mod:`evalkit.http_call` (``timeout_s`` from connect to last byte, replies capped at ``max_reply_mb``,
JSON read depth-safe) and the shared retry policy (:mod:`evalkit.retry`: connection errors, timeouts,
408/429/5xx, a body that is not JSON). A reply of the wrong shape, over the cap or nested too deep is one
line at once: a retry would send the same request to the same bug.

Every query's reply is cached (namespace ``external``) under the endpoint or target, ``retriever.version``,
``k`` and the query, as soon as its batch returns, so a dead endpoint mid-run loses nothing: the same
command resumes with the queries still missing. Change ``retriever.version`` when production reindexes.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

from evalkit.cache import Cache, cache_key, decode_json, encode_json
from evalkit.http_call import HttpError, loads_json, request
from evalkit.retrieval.external.hits import ExternalHitError, check_results
from evalkit.retrieval.settings import RetrieverSettings
from evalkit.retry import RetriesExhausted, RetryPolicy, Transient, call_with_retries
from evalkit.run.progress import bar

NAMESPACE = "external"


class ExternalCallError(RuntimeError):
    """The external retriever could not be called (import, a raised error, a dead endpoint, retries spent)."""


def where_of(settings: RetrieverSettings) -> str:
    """How a line names this retriever: ``retriever.url http://...`` or ``retriever.target pkg.mod:fn``."""
    return f"retriever.url {settings.url}" if settings.url else f"retriever.target {settings.target}"


def load_target(target: str, search_from: str | None = None) -> Callable[..., Any]:
    """The function ``package.module:function`` names, imported from ``search_from`` (the working directory)."""
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise ExternalCallError(f"retriever.target: {target!r} is not package.module:function")
    folder = search_from or os.getcwd()
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ExternalCallError(f"retriever.target {target}: cannot import {module_name!r} ({exc})") from None
    function = module
    for part in attribute.split("."):
        function = getattr(function, part, None)
        if function is None:
            raise ExternalCallError(f"retriever.target {target}: {module_name} has no {attribute!r}")
    if not callable(function):
        raise ExternalCallError(f"retriever.target {target}: {attribute!r} is not callable")
    return function  # type: ignore[return-value]


def query_key(settings: RetrieverSettings, k: int, query: dict[str, Any]) -> str:
    return cache_key(settings.url or settings.target, settings.version, k, query)


def fetch_results(
    settings: RetrieverSettings,
    queries: Sequence[dict[str, Any]],
    k: int,
    cache: Cache,
    validate: Callable[[list[int], list[list[Any]]], None],
    progress: bool = False,
    post: Callable[[str, bytes, RetrieverSettings], bytes] | None = None,
) -> tuple[list[list[Any]], int]:
    """Every query's raw hits (cached ones read, the rest asked in batches) and how many were asked.

    ``validate(batch, results)`` raises on a reply that cannot be scored, before it is cached: a fixed
    endpoint must not be answered from its old, broken reply. ``post``: the HTTP transport
    (``(url, body, settings) -> reply body``).
    """
    keys = [query_key(settings, k, q) for q in queries]
    known = cache.get_decoded(NAMESPACE, keys, decode_json)
    missing = [i for i, key in enumerate(keys) if key not in known]
    batches = [missing[i : i + settings.batch_size] for i in range(0, len(missing), settings.batch_size)]
    where = where_of(settings)
    with bar(len(missing), "external retriever", "queries", progress and bool(missing)) as shown:

        def keep(batch: list[int], results: Any) -> None:
            checked = check_results(results, len(batch), f"{where}: reply")
            validate(batch, checked)
            cache.put_many(NAMESPACE, {keys[i]: encode_json(hits) for i, hits in zip(batch, checked)})
            known.update({keys[i]: hits for i, hits in zip(batch, checked)})
            shown.update(len(batch))

        if settings.url:
            _over_http(settings, queries, k, batches, keep, post or post_json)
        else:
            function = load_target(str(settings.target))
            for batch in batches:
                keep(batch, _call(function, [queries[i] for i in batch], k, where))
    return [known[key] for key in keys], len(missing)


def _call(function: Callable[..., Any], queries: list[dict[str, Any]], k: int, where: str) -> Any:
    try:
        return [list(hits) if isinstance(hits, tuple) else hits for hits in function(queries, k)]
    except ExternalHitError:
        raise
    except Exception as exc:  # the team's own code: its failure is one line naming it, not evalkit's traceback
        raise ExternalCallError(f"{where} raised {type(exc).__name__}: {' '.join(str(exc).split())[:300]}") from None


def _over_http(
    settings: RetrieverSettings,
    queries: Sequence[dict[str, Any]],
    k: int,
    batches: list[list[int]],
    keep: Callable[[list[int], Any], None],
    post: Callable[[str, bytes, RetrieverSettings], bytes],
) -> None:
    policy = RetryPolicy(settings.max_retries, settings.retry_base_delay_s, settings.retry_max_delay_s)
    url, where = str(settings.url), where_of(settings)

    def ask(batch: list[int]) -> Any:
        body = json.dumps({"queries": [queries[i] for i in batch], "k": k}, ensure_ascii=False).encode("utf-8")

        def attempt() -> Any:
            reply = post(url, body, settings)
            try:
                parsed = loads_json(reply)
            except HttpError as exc:
                if exc.retryable:
                    raise Transient(exc.reason) from None
                raise ExternalCallError(f"{where}: {exc.reason}") from None
            if not isinstance(parsed, dict) or "results" not in parsed:
                raise ExternalHitError(f"{where}: reply: expected an object with 'results', got {reply[:80]!r}")
            return parsed["results"]

        try:
            return call_with_retries(attempt, policy)
        except RetriesExhausted as exc:
            raise ExternalCallError(f"{where}: {exc}") from None

    with ThreadPoolExecutor(settings.max_concurrency, thread_name_prefix="external") as pool:
        pending = {pool.submit(ask, batch): batch for batch in batches}
        failure: Exception | None = None
        try:
            for done in as_completed(pending):
                if done.cancelled():
                    continue
                try:
                    keep(pending[done], done.result())  # in this thread: the cache is written from one place
                except Exception as exc:
                    # The first failure stops what has not started; batches already in flight are
                    # waited for anyway, so their replies are kept: nothing received is lost.
                    if failure is None:
                        failure = exc
                        for future in pending:
                            future.cancel()
        finally:
            for future in pending:
                future.cancel()
        if failure is not None:
            raise failure


def post_json(url: str, body: bytes, settings: RetrieverSettings) -> bytes:
    """One POST; a failure a retry may fix is :class:`Transient`, any other :class:`ExternalCallError`."""
    try:
        reply = request(
            "POST",
            url,
            body,
            timeout_s=settings.timeout_s,
            max_bytes=settings.max_reply_bytes,
            headers={"content-type": "application/json", "accept": "application/json"},
        )
    except HttpError as exc:
        if exc.retryable:
            raise Transient(exc.reason) from None
        cap = " (retriever.max_reply_mb)" if "cap" in exc.reason else ""
        raise ExternalCallError(f"retriever.url {url}: {exc.reason}{cap}") from None
    if 200 <= reply.status < 300:
        return reply.body
    detail = " ".join(reply.body[:300].decode("utf-8", "replace").split())
    if RetryPolicy().retryable(reply.status, reply.headers):
        raise Transient(f"HTTP {reply.status} {detail}", reply.headers)
    raise ExternalCallError(f"retriever.url {url}: HTTP {reply.status} {detail}".rstrip())
