"""One request through evalkit's content-addressed cache: keys, stored answers, token counts and the window check.

What goes into a response's cache key: the backend identity and its
output-affecting parameters plus :meth:`GenerationRequest.content_key`, and
``CACHE_VERSION`` (inside :func:`evalkit.cache.cache_key`). A token count is
cached by the request's input alone. Overflows and errors are never stored
(:data:`UNCACHED_STOPS`).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING

from evalkit.answers.generation.request import UNCACHED_STOPS, GenerationRequest
from evalkit.cache import Cache, cache_key, decode_json, encode_json
from evalkit.records import Answer, Usage

if TYPE_CHECKING:
    from evalkit.answers.generation.base import Generator
    from evalkit.answers.generation.tally import GenerationCounter

log = logging.getLogger(__name__)


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
            "first_token_s": answer.first_token_s,
            "total_s": answer.total_s,
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
        first_token_s=data.get("first_token_s"),  # absent from answers stored before timings were recorded
        total_s=data.get("total_s"),
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
