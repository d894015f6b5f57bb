"""What generation cost, counted as it happens: requests and reported tokens per model and billing mode.

A :class:`ModelTally` is a running sum over many calls (mutable, guarded by the
counter's lock), not a per-call record: one call's tokens are the Answer's
:class:`evalkit.records.Usage`, which :meth:`ModelTally.add` folds in.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from evalkit.records import Answer, Usage


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
    failures: dict[str, int] = field(default_factory=dict)
    """The same errors by kind: ``errored``, ``expired``, ``canceled`` (batch entries), ``missing`` or ``error``."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def record(self, answer: Answer, *, batch: bool = False) -> None:
        """Count one fresh answer (not a cache hit)."""
        with self._lock:
            if answer.stop_reason == "overflow":
                _bump(self.overflows, answer.model)
            elif answer.stop_reason == "error":
                _bump(self.errors, answer.model)
                _bump(self.failures, answer.error.split(":", 1)[0] or "error")
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
