"""The log-likelihood of a given answer under a prompt: a continuous, paired outcome beside generated accuracy.

``answer_logliks(generator, [(request, answer), ...], cache)`` gives, per pair,
the natural-log probability the model assigns to exactly the answer's tokens
right after the request's prompt (where its own reply would start), or None when
the generator cannot score (no logprobs, e.g. Claude) or the prompt plus the
answer does not fit its window. Any generator can be asked; only the ones with
``supports_loglik`` are called.

Values are cached in evalkit's SQLite cache under their own namespace,
``loglik:<identity>``, keyed on what changes the number: the generator's
identity and :meth:`~Generator.key_params` (as the response cache keys it), the
request's :meth:`~GenerationRequest.content_key`, the answer text,
:data:`LOGLIK_VERSION` and ``CACHE_VERSION``. A None is never stored (a bigger
window may score it later).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalkit.answers.generation.request import GenerationRequest
from evalkit.cache import Cache, cache_key, decode_json, encode_json

if TYPE_CHECKING:
    from evalkit.answers.generation.base import Generator

__all__ = [
    "LOGLIK_VERSION",
    "AnswerLoglik",
    "answer_logliks",
    "check_answer",
    "loglik_key",
    "loglik_namespace",
]

log = logging.getLogger(__name__)

LOGLIK_VERSION = "2"
"""Bumped when what a stored score measures changes (v1: the answer's canonical tokens, no end-of-turn token;
v2: the forced reply reuses the prompt's cache, so the prompt's last token is read alone: the values moved by up
to 0.07 nats)."""


@dataclass(frozen=True)
class AnswerLoglik:
    """The log-probability of an answer's tokens given the prompt (natural log, so always <= 0)."""

    total: float
    """Sum over the answer's tokens of log p(token | prompt, earlier answer tokens)."""
    mean: float
    """``total / n_tokens``: comparable across answers of different lengths."""
    n_tokens: int
    """Tokens the answer took, by the model's tokenizer; the end-of-turn token is not one of them."""

    def __post_init__(self) -> None:
        if self.n_tokens <= 0:
            raise ValueError(f"an answer log-likelihood covers at least one token, got n_tokens={self.n_tokens}")
        if not math.isfinite(self.total) or self.total > 1e-6:
            raise ValueError(f"a log-likelihood is finite and <= 0, got {self.total}")
        if abs(self.mean * self.n_tokens - self.total) > 1e-6 * max(1.0, abs(self.total)):
            raise ValueError(f"mean {self.mean} != total {self.total} / n_tokens {self.n_tokens}")

    @classmethod
    def of(cls, token_logprobs: Sequence[float]) -> AnswerLoglik:
        """The record for the answer's per-token log-probabilities, in order."""
        total = math.fsum(token_logprobs)
        return cls(total=total, mean=total / len(token_logprobs), n_tokens=len(token_logprobs))


def check_answer(answer: str, request: GenerationRequest) -> None:
    """Raise ValueError (one line) for an answer with nothing to score."""
    if not answer.strip():
        who = f" for question {request.question_id}" if request.question_id else ""
        raise ValueError(f"answer log-likelihood{who}: the answer text is empty; a log-likelihood needs a token")


def loglik_namespace(generator: Generator) -> str:
    return f"loglik:{generator.identity}"


def loglik_key(generator: Generator, request: GenerationRequest, answer: str) -> str:
    """Cache key of one score: identity and parameters as the response cache keys them, request, answer."""
    params = dict(generator.key_params())
    return cache_key("loglik", LOGLIK_VERSION, generator.identity, params, request.content_key(), answer)


def _encode(value: AnswerLoglik) -> bytes:
    return encode_json({"total": value.total, "mean": value.mean, "n_tokens": value.n_tokens})


def _decode(blob: bytes) -> AnswerLoglik:
    data = decode_json(blob)
    return AnswerLoglik(total=float(data["total"]), mean=float(data["mean"]), n_tokens=int(data["n_tokens"]))


def answer_logliks(
    generator: Generator, pairs: Sequence[tuple[GenerationRequest, str]], cache: Cache
) -> list[AnswerLoglik | None]:
    """Per (request, answer) pair, the answer's log-likelihood under the request's prompt; None: cannot score.

    Cached pairs never run the model; each new score is stored as soon as it is computed (an interrupted run
    keeps what it paid for). Equal pairs are scored once. An empty answer is a ValueError before anything runs.
    """
    for request, answer in pairs:
        check_answer(answer, request)
    if not generator.supports_loglik:
        return [None] * len(pairs)
    namespace = loglik_namespace(generator)
    keys = [loglik_key(generator, request, answer) for request, answer in pairs]
    found = {key: _decode(blob) for key, blob in cache.get_many(namespace, keys).items()}
    for key, (request, answer) in zip(keys, pairs, strict=True):
        if key in found:
            continue
        value = generator.answer_loglik(request, answer)
        found[key] = value
        if value is None:
            log.info("no log-likelihood for %s: the prompt and answer do not fit", request.question_id or "request")
            continue
        cache.put(namespace, key, _encode(value))
    return [found[key] for key in keys]
