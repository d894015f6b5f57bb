"""The generator contract, and the one import point for the shared work around it.

A backend implements one method, :meth:`Generator.generate` (one request, one
answer). The shared work lives once, beside it, so every backend pays only for
requests it has never answered:

- :mod:`~evalkit.answering.generation.request`: the request record, errors, stop reasons;
- :mod:`~evalkit.answering.generation.cached`: the content-addressed cache, the
  token pre-count with its window check, one cached call;
- :mod:`~evalkit.answering.generation.batches`: many calls (dedupe, threads,
  Message Batches: submit, persist, poll, resume, collect);
- :mod:`~evalkit.answering.generation.tally`: the request/token counter.

Every public name of those modules is importable from here.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evalkit.answering.generation.batches import custom_id_for, generate_many
from evalkit.answering.generation.cached import (
    check_window,
    count_tokens_cached,
    decode_answer,
    encode_answer,
    generate_cached,
    overflow_answer,
    request_key,
    response_namespace,
)
from evalkit.answering.generation.request import (
    TRUNCATING_STOPS,
    UNCACHED_STOPS,
    BatchPending,
    Content,
    GenerationError,
    GenerationRequest,
    Role,
    build_request,
)
from evalkit.answering.generation.tally import GenerationCounter, ModelTally
from evalkit.records import Answer

if TYPE_CHECKING:
    from evalkit.answering.generation.loglik import AnswerLoglik

__all__ = [
    "TRUNCATING_STOPS",
    "UNCACHED_STOPS",
    "BatchPending",
    "Content",
    "GenerationCounter",
    "GenerationError",
    "GenerationRequest",
    "Generator",
    "ModelTally",
    "Role",
    "build_request",
    "check_window",
    "count_tokens_cached",
    "custom_id_for",
    "decode_answer",
    "encode_answer",
    "generate_cached",
    "generate_many",
    "overflow_answer",
    "request_key",
    "response_namespace",
]


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

    @property
    def supports_loglik(self) -> bool:
        """True when :meth:`answer_loglik` is implemented (the model exposes token log-probabilities)."""
        return False

    def answer_loglik(self, request: GenerationRequest, answer: str) -> AnswerLoglik | None:
        """Log-probability of exactly ``answer``'s tokens as the reply to ``request``; None when it does not fit.

        Called through :func:`~evalkit.answering.generation.loglik.answer_logliks` (cached; None for a backend
        without :attr:`supports_loglik`), never directly by a pipeline.
        """
        raise NotImplementedError(f"{self.backend} cannot score an answer's log-likelihood (no token logprobs)")

    def submit_batch(self, requests: Mapping[str, GenerationRequest]) -> str:
        """Submit requests keyed by custom_id; returns the batch id."""
        raise NotImplementedError(f"{self.backend} has no batch API")

    def batch_status(self, batch_id: str) -> str:
        """Processing status; ``ended`` once every request has a result."""
        raise NotImplementedError(f"{self.backend} has no batch API")

    def batch_results(self, batch_id: str) -> dict[str, Answer]:
        """Answers of an ended batch keyed by custom_id (question ids empty; the caller stamps them)."""
        raise NotImplementedError(f"{self.backend} has no batch API")
