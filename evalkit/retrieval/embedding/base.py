"""The embedder contract and the shared work around it.

A backend implements one method, :meth:`Embedder.embed_batch`. Deduplication
by content hash, the cache, batching and normalisation live here, once, so
every backend (local or remote) pays only for texts it has never seen.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from evalkit.cache import Cache, cache_key, decode_vector, encode_vector, text_hash
from evalkit.cost.budget import SpendGuard
from evalkit.run.progress import embedding_bar

if TYPE_CHECKING:
    from evalkit.retrieval.embedding.settings import EmbedderSettings

EmbedKind = Literal["query", "passage"]


class EmbeddingError(RuntimeError):
    """An embedding model is unusable here (missing package, weights, or mismatch)."""


@dataclass
class EmbedCounter:
    """Texts actually sent to a model, per model id (cache hits are not counted)."""

    texts_sent: dict[str, int] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    tokens_billed: dict[str, int] = field(default_factory=dict)
    """Input tokens a paid API's replies reported as billed (local models: none)."""

    def add(self, model_id: str, n_texts: int, tokens_billed: int = 0) -> None:
        self.texts_sent[model_id] = self.texts_sent.get(model_id, 0) + n_texts
        self.calls[model_id] = self.calls.get(model_id, 0) + 1
        if tokens_billed:
            self.tokens_billed[model_id] = self.tokens_billed.get(model_id, 0) + tokens_billed

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
    priced: bool = False
    """A paid API: every request is charged to the budget (``budget_usd``) before it is sent."""
    billed_tokens: int = 0
    """Input tokens a paid API's replies reported as billed, in this process."""
    _on_resend: Callable[[], None] | None = None

    @classmethod
    def from_settings(cls, settings: EmbedderSettings, pricing_dir: Path | None = None) -> Embedder:
        """Its factory (the table's target): a model with no settings of its own is built from none."""
        return cls()

    @abstractmethod
    def embed_batch(self, texts: Sequence[str], kind: EmbedKind) -> np.ndarray:
        """Embed a batch; returns an array of shape (len(texts), dim)."""

    def request_cost_usd(self, texts: Sequence[str]) -> float:
        """Dollars one ``embed_batch`` of ``texts`` will cost (a paid backend overrides it)."""
        return 0.0

    def resent(self) -> None:
        """A paid backend calls this before it resends a request whose reply was lost (it may have been billed)."""
        if self._on_resend is not None:
            self._on_resend()

    @property
    def identity(self) -> str:
        return f"{self.model_id}@{self.version}"

    def key(self, text: str, kind: EmbedKind) -> str:
        """Cache key: model identity, the text's hash, and the kind where it matters."""
        return cache_key("embed", self.identity, kind if self.asymmetric else "any", text_hash(text))


@dataclass(frozen=True)
class EmbedWork:
    """What embedding ``texts`` needs after the cache: the vectors found and the batches still to compute.

    The batches are the distinct missing texts in first-seen order, cut at the
    embedder's batch size; computing them here or on a cluster worker gives the same
    vectors because the batches are the same.
    """

    keys: tuple[str, ...]
    found: dict[str, np.ndarray]
    batches: tuple[tuple[tuple[str, str], ...], ...]
    """Each batch: (cache key, text) pairs."""


def _decode_checked(blob: bytes, dim: int) -> np.ndarray:
    vector = decode_vector(blob)
    if dim and vector.shape != (dim,):
        raise ValueError(f"a cached vector has {vector.size} components, the model {dim}")
    return vector


def plan_embedding(embedder: Embedder, texts: Sequence[str], kind: EmbedKind, cache: Cache) -> EmbedWork:
    keys = [embedder.key(text, kind) for text in texts]
    found = cache.get_decoded(embed_namespace(embedder), keys, lambda blob: _decode_checked(blob, embedder.dim))
    missing = list({key: text for key, text in zip(keys, texts) if key not in found}.items())
    size = embedder.batch_size
    batches = tuple(tuple(missing[offset : offset + size]) for offset in range(0, len(missing), size))
    return EmbedWork(tuple(keys), found, batches)


def compute_batch(
    embedder: Embedder, texts: Sequence[str], kind: EmbedKind, guard: SpendGuard | None = None
) -> np.ndarray:
    """Unit-norm float32 vectors of one batch, shape-checked (no cache).

    ``guard``: a paid backend's request is charged before it is sent, and each resend after a
    lost reply too, so the recorded spend is never below what the provider could bill.
    """
    if guard is not None and embedder.priced:
        cost, item = embedder.request_cost_usd(texts), f"embed:{embedder.identity}"
        guard.charge(cost, item)
        embedder._on_resend = lambda: guard.charge(cost, f"{item}:resend")
    try:
        computed = np.asarray(embedder.embed_batch(list(texts), kind), dtype=np.float32)
    finally:
        embedder._on_resend = None
    if computed.shape != (len(texts), embedder.dim):
        raise EmbeddingError(
            f"{embedder.identity} returned shape {computed.shape}, expected ({len(texts)}, {embedder.dim})"
        )
    return _unit_norm(computed)


def store_batch(
    cache: Cache, embedder: Embedder, work: EmbedWork, batch: Sequence[tuple[str, str]], vectors: np.ndarray
) -> None:
    """Write a computed batch into the cache and into ``work.found``."""
    fresh = {key: vector for (key, _), vector in zip(batch, vectors)}
    cache.put_many(embed_namespace(embedder), {key: encode_vector(vector) for key, vector in fresh.items()})
    work.found.update(fresh)


def stack_vectors(embedder: Embedder, work: EmbedWork) -> np.ndarray:
    if not work.keys:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    return np.stack([work.found[key] for key in work.keys]).astype(np.float32, copy=False)


def embed_namespace(embedder: Embedder) -> str:
    return f"embed:{embedder.identity}"


def embed_texts(
    embedder: Embedder,
    texts: Sequence[str],
    kind: EmbedKind,
    cache: Cache,
    counter: EmbedCounter | None = None,
    progress: bool = False,
    guard: SpendGuard | None = None,
) -> np.ndarray:
    """Unit-norm float32 embeddings for ``texts``, computing only uncached distinct texts.

    ``progress``: a bar over the texts to compute (texts per second, on a terminal only);
    it counts the same batches in the same order, so it changes no vector. ``guard``: the
    budget a paid backend's requests are charged to (:func:`compute_batch`).
    """
    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    work = plan_embedding(embedder, texts, kind, cache)
    with embedding_bar(pending_texts(work), kind, progress) as bar:
        for batch in work.batches:
            billed_before = embedder.billed_tokens
            vectors = compute_batch(embedder, [text for _, text in batch], kind, guard)
            if counter is not None:
                counter.add(embedder.identity, len(batch), embedder.billed_tokens - billed_before)
            store_batch(cache, embedder, work, batch, vectors)
            bar.update(len(batch))
    return stack_vectors(embedder, work)


def pending_texts(work: EmbedWork) -> int:
    """Distinct texts still to embed (what a progress bar counts)."""
    return sum(len(batch) for batch in work.batches)


def _unit_norm(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0)
