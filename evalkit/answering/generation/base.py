"""The generator contract and the shared work around it.

A backend implements one method, :meth:`Generator.generate` (one request, one
answer). The content-addressed cache, the token pre-count with its window
check, deduplication, Message Batches (submit, persist, poll, resume, collect)
and the request/token counter live here, once, so every backend pays only for
requests it has never answered.

What goes into a response's cache key: everything that changes the output
(backend identity and its output-affecting parameters, model, system prompt,
messages, max_tokens, stop sequences, the prompt-caching flag) plus
``CACHE_VERSION`` (inside :func:`evalkit.cache.cache_key`). Never timeouts,
retries, custom ids, question ids or other metadata.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from evalkit.cache import Cache, cache_key, decode_json, encode_json
from evalkit.records import Answer, Usage

log = logging.getLogger(__name__)

Role = Literal["user", "assistant"]
Content = tuple[str, ...]
"""A message's text blocks, in order; see :attr:`GenerationRequest.cache_prefix` for what the first block means."""

TRUNCATING_STOPS = frozenset({"max_tokens", "model_context_window_exceeded", "length"})
"""Stop reasons that cut an answer short (``length`` is llama.cpp's name for ``max_tokens``)."""

UNCACHED_STOPS = frozenset({"overflow", "error"})
"""Outcomes never stored: nothing useful was paid for, and a re-run (bigger window, healthy batch) may succeed."""

_CUSTOM_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # the Message Batches API's custom_id pattern


class GenerationError(RuntimeError):
    """A generator failed in a way a retry will not fix (bad request, missing key or package, retries exhausted)."""


class BatchPending(GenerationError):
    """Batches were submitted but had not ended by the deadline; re-running the same sweep polls them again."""

    def __init__(self, batch_ids: Sequence[str], waited_s: float) -> None:
        self.batch_ids = tuple(batch_ids)
        super().__init__(
            f"message batch(es) {', '.join(self.batch_ids)} still processing after {waited_s:.0f} s; "
            "re-run the same sweep to resume polling them (nothing is resubmitted)"
        )


@dataclass(frozen=True)
class GenerationRequest:
    """One model call: everything that determines the answer, plus metadata that does not."""

    model: str
    """Model id sent to the provider (e.g. ``claude-sonnet-5``)."""
    system: str
    """System prompt ('' for none)."""
    messages: tuple[tuple[Role, Content], ...]
    """Conversation turns as (role, text blocks); a plain string content is normalised to a one-block tuple."""
    max_tokens: int
    """Output token cap."""
    stop_sequences: tuple[str, ...] = ()
    """Custom stop sequences."""
    cache_prefix: bool = False
    """Mark the stable prefix for provider prompt caching: the system prompt, and the first block of the first
    user turn when that turn has more than one block (put a shared context first, the question last)."""
    question_id: str = ""
    """Question this request answers (stamped on the Answer; not part of the cache key)."""
    metadata: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)
    """Free metadata such as ``custom_id`` for batches; never part of the cache key or of equality."""

    def __post_init__(self) -> None:
        # Normalise into new immutable tuples (the caller's lists are never touched), so equal requests hash equal.
        turns = tuple(
            (role, (content,) if isinstance(content, str) else tuple(content)) for role, content in self.messages
        )
        for role, _ in turns:
            if role not in ("user", "assistant"):
                raise ValueError(f"message role must be 'user' or 'assistant', got {role!r}")
        if not turns:
            raise ValueError("a generation request needs at least one message")
        if self.max_tokens <= 0:
            raise ValueError(f"max_tokens must be positive, got {self.max_tokens}")
        object.__setattr__(self, "messages", turns)
        object.__setattr__(self, "stop_sequences", tuple(self.stop_sequences))
        object.__setattr__(self, "metadata", dict(self.metadata))

    def content_key(self) -> dict[str, Any]:
        """The fields that change the output, as JSON-ready data."""
        return {
            "model": self.model,
            "system": self.system,
            "messages": [[role, list(blocks)] for role, blocks in self.messages],
            "max_tokens": self.max_tokens,
            "stop_sequences": list(self.stop_sequences),
            "cache_prefix": self.cache_prefix,
        }

    def input_key(self) -> dict[str, Any]:
        """The fields that determine the input token count (not max_tokens, stops or the caching flag)."""
        return {"model": self.model, "system": self.system, "messages": [[r, list(b)] for r, b in self.messages]}


def build_request(
    question: str,
    context: str,
    *,
    model: str,
    system: str,
    max_tokens: int,
    context_template: str = "Context:\n{context}\n\n",
    question_template: str = "Question: {question}",
    question_id: str = "",
    stop_sequences: Sequence[str] = (),
    cache_prefix: bool = False,
    metadata: Mapping[str, str] | None = None,
) -> GenerationRequest:
    """A one-turn RAG request: the context block first (the cacheable prefix), the question block last."""
    blocks = (context_template.format(context=context), question_template.format(question=question))
    return GenerationRequest(
        model=model,
        system=system,
        messages=(("user", blocks),),
        max_tokens=max_tokens,
        stop_sequences=tuple(stop_sequences),
        cache_prefix=cache_prefix,
        question_id=question_id,
        metadata=dict(metadata or {}),
    )


@dataclass
class ModelTally:
    """Requests sent and tokens reported for one model under one billing mode."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def add(self, usage: Usage) -> None:
        self.requests += 1
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.cache_creation_input_tokens += usage.cache_creation_input_tokens
        self.cache_read_input_tokens += usage.cache_read_input_tokens


@dataclass
class GenerationCounter:
    """What generation cost, per model: answers paid at list price, answers paid at the batch discount, and the
    calls that cost nothing (cache hits, token counts, overflows refused before sending)."""

    single: dict[str, ModelTally] = field(default_factory=dict)
    """Answers from single Messages calls (list price)."""
    batch: dict[str, ModelTally] = field(default_factory=dict)
    """Answers from Message Batches (billed at the batch multiplier, e.g. half price)."""
    cache_hits: dict[str, int] = field(default_factory=dict)
    """Answers served from evalkit's cache: no request, nothing paid."""
    token_counts: dict[str, int] = field(default_factory=dict)
    """count_tokens requests actually sent (cached counts excluded)."""
    overflows: dict[str, int] = field(default_factory=dict)
    """Requests refused for exceeding the window, before sending or by the provider (HTTP 400)."""
    errors: dict[str, int] = field(default_factory=dict)
    """Answers with stop_reason ``error`` (e.g. an errored batch item)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def record(self, answer: Answer, *, batch: bool = False) -> None:
        """Count one fresh answer (not a cache hit)."""
        with self._lock:
            if answer.stop_reason == "overflow":
                _bump(self.overflows, answer.model)
            elif answer.stop_reason == "error":
                _bump(self.errors, answer.model)
            else:
                self._tally(batch).setdefault(answer.model, ModelTally()).add(answer.usage)

    def hit(self, model: str) -> None:
        with self._lock:
            _bump(self.cache_hits, model)

    def counted(self, model: str) -> None:
        with self._lock:
            _bump(self.token_counts, model)

    def total(self, model: str | None = None) -> ModelTally:
        """Sum of single and batch tallies, for one model or all."""
        out = ModelTally()
        with self._lock:
            for tallies in (self.single, self.batch):
                for name, tally in tallies.items():
                    if model is None or name == model:
                        for attr in vars(out):
                            setattr(out, attr, getattr(out, attr) + getattr(tally, attr))
        return out

    def _tally(self, batch: bool) -> dict[str, ModelTally]:
        return self.batch if batch else self.single


def _bump(counts: dict[str, int], key: str, n: int = 1) -> None:
    counts[key] = counts.get(key, 0) + n


class Generator(ABC):
    """A chat model. Subclasses set the identity and implement :meth:`generate`."""

    backend: str = ""
    """Backend name recorded on every Answer (``anthropic``, ``local``)."""
    model: str = ""
    """Default model id used when building requests."""
    window: int | None = None
    """Context window in tokens (input + output); None: no pre-send check."""
    headroom: int = 0
    """Tokens kept free beyond ``max_tokens`` when checking the window (count drift, template overhead)."""
    precount: bool = False
    """Count input tokens before sending (only when :meth:`count_tokens` is supported and a window is set)."""
    supports_batch: bool = False
    """True when :meth:`submit_batch`, :meth:`batch_status` and :meth:`batch_results` are implemented."""
    batch_enabled: bool = False
    """Use batches in :func:`generate_many` unless told otherwise."""
    poll_interval_s: float = 60.0
    """Seconds between batch status polls."""
    batch_timeout_s: float = 24 * 3600.0
    """Give up polling (raise :class:`BatchPending`) after this long; a re-run resumes."""
    max_batch_requests: int = 10_000
    """Requests per submitted batch (the Anthropic API allows 100,000 or 256 MB)."""

    @abstractmethod
    def generate(self, request: GenerationRequest) -> Answer:
        """Send one request and return its answer (``cached=False``).

        A prompt over the provider's limit is an Answer with stop_reason ``overflow``, not an exception.
        """

    def count_tokens(self, request: GenerationRequest) -> int | None:
        """Input tokens of the request by the model's own counter, or None when the backend cannot count."""
        return None

    @property
    def identity(self) -> str:
        """Backend identity in cache keys and namespaces (a local backend adds its weights' version)."""
        return self.backend

    def key_params(self) -> Mapping[str, Any]:
        """Backend settings that change the output and are not in the request (seed, context size, ...)."""
        return {}

    def submit_batch(self, requests: Mapping[str, GenerationRequest]) -> str:
        """Submit requests keyed by custom_id; returns the batch id."""
        raise NotImplementedError(f"{self.backend} has no batch API")

    def batch_status(self, batch_id: str) -> str:
        """Processing status; ``ended`` once every request has a result."""
        raise NotImplementedError(f"{self.backend} has no batch API")

    def batch_results(self, batch_id: str) -> dict[str, Answer]:
        """Answers of an ended batch keyed by custom_id (question ids empty; the caller stamps them)."""
        raise NotImplementedError(f"{self.backend} has no batch API")


# --------------------------------------------------------------------------- cache keys and values


def request_key(generator: Generator, request: GenerationRequest) -> str:
    """Cache key of a response: backend identity and parameters plus the request content."""
    return cache_key("generate", generator.identity, dict(generator.key_params()), request.content_key())


def response_namespace(generator: Generator) -> str:
    return f"generate:{generator.identity}"


def _count_key(generator: Generator, request: GenerationRequest) -> str:
    return cache_key("count_tokens", generator.identity, request.input_key())


def encode_answer(answer: Answer) -> bytes:
    usage = answer.usage
    return encode_json(
        {
            "text": answer.text,
            "backend": answer.backend,
            "model": answer.model,
            "stop_reason": answer.stop_reason,
            "truncated": answer.truncated,
            "usage": {
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "cache_creation_input_tokens": usage.cache_creation_input_tokens,
                "cache_read_input_tokens": usage.cache_read_input_tokens,
                "estimated": usage.estimated,
            },
        }
    )


def decode_answer(blob: bytes, question_id: str) -> Answer:
    data = decode_json(blob)
    return Answer(
        question_id=question_id,
        text=data["text"],
        backend=data["backend"],
        model=data["model"],
        usage=Usage(**data["usage"]),
        stop_reason=data["stop_reason"],
        cached=True,
        truncated=data["truncated"],
    )


def overflow_answer(
    generator: Generator, request: GenerationRequest, *, backend: str | None = None, why: str = ""
) -> Answer:
    """The answer recorded when a prompt does not fit: empty text, no tokens billed."""
    if why:
        log.info("overflow for %s (%s): %s", request.question_id or "request", request.model, why)
    return Answer(
        question_id=request.question_id,
        text="",
        backend=backend or generator.backend,
        model=request.model,
        usage=Usage(),
        stop_reason="overflow",
    )


# --------------------------------------------------------------------------- token counts and the window


def count_tokens_cached(
    generator: Generator, request: GenerationRequest, cache: Cache, counter: GenerationCounter | None = None
) -> int | None:
    """The request's input tokens by the model's own counter, counted once per distinct input."""
    namespace = f"count_tokens:{generator.identity}"
    key = _count_key(generator, request)
    blob = cache.get(namespace, key)
    if blob is not None:
        return int(decode_json(blob))
    count = generator.count_tokens(request)
    if count is None:
        return None
    if counter is not None:
        counter.counted(request.model)
    cache.put(namespace, key, encode_json(int(count)))
    return int(count)


def check_window(
    generator: Generator, request: GenerationRequest, cache: Cache, counter: GenerationCounter | None = None
) -> Answer | None:
    """An overflow Answer when the counted prompt plus max_tokens (plus headroom) exceeds the window; else None.

    Refusing here costs one (cached) count instead of a failed or truncated paid call.
    """
    if not generator.precount or not generator.window:
        return None
    count = count_tokens_cached(generator, request, cache, counter)
    if count is None:
        return None
    needed = count + request.max_tokens + generator.headroom
    if needed <= generator.window:
        return None
    answer = overflow_answer(
        generator,
        request,
        why=f"{count} input + {request.max_tokens} max_tokens + {generator.headroom} headroom > {generator.window}",
    )
    if counter is not None:
        counter.record(answer)
    return answer


# --------------------------------------------------------------------------- single calls


def generate_cached(
    generator: Generator, request: GenerationRequest, cache: Cache, counter: GenerationCounter | None = None
) -> Answer:
    """The answer to one request, sending it only when evalkit's cache does not hold it."""
    namespace = response_namespace(generator)
    key = request_key(generator, request)
    blob = cache.get(namespace, key)
    if blob is not None:
        if counter is not None:
            counter.hit(request.model)
        return decode_answer(blob, request.question_id)
    refused = check_window(generator, request, cache, counter)
    if refused is not None:
        return refused
    answer = replace(generator.generate(request), question_id=request.question_id, cached=False)
    if counter is not None:
        counter.record(answer)
    if answer.stop_reason not in UNCACHED_STOPS:
        cache.put(namespace, key, encode_answer(answer))
    return answer


# --------------------------------------------------------------------------- many calls, batches


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

    started = time.monotonic()
    waiting = list(open_batches)
    while True:
        waiting = [batch_id for batch_id in waiting if generator.batch_status(batch_id) != "ended"]
        if not waiting:
            break
        waited = time.monotonic() - started
        if waited >= generator.batch_timeout_s:
            raise BatchPending(waiting, waited)
        sleep(min(generator.poll_interval_s, max(0.0, generator.batch_timeout_s - waited)))

    namespace = response_namespace(generator)
    fresh: dict[str, Answer] = {}
    for batch_id, custom in open_batches.items():
        results = generator.batch_results(batch_id)
        store: dict[str, bytes] = {}
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
        cache.put_many(namespace, store)
        # Marked collected only after its answers are stored: a crash before this line re-collects, never re-pays.
        cache.put(journal, f"done:{batch_id}", encode_json(True))
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
