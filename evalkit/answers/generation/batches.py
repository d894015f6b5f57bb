"""Many requests at once: cache look-up in bulk, content-hash dedupe, then threads or Message Batches.

The batch path, in order:

1. the pending requests are cut into batches of at most ``max_batch_requests``; each is
   looked up in the journal (:mod:`~evalkit.answers.generation.journal`) by the
   signature of its custom_id -> request key map: an uncollected batch is polled again
   (never resubmitted), a collected one whose answers the cache lost is downloaded again;
2. before anything is submitted, the upper bound of what it can cost (every prompt
   token at the cache-write price where caching was asked, the full ``max_tokens``
   out, at the batch multiplier) is charged to the spend guard: over the cap, nothing
   is submitted and :class:`~evalkit.cost.budget.BudgetExceeded` says so;
3. a submitted batch is journalled the moment the provider accepts it, polled until it
   ends, its answers stored, and only then marked collected (a crash in between
   re-collects; it never re-pays);
4. entries that errored, expired or were canceled are submitted once more in a new
   batch (attempt 1); what fails again is an Answer with stop_reason ``error`` and its
   reason in ``Answer.error``, counted in the counter, never dropped.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from evalkit.answers.generation.cached import (
    check_window,
    count_tokens_cached,
    decode_answer,
    encode_answer,
    request_key,
    response_namespace,
)
from evalkit.answers.generation.journal import BatchJournal, BatchRecord, CacheJournal, FileJournal
from evalkit.answers.generation.request import UNCACHED_STOPS, BatchPending, GenerationError, GenerationRequest
from evalkit.cache import Cache
from evalkit.cost.model import TokenUsage, call_cost
from evalkit.cost.tokens import estimate_tokens
from evalkit.records import Answer, Usage

if TYPE_CHECKING:
    from evalkit.answers.generation.base import Generator
    from evalkit.answers.generation.tally import GenerationCounter
    from evalkit.cost.budget import SpendGuard
    from evalkit.cost.prices import ModelPrice

log = logging.getLogger(__name__)

_CUSTOM_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # the Message Batches API's custom_id pattern
SUCCEEDED = "succeeded"
RETRIES = 1
"""Entries that errored, expired or were canceled are submitted this many more times, then reported failed."""


@dataclass(frozen=True)
class Budget:
    """The spend guard and the price that bounds what a request can cost (None: nothing checked)."""

    spend: SpendGuard
    price: ModelPrice
    lock: threading.Lock

    def charge(self, generator: Generator, requests: Sequence[GenerationRequest], cache: Cache, *, batch: bool) -> None:
        """Charge the requests' upper-bound cost before any of them is sent; raises BudgetExceeded when over."""
        usd = sum(self._bound(generator, request, cache, batch) for request in requests)
        what = f"generate: {'a message batch of ' if batch else ''}{len(requests)} request(s)"
        with self.lock:
            self.spend.charge(usd, what)

    def _bound(self, generator: Generator, request: GenerationRequest, cache: Cache, batch: bool) -> float:
        if request.model != self.price.model_id:
            raise GenerationError(f"the budget is priced for {self.price.model_id}, the request is for {request.model}")
        counted = count_tokens_cached(generator, request, cache) if generator.precount else None
        text = "\n".join([request.system, *(block for _, blocks in request.messages for block in blocks)])
        prompt = counted if counted is not None else estimate_tokens(text, self.price.tokenizer_family)
        cached = prompt if request.cache_prefix else 0  # a cache write costs more than plain input: the bound
        usage = TokenUsage(prompt - cached, request.max_tokens, cached, estimated=counted is None)
        return call_cost(usage, self.price, batch=batch).usd


def generate_many(
    generator: Generator,
    requests: Sequence[GenerationRequest],
    cache: Cache,
    counter: GenerationCounter | None = None,
    *,
    batch: bool | None = None,
    workers: int = 1,
    sleep: Callable[[float], None] = time.sleep,
    journal: Path | None = None,
    spend: SpendGuard | None = None,
    price: ModelPrice | None = None,
) -> list[Answer]:
    """Answers in request order; cached ones cost nothing, identical requests are sent once.

    With ``batch`` (default: the generator's ``batch_enabled``) and a backend that supports it, uncached
    requests go into Message Batches (see the module docstring). ``journal``: the JSON file that records
    each submitted batch (e.g. ``<run>/batches.json``), so a killed run resumes polling the same batches
    even with a fresh cache file; None keeps the journal in the cache. Otherwise requests are sent one by
    one (``workers`` threads, at least the generator's ``concurrency``). ``spend`` with ``price``: every
    request's upper-bound cost is charged before it is sent (a batch as a whole, before submission).
    """
    if spend is not None and price is None:
        raise GenerationError("a spend cap needs the model's price to bound what a request costs")
    budget = Budget(spend, price, threading.Lock()) if spend is not None and price is not None else None
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
        store: BatchJournal = FileJournal(journal) if journal else CacheJournal(cache, f"batch:{generator.identity}")
        fresh.update(_Batches(generator, cache, counter, sleep, store, budget).run(pending))
    elif pending:
        threads = max(workers, generator.concurrency)
        fresh.update(_run_singles(generator, pending, cache, counter, threads, budget))
    return _in_request_order(requests, keys, stored, fresh, counter)


def _in_request_order(
    requests: Sequence[GenerationRequest],
    keys: Sequence[str],
    stored: Mapping[str, bytes],
    fresh: Mapping[str, Answer],
    counter: GenerationCounter | None,
) -> list[Answer]:
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
    budget: Budget | None,
) -> dict[str, Answer]:
    namespace = response_namespace(generator)
    in_flight = [0]
    lock = threading.Lock()

    def one(item: tuple[str, GenerationRequest]) -> tuple[str, Answer]:
        key, request = item
        if budget is not None:
            budget.charge(generator, [request], cache, batch=False)
        with lock:  # the load this request is timed under (a latency fit keeps requests that ran alone)
            in_flight[0] += 1
            load = in_flight[0]
        try:
            generated = generator.generate(request)
        finally:
            with lock:
                in_flight[0] -= 1
        answer = replace(generated, question_id=request.question_id, cached=False, in_flight=load)
        if counter is not None:
            counter.record(answer)
        if answer.stop_reason not in UNCACHED_STOPS:
            cache.put(namespace, key, encode_answer(answer))  # stored at once: an interrupted sweep keeps it
        return key, answer

    if workers <= 1:
        return dict(map(one, pending.items()))
    # After a failure the run stops on its one line: requests not yet sent are dropped, not sent one deadline
    # after another (1,000 to a dead endpoint at 4 in flight took 250 deadlines to say so); those in flight
    # finish under their own deadlines and stay cached, so the same command re-asks only the rest.
    failed = threading.Event()

    def unless_failed(item: tuple[str, GenerationRequest]) -> tuple[str, Answer] | None:
        if failed.is_set():  # a worker freed by the failure must not pick up the next request
            return None
        try:
            return one(item)
        except BaseException:
            failed.set()
            raise

    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(unless_failed, item) for item in pending.items()]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        error = next((f.exception() for f in futures if f in done and f.exception() is not None), None)
        if error is not None:
            pool.shutdown(wait=True, cancel_futures=True)
            raise error
        return dict(result for f in futures if (result := f.result()) is not None)


def custom_id_for(request: GenerationRequest, key: str) -> str:
    """The batch custom_id: the request's own (``metadata['custom_id']``) when valid, else its cache key."""
    given = request.metadata.get("custom_id", "")
    if given:
        if not _CUSTOM_ID.match(given):
            raise GenerationError(f"custom_id {given!r} must match {_CUSTOM_ID.pattern} (the batch API's rule)")
        return given
    return key[:64]  # a SHA-256 hex digest is exactly 64 characters of [0-9a-f]


def failed_answer(generator: Generator, request: GenerationRequest, reason: str) -> Answer:
    """The Answer reported for an entry that failed its last attempt: no text, nothing billed, the reason."""
    backend = getattr(generator, "batch_backend", generator.backend)
    return Answer(
        question_id=request.question_id,
        text="",
        backend=backend,
        model=request.model,
        usage=Usage(),
        stop_reason="error",
        error=reason,
    )


class _Batches:
    """One generate_many's batch work: resume or submit, poll, collect, retry the failed entries once."""

    def __init__(
        self,
        generator: Generator,
        cache: Cache,
        counter: GenerationCounter | None,
        sleep: Callable[[float], None],
        journal: BatchJournal,
        budget: Budget | None,
    ) -> None:
        self.generator, self.cache, self.counter, self.sleep = generator, cache, counter, sleep
        self.journal, self.budget = journal, budget

    def run(self, pending: Mapping[str, GenerationRequest]) -> dict[str, Answer]:
        answers: dict[str, Answer] = {}
        failed: dict[str, str] = {}  # request key -> reason, failures still owed a retry
        final: dict[str, str] = {}
        for record in self._open(pending, attempt=0):
            self._collect(record, pending, answers, failed if record.attempt < RETRIES else final)
        for _ in range(RETRIES):
            if not failed:
                break
            retry, failed = {key: pending[key] for key in failed}, {}
            log.info("resubmitting %d batch entries that errored, expired or were canceled", len(retry))
            for record in self._open(retry, attempt=RETRIES):
                self._collect(record, retry, answers, final)
        for key, reason in {**failed, **final}.items():
            answers[key] = failed_answer(self.generator, pending[key], reason)
            if self.counter is not None:
                self.counter.record(answers[key], batch=True)
            log.warning("batch entry %s failed after a retry: %s", pending[key].question_id or key[:12], reason)
        return answers

    def _chunks(self, pending: Mapping[str, GenerationRequest]) -> list[dict[str, str]]:
        """custom_id -> request key maps of at most ``max_batch_requests`` each, in request order."""
        items = list(pending.items())
        step = max(1, self.generator.max_batch_requests)
        chunks = []
        for offset in range(0, len(items), step):
            custom: dict[str, str] = {}
            for key, request in items[offset : offset + step]:
                cid = custom_id_for(request, key)
                if custom.get(cid, key) != key:
                    raise GenerationError(f"custom_id {cid!r} names two different requests in one batch")
                custom[cid] = key
            chunks.append(custom)
        return chunks

    def _open(self, pending: Mapping[str, GenerationRequest], *, attempt: int) -> list[BatchRecord]:
        """The batches answering ``pending`` (resumed from the journal, or newly submitted), each polled until it
        ended: an uncollected batch holding a pending request is polled again, a collected one whose entry
        succeeded is downloaded again; the rest is submitted, its upper-bound cost charged first."""
        records: list[BatchRecord] = []
        covered: set[str] = set()
        for found in self.journal.holding(list(pending)):
            useful = {
                key
                for cid, key in found.custom_ids.items()
                if key in pending and (found.state == "submitted" or found.outcomes.get(cid) == SUCCEEDED)
            }
            if useful - covered:
                log.info("resuming message batch %s (%d requests, %s)", found.batch_id, len(useful), found.state)
                records.append(found)
                covered |= useful
        to_submit = self._chunks({key: request for key, request in pending.items() if key not in covered})
        if to_submit and self.budget is not None:  # the whole submission is checked before any of it is sent
            requests = [pending[key] for custom in to_submit for key in custom.values()]
            self.budget.charge(self.generator, requests, self.cache, batch=True)
        for custom in to_submit:
            batch_id = self.generator.submit_batch({cid: pending[key] for cid, key in custom.items()})
            record = BatchRecord(batch_id, dict(custom), attempt)
            self.journal.submitted(record)  # before polling: a kill from here on resumes this batch
            log.info("submitted message batch %s (%d requests, attempt %d)", batch_id, len(custom), attempt)
            records.append(record)
        self._wait_until_ended([r.batch_id for r in records if r.state == "submitted"])
        return records

    def _wait_until_ended(self, batch_ids: Sequence[str]) -> None:
        """Poll until every batch has ended; :class:`BatchPending` past the generator's ``batch_timeout_s``."""
        generator = self.generator
        started = time.monotonic()
        waiting = list(batch_ids)
        while waiting:
            waiting = [batch_id for batch_id in waiting if generator.batch_status(batch_id) != "ended"]
            if not waiting:
                return
            waited = time.monotonic() - started
            if waited >= generator.batch_timeout_s:
                raise BatchPending(waiting, waited)
            self.sleep(min(generator.poll_interval_s, max(0.0, generator.batch_timeout_s - waited)))

    def _collect(
        self,
        record: BatchRecord,
        pending: Mapping[str, GenerationRequest],
        answers: dict[str, Answer],
        failed: dict[str, str],
    ) -> None:
        """Store the ended batch's answers (those still pending), note its failures, then mark it collected."""
        results = self.generator.batch_results(record.batch_id)
        store: dict[str, bytes] = {}
        outcomes: dict[str, str] = {}
        for cid, key in record.custom_ids.items():
            answer = results.get(cid)
            if answer is None:
                log.warning("batch %s has no result for custom_id %s", record.batch_id, cid)
                answer = failed_answer(self.generator, pending[key], "missing: no result line for this entry")
            outcomes[cid] = SUCCEEDED if answer.stop_reason != "error" else answer.error or "error"
            if key not in pending or key in answers:
                continue  # answered already (an earlier batch or the cache)
            answer = replace(answer, question_id=pending[key].question_id, cached=False)
            if answer.stop_reason in UNCACHED_STOPS:
                answer = replace(answer, model=pending[key].model)  # a failed item has no response model
            if answer.stop_reason == "error":
                failed[key] = answer.error or "error"
                continue
            if self.counter is not None and record.state == "collected":
                self.counter.hit(answer.model)  # downloaded again: paid for by an earlier run
            elif self.counter is not None:
                self.counter.record(answer, batch=True)
            if answer.stop_reason not in UNCACHED_STOPS:
                store[key] = encode_answer(answer)
            answers[key] = answer
            failed.pop(key, None)
        self.cache.put_many(response_namespace(self.generator), store)
        # Marked collected only after its answers are stored: a crash before this line re-collects, never re-pays.
        if record.state != "collected":
            self.journal.collected(record.batch_id, outcomes)
