"""The generator contract: one class, :class:`Generator`, that every backend implements.

A backend implements one method, :meth:`Generator.generate` (one request, one
answer). The shared work around it lives in its own modules, and each name is
imported from its home (this module re-exports nothing, and none of them
imports this one at run time, so the dependency runs one way):

- :mod:`~evalkit.answers.generation.request`: the request record, errors, stop reasons;
- :mod:`~evalkit.answers.generation.cached`: the content-addressed cache, the
  token pre-count with its window check, one cached call;
- :mod:`~evalkit.answers.generation.batches`: many calls (dedupe, threads,
  Message Batches: submit, journal, poll, resume, retry, collect);
- :mod:`~evalkit.answers.generation.tally`: the request/token counter.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evalkit.answers.generation.request import GenerationRequest
from evalkit.records import Answer

if TYPE_CHECKING:
    from evalkit.answers.generation.loglik import AnswerLoglik


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
    concurrency: int = 1
    """Requests the backend takes at once: :func:`~evalkit.answers.generation.batches.generate_many` sends with
    at least this many threads (a remote endpoint's setting; a local model has one slot)."""
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

        Called through :func:`~evalkit.answers.generation.loglik.answer_logliks` (cached; None for a backend
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
        """Answers of an ended batch keyed by custom_id (question ids empty; the caller stamps them).

        An entry that errored, expired or was canceled is an Answer with stop_reason ``error`` and the reason in
        ``Answer.error`` (``errored: <type>: <message>``, ``expired``, ``canceled``).
        """
        raise NotImplementedError(f"{self.backend} has no batch API")
