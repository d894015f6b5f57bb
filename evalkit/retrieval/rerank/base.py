"""The reranker contract and the shared work around it.

A backend implements one method, :meth:`Reranker.score_pairs`. Caching by
(model, query, document text), deduplication and request splitting live here,
so a re-run or a second threshold never pays for a pair twice.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from evalkit.cache import Cache, cache_key, decode_json, encode_json, text_hash
from evalkit.cost.budget import SpendGuard

if TYPE_CHECKING:
    from evalkit.retrieval.settings import RerankerSettings


class RerankError(RuntimeError):
    """A reranker failed: a retry will not fix it (bad request, missing key or package) or retries ran out.

    The message is one line; the sweep prints it with a resume hint.
    """


@dataclass
class RerankCounter:
    """Pairs actually scored and requests sent, per model (cache hits are not counted)."""

    pairs_scored: dict[str, int] = field(default_factory=dict)
    requests: dict[str, int] = field(default_factory=dict)
    search_units: dict[str, int] = field(default_factory=dict)
    """Billed units where the backend reports them (Cohere: one search = a query with up to 100 documents)."""

    def add(self, model: str, pairs: int, requests: int = 1, search_units: int = 0) -> None:
        self.pairs_scored[model] = self.pairs_scored.get(model, 0) + pairs
        self.requests[model] = self.requests.get(model, 0) + requests
        self.search_units[model] = self.search_units.get(model, 0) + search_units


class Reranker(ABC):
    """Scores (query, document) pairs; higher is more relevant. Scales differ per model."""

    model_id: str = ""
    version: str = ""
    max_documents_per_request: int = 1000
    bills_unanswered_requests: bool = False
    """A paid backend whose failed attempts may be billed (reply lost, unreadable): it takes an ``on_resend`` hook."""

    @classmethod
    def from_settings(cls, settings: RerankerSettings, cache: Cache, pricing_dir: Path) -> Reranker:
        """Its factory (the table's target): a model with no settings of its own is built from none."""
        return cls()

    @abstractmethod
    def score_pairs(self, query: str, documents: Sequence[str], counter: RerankCounter | None = None) -> np.ndarray:
        """One score per document, in the given order (len(documents) <= max_documents_per_request)."""

    @property
    def identity(self) -> str:
        return f"{self.model_id}@{self.version}"

    def key(self, query: str, document: str) -> str:
        return cache_key("rerank", self.identity, text_hash(query), text_hash(document))

    def request_cost_usd(self, n_documents: int) -> float:
        """Dollars one request with ``n_documents`` costs (0 for local models; paid backends override)."""
        return 0.0


def rerank_namespace(reranker: Reranker) -> str:
    """Where a reranker's scores live in the cache."""
    return f"rerank:{reranker.identity}"


def cached_scores(
    reranker: Reranker, pairs: Sequence[tuple[str, Sequence[str]]], cache: Cache
) -> list[np.ndarray | None]:
    """Scores of many queries' documents from one cache lookup; None where any pair is missing.

    A warm sweep asks for every (question, pool member) pair of a chunking: one bulk lookup
    instead of one per question keeps a re-run cheap.
    """
    keys = [[reranker.key(query, doc) for doc in documents] for query, documents in pairs]
    found = cache.get_decoded(rerank_namespace(reranker), [key for row in keys for key in row], decode_score)
    return [
        np.array([found[key] for key in row], dtype=np.float64) if all(key in found for key in row) else None
        for row in keys
    ]


def decode_score(blob: bytes) -> float:
    """A cached rerank score (a JSON number); anything else does not decode."""
    value = decode_json(blob)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("a cached rerank score is not a number")
    return float(value)


def rerank_scores(
    reranker: Reranker,
    query: str,
    documents: Sequence[str],
    cache: Cache,
    counter: RerankCounter | None = None,
    guard: SpendGuard | None = None,
) -> np.ndarray:
    """Scores for every document, computing only uncached distinct (query, document) pairs.

    With a ``guard``, each request is priced and checked against the budget before it is sent.
    """
    if not documents:
        return np.zeros(0, dtype=np.float64)
    keys = [reranker.key(query, doc) for doc in documents]
    namespace = rerank_namespace(reranker)
    scores = cache.get_decoded(namespace, keys, decode_score)
    missing = list({key: doc for key, doc in zip(keys, documents) if key not in scores}.items())
    step = reranker.max_documents_per_request
    for offset in range(0, len(missing), step):
        batch = missing[offset : offset + step]
        if guard is not None:
            guard.charge(reranker.request_cost_usd(len(batch)), f"rerank:{reranker.identity}")
        texts = [doc for _, doc in batch]
        if guard is not None and reranker.bills_unanswered_requests:
            # A request whose reply was lost or unreadable may still be billed: each resend is charged too.
            cost = reranker.request_cost_usd(len(batch))
            resend = lambda c=cost: guard.charge(c, f"rerank:{reranker.identity}:resend")  # noqa: E731
            computed = np.asarray(reranker.score_pairs(query, texts, counter, on_resend=resend), dtype=np.float64)
        else:
            computed = np.asarray(reranker.score_pairs(query, texts, counter), dtype=np.float64)
        if computed.shape != (len(batch),):
            raise RerankError(f"{reranker.identity} returned {computed.shape} scores for {len(batch)} documents")
        if not np.isfinite(computed).all():
            # A NaN would sort anywhere and pass no threshold test: an error, never a silent score.
            bad = int((~np.isfinite(computed)).sum())
            raise RerankError(f"{reranker.identity} returned {bad} non-finite scores for {len(batch)} documents")
        fresh = {key: float(score) for (key, _), score in zip(batch, computed)}
        cache.put_many(namespace, {key: encode_json(score) for key, score in fresh.items()})
        scores.update(fresh)
    return np.array([scores[key] for key in keys], dtype=np.float64)
