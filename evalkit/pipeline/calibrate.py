"""How fast the chosen models run on this machine: a short calibration, for the dry run's time estimates.

Measured once per model and machine, then read from the evalkit cache:

- an embedder embeds 16 short and 16 long fixed texts (its cost per text and per character);
- a reranker scores 8 short and 8 long fixed (query, passage) pairs (likewise, per pair);
- a local generator answers one short prompt twice, with 1 and with 16 output tokens
  (prompt tokens per second, and output tokens per second from the difference).

The cache row's key is the model's identity (with the settings that change its speed), its
thread count and the machine (host name, CPU count), so a second dry run does not measure again
and another machine or thread count does. The models are called directly, never through the
embedding, rerank or answer caches: calibrating changes no stored result and no sweep number.
Paid or remote backends (Cohere, Anthropic) are never calibrated: a dry run sends nothing.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from evalkit.answers.generation.base import Generator
from evalkit.answers.generation.request import GenerationRequest, build_request
from evalkit.cache import Cache, cache_key, decode_json, encode_json
from evalkit.retrieval.embedding.base import Embedder
from evalkit.retrieval.rerank.base import Reranker

CALIBRATION_VERSION = 1
"""Bump when what is measured changes: older measurements are then taken again."""
OUTPUT_TOKENS = 16
"""Output tokens of the generator's timed answer (the output rate is the difference to a 1-token answer)."""
NAMESPACE = "calibration"
Source = Literal["calibrated", "cached"]

_SENTENCE = (
    "The rate limiter allows a burst of twenty requests per second and refills one token every fifty "
    "milliseconds; requests beyond the burst wait in a queue that holds at most two hundred entries. "
)
SHORT_TEXTS = tuple(f"How many requests may wait in queue number {i}?" for i in range(16))
"""Question-sized texts (about 45 characters)."""
LONG_TEXTS = tuple(f"Section {i}. " + _SENTENCE * 5 for i in range(16))
"""Chunk-sized texts (about 1,000 characters): with the short ones they separate cost per text from per char."""


@dataclass(frozen=True)
class TextRate:
    """Seconds an embedder or reranker takes: ``per_item_s`` per text or pair plus ``per_char_s`` per character."""

    identity: str
    per_item_s: float
    per_char_s: float
    items_per_s: float
    """On the calibration texts (half short, half long): what the dry run prints as the measured rate."""
    unit: str
    """``texts`` (embedding) or ``pairs`` (rerank)."""
    threads: int
    source: Source = "calibrated"

    def seconds(self, items: int, chars: int) -> float:
        return items * self.per_item_s + chars * self.per_char_s


@dataclass(frozen=True)
class TokenRate:
    """A generator's prompt and output tokens per second, from one short prompt."""

    identity: str
    prompt_tokens_per_s: float
    output_tokens_per_s: float
    threads: int
    source: Source = "calibrated"

    def seconds(self, prompt_tokens: int, output_tokens: int) -> float:
        return prompt_tokens / self.prompt_tokens_per_s + output_tokens / self.output_tokens_per_s


def machine() -> dict[str, Any]:
    """What makes a measurement belong to this machine."""
    return {"node": platform.node(), "cpus": os.cpu_count(), "machine": platform.machine()}


def thread_count(model: Any) -> int:
    """Threads the model runs with: its own setting when it has one, else OMP_NUM_THREADS, else every CPU."""
    for name in ("n_threads", "threads", "_threads"):
        value = getattr(model, name, None)
        if isinstance(value, int) and value > 0:
            return value
    inner = getattr(model, "embedder", None)  # a cosine reranker runs at its embedder's threads
    if inner is not None:
        return thread_count(inner)
    configured = os.environ.get("OMP_NUM_THREADS", "")
    return int(configured) if configured.isdigit() and int(configured) > 0 else os.cpu_count() or 1


def calibration_key(role: str, identity: str, settings: Any, threads: int) -> str:
    return cache_key(NAMESPACE, CALIBRATION_VERSION, role, identity, settings, threads, machine())


def _timed(work: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = work()
    return time.perf_counter() - started, result


def _split(short_s: float, long_s: float) -> tuple[float, float]:
    """Per-item and per-character seconds from a short and a long group of the same size (never negative)."""
    n = len(SHORT_TEXTS)
    short_chars = sum(map(len, SHORT_TEXTS)) / n
    long_chars = sum(map(len, LONG_TEXTS)) / n
    per_char = max(0.0, (long_s - short_s) / (n * (long_chars - short_chars)))
    per_item = max(0.0, short_s / n - per_char * short_chars)
    if per_item == 0.0 and per_char == 0.0:  # too fast to time: a floor keeps estimates finite
        per_item = 1e-7
    return per_item, per_char


def _text_rate(identity: str, unit: str, threads: int, short_s: float, long_s: float) -> TextRate:
    per_item, per_char = _split(short_s, long_s)
    items = len(SHORT_TEXTS) + len(LONG_TEXTS)
    return TextRate(identity, per_item, per_char, items / max(short_s + long_s, 1e-9), unit, threads)


def _measure_embedder(embedder: Embedder) -> TextRate:
    embedder.embed_batch(["warm-up: load the model before timing"], "passage")
    short_s, _ = _timed(lambda: embedder.embed_batch(list(SHORT_TEXTS), "passage"))
    long_s, _ = _timed(lambda: embedder.embed_batch(list(LONG_TEXTS), "passage"))
    return _text_rate(embedder.identity, "texts", thread_count(embedder), short_s, long_s)


def _measure_reranker(reranker: Reranker) -> TextRate:
    query = "How many requests may wait in the queue?"
    reranker.score_pairs("warm-up", ["load the model before timing"])
    short_s, _ = _timed(lambda: reranker.score_pairs(query, list(SHORT_TEXTS[:8])))
    long_s, _ = _timed(lambda: reranker.score_pairs(query, list(LONG_TEXTS[:8])))
    # 8 pairs per group: scale to the 16-item groups _split assumes.
    return _text_rate(reranker.identity, "pairs", thread_count(reranker), 2 * short_s, 2 * long_s)


def _request(model: str, max_tokens: int) -> GenerationRequest:
    return build_request(
        "Count from 1 to 40, separated by spaces.",
        _SENTENCE,
        model=model,
        system="You follow instructions exactly.",
        max_tokens=max_tokens,
        question_id="calibration",
    )


def _measure_generator(generator: Generator) -> TokenRate:
    load = getattr(generator, "load", None)
    if callable(load):  # a local model loads before the clock starts
        load()
    else:
        generator.generate(_request(generator.model, 1))
    prompt_s, first = _timed(lambda: generator.generate(_request(generator.model, 1)))
    full_s, full = _timed(lambda: generator.generate(_request(generator.model, OUTPUT_TOKENS)))
    prompt_tokens = max(first.usage.input_tokens, 1)
    extra_tokens = full.usage.output_tokens - first.usage.output_tokens
    extra_s = full_s - prompt_s
    if extra_tokens >= 2 and extra_s > 0:
        output_rate = extra_tokens / extra_s
    else:  # the model stopped at once, or too fast to time: the whole call's rate
        output_rate = max(full.usage.output_tokens, 1) / max(full_s, 1e-9)
    return TokenRate(generator.identity, prompt_tokens / max(prompt_s, 1e-9), output_rate, thread_count(generator))


def _cached(cache: Cache, key: str, measure: Callable[[], Any], kind: type[Any]) -> Any:
    """The stored measurement for ``key`` (source ``cached``), else measure it now and store it."""
    stored = cache.get_decoded(NAMESPACE, [key], lambda blob: kind(**decode_json(blob))).get(key)
    if stored is not None:
        return replace(stored, source="cached")
    rate = measure()
    cache.put(NAMESPACE, key, encode_json(asdict(rate)))
    return rate


def embedder_rate(embedder: Embedder, cache: Cache) -> TextRate:
    key = calibration_key("embed", embedder.identity, embedder.batch_size, thread_count(embedder))
    return _cached(cache, key, lambda: _measure_embedder(embedder), TextRate)


def reranker_rate(reranker: Reranker, cache: Cache) -> TextRate:
    key = calibration_key("rerank", reranker.identity, reranker.max_documents_per_request, thread_count(reranker))
    return _cached(cache, key, lambda: _measure_reranker(reranker), TextRate)


def generator_rate(generator: Generator, cache: Cache) -> TokenRate:
    settings = dict(generator.key_params())
    key = calibration_key("generate", generator.identity, settings, thread_count(generator))
    return _cached(cache, key, lambda: _measure_generator(generator), TokenRate)


def calibrates(generator_name: str | None) -> bool:
    """Generators measured here: those that run on this machine (a remote API would be sent a request)."""
    from evalkit.answers.generation.settings import generator_backend

    return generator_name is not None and generator_backend(generator_name).runs_here


def describe_rates(rates: Sequence[TextRate | TokenRate]) -> list[str]:
    """One line per model: what it measured, and whether it was measured now or read from the cache."""
    where = machine()
    lines = []
    for rate in rates:
        if isinstance(rate, TextRate):
            speed = f"{rate.items_per_s:,.1f} {rate.unit}/s on the calibration texts"
        else:
            speed = f"{rate.prompt_tokens_per_s:,.0f} prompt tok/s, {rate.output_tokens_per_s:,.1f} output tok/s"
        lines.append(
            f"evalkit dry run: {rate.identity}: {speed} at {rate.threads} threads on {where['node']} "
            f"({where['cpus']} CPUs) [{rate.source}]"
        )
    return lines
