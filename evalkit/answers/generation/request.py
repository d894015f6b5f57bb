"""A generation request: everything that determines an answer, the errors generation raises, and stop reasons.

A request is a frozen record; its :meth:`GenerationRequest.content_key` is
exactly what goes into a response's cache key (with the backend's identity and
parameters, see :mod:`evalkit.answers.generation.cached`): model, system
prompt, messages, max_tokens, stop sequences and the prompt-caching flag.
Never timeouts, retries, custom ids, question ids or other metadata.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["user", "assistant"]
Content = tuple[str, ...]
"""A message's text blocks, in order; see :attr:`GenerationRequest.cache_prefix` for what the first block means."""

TRUNCATING_STOPS = frozenset({"max_tokens", "model_context_window_exceeded", "length"})
"""Stop reasons that cut an answer short (``length`` is llama.cpp's name for ``max_tokens``)."""

UNCACHED_STOPS = frozenset({"overflow", "error"})
"""Outcomes never stored: nothing useful was paid for, and a re-run (bigger window, healthy batch) may succeed."""


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
