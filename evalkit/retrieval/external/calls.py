"""Calling the external retriever: a Python function or an HTTP endpoint, in batches, replies cached.

Python: ``retriever.target=package.module:function`` is imported from the working directory (then
``sys.path``) and called as ``function(queries, k)`` in this process, one batch at a time (the function
need not be thread-safe). A function that declares a ``documents`` parameter is called
``function(queries, k, documents=...)`` with the labelled set's documents (``{"doc_id", "text", "title",
"meta"}`` each; the same list on every call of a sweep, so it can index them once), and its replies are
cached under those documents too: the same questions on another set are asked again.
HTTP: ``retriever.url`` gets ``POST {"queries": [...], "k": N}`` as JSON and
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

import inspect
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

from evalkit.cache import Cache, cache_key, decode_json, encode_json
from evalkit.http_call import HttpError, loads_json, request
from evalkit.retrieval.external.hits import ExternalHitError, check_results
from evalkit.retrieval.settings import RETRIEVERS, RetrieverSettings
from evalkit.retry import RetriesExhausted, RetryPolicy, Transient, call_with_retries
from evalkit.run.progress import bar
from evalkit.usercode import import_user_module, run_user_code

NAMESPACE = "external"


class ExternalCallError(RuntimeError):
    """The external retriever could not be called (import, a raised error, a dead endpoint, retries spent)."""


def where_of(settings: RetrieverSettings) -> str:
    """How a line names this retriever: ``retriever.url http://...``, ``retriever.target pkg.mod:fn`` or a plugin."""
    plugin = RETRIEVERS.plugin(settings.name)
    if plugin is not None:
        return plugin.where
    return f"retriever.url {settings.url}" if settings.url else f"retriever.target {settings.target}"


def load_target(target: str, search_from: str | None = None, where: str | None = None) -> Callable[..., Any]:
    """The function ``package.module:function`` names, imported from ``search_from`` (the working directory).

    Its import runs behind the user-code boundary (:mod:`evalkit.usercode`): whatever it raises or exits
    with is one :class:`~evalkit.usercode.UserCodeError` naming ``where`` (default ``retriever.target ...``).
    """
    where = where or f"retriever.target {target}"
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise ExternalCallError(f"retriever.target: {target!r} is not package.module:function")
    folder = search_from or os.getcwd()
    if folder not in sys.path:
        sys.path.insert(0, folder)
    module = import_user_module(where, module_name)
    function: Any = module
    for part in attribute.split("."):
        function = run_user_code(where, "does not load", getattr, function, part, None)  # a module's __getattr__
        if function is None:
            raise ExternalCallError(f"{where}: {module_name} has no {attribute!r}")
    if not callable(function):
        raise ExternalCallError(f"{where}: {attribute!r} is not callable")
    return function  # type: ignore[no-any-return]


def takes_documents(function: Callable[..., Any]) -> bool:
    """Whether a Python retriever asks for the labelled set's documents (a parameter named ``documents``)."""
    try:
        return "documents" in inspect.signature(function).parameters
    except (TypeError, ValueError):  # a builtin or C callable without a signature: the two-argument contract
        return False


def query_key(settings: RetrieverSettings, k: int, query: dict[str, Any], corpus: str | None = None) -> str:
    """A reply's cache key; ``corpus`` (the documents' digest) only for a retriever that was given them."""
    parts = (settings.url or settings.target, settings.version, k, query)
    return cache_key(*parts) if corpus is None else cache_key(*parts, corpus)


def fetch_results(
    settings: RetrieverSettings,
    queries: Sequence[dict[str, Any]],
    k: int,
    cache: Cache,
    validate: Callable[[list[int], list[list[Any]]], None],
    progress: bool = False,
    post: Callable[[str, bytes, RetrieverSettings], bytes] | None = None,
    documents: Sequence[Mapping[str, Any]] = (),
) -> tuple[list[list[Any]], int]:
    """Every query's raw hits (cached ones read, the rest asked in batches) and how many were asked.

    ``validate(batch, results)`` raises on a reply that cannot be scored, before it is cached: a fixed
    endpoint must not be answered from its old, broken reply. ``post``: the HTTP transport
    (``(url, body, settings) -> reply body``). ``documents``: the labelled set's, for a Python retriever
    that asks for them.
    """
    function = None if settings.url else load_target(str(settings.target), where=where_of(settings))
    given = list(documents) if function is not None and takes_documents(function) else None
    corpus = None if given is None else cache_key(given)
    keys = [query_key(settings, k, q, corpus) for q in queries]
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
            for batch in batches:
                keep(batch, _call(function, [queries[i] for i in batch], k, where, given))  # type: ignore[arg-type]
    return [known[key] for key in keys], len(missing)


def _call(
    function: Callable[..., Any],
    queries: list[dict[str, Any]],
    k: int,
    where: str,
    documents: list[Mapping[str, Any]] | None = None,
) -> Any:
    """One batch through the team's own code, behind the user-code boundary (its failure is one line naming it).

    ``documents``: the labelled set's, for a retriever that asks for them. A generator's items are drawn
    behind the boundary too; tuples become lists; anything else is returned as it came, for
    :func:`check_results` to name.
    """
    if documents is None:
        results = run_user_code(where, "failed", function, queries, k)
    else:
        results = run_user_code(where, "failed", function, queries, k, documents=documents)
    if not isinstance(results, (list, tuple, str, bytes, dict)) and hasattr(results, "__iter__"):
        results = run_user_code(where, "failed", list, results)
    if isinstance(results, (list, tuple)):
        return [list(hits) if isinstance(hits, tuple) else hits for hits in results]
    return results


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
