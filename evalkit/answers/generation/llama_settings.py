"""What changes a local GGUF answer besides the request: llama.cpp's settings, every one of them keyed.

Kept apart from :mod:`evalkit.answers.generation.local` (the in-process server) so the generator
settings read them without importing the backend that reads the settings back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalkit.settings import parse_settings

DEFAULT_N_THREADS = 1
"""Decoding threads when the config says nothing: fixed (the thread count changes greedy answers), and 1 because
decoding one token is a chain of small matrix-vector calls whose threads meet at a barrier after each: on a
loaded machine a second thread that is not scheduled stalls the first (two threads decoded 5.8-7.9x slower than
one under contention; ``benchmarks/local_generation.py``), while on an idle machine two gain little."""
DEFAULT_N_THREADS_BATCH = 2
"""Prompt-processing threads: prompt batches are large matrix products that two cores do nearly twice as fast."""


@dataclass(frozen=True)
class LocalSettings:
    """Everything besides the request that changes a local answer; all of it goes into the cache key."""

    n_ctx: int = field(default=8192, metadata={"min": 1})
    """llama.cpp context in tokens (prompt + answer); the real window. The models are trained to 32768."""
    n_threads: int = field(default=DEFAULT_N_THREADS, metadata={"min": 1})
    """Threads for generation (one token at a time); changes greedy output, so it is keyed."""
    n_threads_batch: int = field(default=DEFAULT_N_THREADS_BATCH, metadata={"min": 1})
    """Threads for prompt processing (batches of prompt tokens); keyed like ``n_threads``."""
    n_batch: int = field(default=2048, metadata={"min": 1})
    """Logical batch of prompt tokens."""
    n_ubatch: int = field(default=512, metadata={"min": 1})
    """Physical batch of prompt tokens (how the prompt is split across matrix calls)."""
    flash_attn: bool = True
    """llama.cpp's flash attention (what its ``auto`` picks on CPU), set explicitly."""
    seed: int = field(default=0, metadata={"min": 0})
    """Sampler seed."""
    temperature: float = field(default=0.0, metadata={"min": 0.0})
    """0: greedy decoding."""
    top_k: int = field(default=40, metadata={"min": 0})
    top_p: float = field(default=0.95, metadata={"min": 0.0, "max": 1.0})
    min_p: float = field(default=0.05, metadata={"min": 0.0, "max": 1.0})
    repeat_penalty: float = field(default=1.0, metadata={"above": 0.0})
    """1.0: no repetition penalty."""

    def __post_init__(self) -> None:
        if self.n_ctx <= 0:
            raise ValueError(f"generator.n_ctx must be positive (0 would mean the model's full context): {self.n_ctx}")
        if self.n_threads <= 0:
            raise ValueError(f"generator.n_threads must be a positive thread count, got {self.n_threads}")
        if self.n_threads_batch <= 0:
            raise ValueError(f"generator.n_threads_batch must be a positive thread count, got {self.n_threads_batch}")

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], where: str = "generator") -> LocalSettings:
        """The settings a ``conf/generator/local*.yaml`` names (its other keys are ignored here); absent keys
        take the defaults above. Read strictly (:func:`evalkit.settings.parse_settings`): ``n_ctx=1.5`` or
        ``n_threads=null`` is a one-line ConfigError naming the key, never coerced."""
        names = {item.name for item in dataclasses.fields(cls)}
        return parse_settings(cls, {key: value for key, value in cfg.items() if key in names}, where)

    def as_key(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
