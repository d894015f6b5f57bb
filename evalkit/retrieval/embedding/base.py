"""The embedder contract and the shared work around it.

A backend implements one method, :meth:`Embedder.embed_batch`. Deduplication
by content hash, the cache, batching and normalisation live here, once, so
every backend (local or remote) pays only for texts it has never seen.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from evalkit.cache import Cache, cache_key, decode_vector, encode_vector, text_hash

EmbedKind = Literal["query", "passage"]


class EmbeddingError(RuntimeError):
    """An embedding model is unusable here (missing package, weights, or mismatch)."""


@dataclass
class EmbedCounter:
    """Texts actually sent to a model, per model id (cache hits are not counted)."""

    texts_sent: dict[str, int] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)

    def add(self, model_id: str, n_texts: int) -> None:
        self.texts_sent[model_id] = self.texts_sent.get(model_id, 0) + n_texts
        self.calls[model_id] = self.calls.get(model_id, 0) + 1

    @property
    def total_texts(self) -> int:
        return sum(self.texts_sent.values())


class Embedder(ABC):
    """A text embedding model. Subclasses set the identity and implement ``embed_batch``."""

    model_id: str = ""
    """Identifier recorded in every index and cache key."""
    version: str = ""
    """Package or weights version: a new version never reuses old vectors."""
    dim: int = 0
    """Output dimension."""
    asymmetric: bool = False
    """True when queries and passages are embedded differently (e5's prefixes)."""
    batch_size: int = 64
    """Texts per ``embed_batch`` call."""

    @abstractmethod
    def embed_batch(self, texts: Sequence[str], kind: EmbedKind) -> np.ndarray:
        """Embed a batch; returns an array of shape (len(texts), dim)."""

    @property
    def identity(self) -> str:
        return f"{self.model_id}@{self.version}"

    def key(self, text: str, kind: EmbedKind) -> str:
        """Cache key: model identity, the text's hash, and the kind where it matters."""
        return cache_key("embed", self.identity, kind if self.asymmetric else "any", text_hash(text))


def embed_texts(
    embedder: Embedder,
    texts: Sequence[str],
    kind: EmbedKind,
    cache: Cache,
    counter: EmbedCounter | None = None,
) -> np.ndarray:
    """Unit-norm float32 embeddings for ``texts``, computing only uncached distinct texts."""
    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    keys = [embedder.key(text, kind) for text in texts]
    namespace = f"embed:{embedder.identity}"
    stored = cache.get_many(namespace, keys)
    vectors = {key: decode_vector(blob) for key, blob in stored.items()}
    missing = list({key: text for key, text in zip(keys, texts) if key not in vectors}.items())
    for offset in range(0, len(missing), embedder.batch_size):
        batch = missing[offset : offset + embedder.batch_size]
        computed = np.asarray(embedder.embed_batch([text for _, text in batch], kind), dtype=np.float32)
        if computed.shape != (len(batch), embedder.dim):
            raise EmbeddingError(
                f"{embedder.identity} returned shape {computed.shape}, expected ({len(batch)}, {embedder.dim})"
            )
        computed = _unit_norm(computed)
        if counter is not None:
            counter.add(embedder.identity, len(batch))
        fresh = {key: vector for (key, _), vector in zip(batch, computed)}
        cache.put_many(namespace, {key: encode_vector(vector) for key, vector in fresh.items()})
        vectors.update(fresh)
    return np.stack([vectors[key] for key in keys]).astype(np.float32, copy=False)


def _unit_norm(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0)
