"""Many requests at once: cache look-up in bulk, content-hash dedupe, then threads or Message Batches.

Batches are journalled in the cache before polling (insert-only, keyed by the
set of requests and an attempt number), so a restarted sweep polls the same
batches instead of resubmitting, and a batch is marked collected only after
its answers are stored.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING

from evalkit.answering.generation.cached import (
    check_window,
    decode_answer,
    encode_answer,
    request_key,
    response_namespace,
)
from evalkit.answering.generation.request import UNCACHED_STOPS, BatchPending, GenerationError, GenerationRequest
from evalkit.cache import Cache, cache_key, decode_json, encode_json
from evalkit.records import Answer, Usage

if TYPE_CHECKING:
    from evalkit.answering.generation.base import Generator
    from evalkit.answering.generation.tally import GenerationCounter

log = logging.getLogger(__name__)

_CUSTOM_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # the Message Batches API's custom_id pattern


def generate_many(
    generator: Generator,
    requests: Sequence[GenerationRequest],
    cache: Cache,
    counter: GenerationCounter | None = None,
    *,
    batch: bool | None = None,
    workers: int = 1,
    sleep: Callable[[float], None] = time.sleep,
) -> list[Answer]:
    """Answers in request order; cached ones cost nothing, identical requests are sent once.

    With ``batch`` (default: the generator's ``batch_enabled``) and a backend that supports it, uncached
    requests go into Message Batches that are recorded in the cache before polling, so a restarted sweep
    polls the same batches instead of resubmitting. Otherwise they are sent one by one (``workers`` threads).
    """
    namespace = response_namespace(generator)
    keys = [request_key(generator, request) for request in requests]
    stored = cache.get_many(namespace, keys)
    pending: dict[str, GenerationRequest] = {}
    for key, request in zip(keys, requests, strict=True):
        if key not in stored:
            pending.setdefault(key, request)  # content-hash dedupe before any model call

    fresh: dict[str, Answer] = {}
    for key, request in list(pending.items()):
        refused = check_window(generator, request, cache, counter)
        if refused is not None:
            fresh[key] = refused
            del pending[key]

    use_batch = generator.batch_enabled if batch is None else batch
    if pending and use_batch and generator.supports_batch:
        fresh.update(_run_batches(generator, pending, cache, counter, sleep))
    elif pending:
        fresh.update(_run_singles(generator, pending, cache, counter, workers))

    answers: list[Answer] = []
    delivered: set[str] = set()
    for key, request in zip(keys, requests, strict=True):
        if key in stored:
            if counter is not None:
                counter.hit(request.model)
            answers.append(decode_answer(stored[key], request.question_id))
            continue
        answer = replace(fresh[key], question_id=request.question_id)
        if key in delivered and answer.stop_reason not in UNCACHED_STOPS:
            answer = replace(answer, cached=True)  # a duplicate request served by the first one's answer
            if counter is not None:
                counter.hit(request.model)
        delivered.add(key)
        answers.append(answer)
    return answers


def _run_singles(
    generator: Generator,
    pending: Mapping[str, GenerationRequest],
    cache: Cache,
    counter: GenerationCounter | None,
    workers: int,
) -> dict[str, Answer]:
    namespace = response_namespace(generator)

    def one(item: tuple[str, GenerationRequest]) -> tuple[str, Answer]:
        key, request = item
        answer = replace(generator.generate(request), question_id=request.question_id, cached=False)
        if counter is not None:
            counter.record(answer)
        if answer.stop_reason not in UNCACHED_STOPS:
            cache.put(namespace, key, encode_answer(answer))  # stored at once: an interrupted sweep keeps it
        return key, answer

    if workers <= 1:
        return dict(map(one, pending.items()))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return dict(pool.map(one, pending.items()))


def custom_id_for(request: GenerationRequest, key: str) -> str:
    """The batch custom_id: the request's own (``metadata['custom_id']``) when valid, else its cache key."""
    given = request.metadata.get("custom_id", "")
    if given:
        if not _CUSTOM_ID.match(given):
            raise GenerationError(f"custom_id {given!r} must match {_CUSTOM_ID.pattern} (the batch API's rule)")
        return given
    return key[:64]  # a SHA-256 hex digest is exactly 64 characters of [0-9a-f]


def _run_batches(
    generator: Generator,
    pending: Mapping[str, GenerationRequest],
    cache: Cache,
    counter: GenerationCounter | None,
    sleep: Callable[[float], None],
) -> dict[str, Answer]:
    """Submit (or resume) batches for the pending requests, poll them until they end, collect by custom_id."""
    journal = f"batch:{generator.identity}"
    items = list(pending.items())
    open_batches: dict[str, dict[str, str]] = {}  # batch id -> custom_id -> request key
    step = max(1, generator.max_batch_requests)
    for offset in range(0, len(items), step):
        chunk = dict(items[offset : offset + step])
        custom: dict[str, str] = {}
        for key, request in chunk.items():
            cid = custom_id_for(request, key)
            if custom.get(cid, key) != key:
                raise GenerationError(f"custom_id {cid!r} names two different requests in one batch")
            custom[cid] = key
        batch_id = _resume_or_submit(generator, cache, journal, custom, chunk)
        open_batches[batch_id] = custom
    _wait_until_ended(generator, list(open_batches), sleep)
    fresh: dict[str, Answer] = {}
    for batch_id, custom in open_batches.items():
        fresh.update(_collect(generator, batch_id, custom, pending, cache, counter))
        # Marked collected only after its answers are stored: a crash before this line re-collects, never re-pays.
        cache.put(journal, f"done:{batch_id}", encode_json(True))
    return fresh


def _wait_until_ended(generator: Generator, batch_ids: Sequence[str], sleep: Callable[[float], None]) -> None:
    """Poll until every batch has ended; :class:`BatchPending` past the generator's ``batch_timeout_s``."""
    started = time.monotonic()
    waiting = list(batch_ids)
    while True:
        waiting = [batch_id for batch_id in waiting if generator.batch_status(batch_id) != "ended"]
        if not waiting:
            return
        waited = time.monotonic() - started
        if waited >= generator.batch_timeout_s:
            raise BatchPending(waiting, waited)
        sleep(min(generator.poll_interval_s, max(0.0, generator.batch_timeout_s - waited)))


def _collect(
    generator: Generator,
    batch_id: str,
    custom: Mapping[str, str],
    pending: Mapping[str, GenerationRequest],
    cache: Cache,
    counter: GenerationCounter | None,
) -> dict[str, Answer]:
    """The answers of one ended batch by request key, stored in the cache (failed items are not)."""
    results = generator.batch_results(batch_id)
    store: dict[str, bytes] = {}
    fresh: dict[str, Answer] = {}
    for cid, key in custom.items():
        answer = results.get(cid)
        if answer is None:
            log.warning("batch %s has no result for custom_id %s", batch_id, cid)
            answer = Answer(
                question_id="", text="", backend=generator.backend, model="", usage=Usage(), stop_reason="error"
            )
        answer = replace(answer, question_id=pending[key].question_id, cached=False)
        if answer.stop_reason in UNCACHED_STOPS:
            answer = replace(answer, model=pending[key].model)  # a failed item has no response model
        if counter is not None:
            counter.record(answer, batch=True)
        if answer.stop_reason not in UNCACHED_STOPS:
            store[key] = encode_answer(answer)
        fresh[key] = answer
    cache.put_many(response_namespace(generator), store)
    return fresh


def _resume_or_submit(
    generator: Generator,
    cache: Cache,
    journal: str,
    custom: Mapping[str, str],
    chunk: Mapping[str, GenerationRequest],
) -> str:
    """The batch id for this exact set of requests: an uncollected earlier one, or a newly submitted one.

    The journal lives in the cache (insert-only), keyed by a signature of the custom_id -> key map and an
    attempt number: a collected batch whose items errored is not resumed; the next attempt resubmits.
    """
    signature = cache_key("batch", sorted(custom.items()))
    attempt = 0
    previous: str | None = None
    while (blob := cache.get(journal, f"{signature}:{attempt}")) is not None:
        previous = decode_json(blob)["batch_id"]
        attempt += 1
    if previous is not None and cache.get(journal, f"done:{previous}") is None:
        log.info("resuming message batch %s (%d requests)", previous, len(custom))
        return previous
    by_custom_id = {cid: chunk[key] for cid, key in custom.items()}
    batch_id = generator.submit_batch(by_custom_id)
    cache.put(journal, f"{signature}:{attempt}", encode_json({"batch_id": batch_id, "custom_ids": dict(custom)}))
    log.info("submitted message batch %s (%d requests)", batch_id, len(custom))
    return batch_id
