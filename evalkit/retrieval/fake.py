"""Deterministic fakes of the embedder and the reranker, for wiring tests that must run without model files.

They compute something real and checkable (hashed character n-grams; token overlap), so a test
that wires them sees rankings that depend on the text, but they are not models: never a default,
and their identities say ``fake`` so their vectors and scores never mix with a real model's in the cache.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Sequence

import numpy as np

from evalkit.retrieval.embedding.base import Embedder, EmbedKind
from evalkit.retrieval.rerank.base import RerankCounter, Reranker

_WORDS = re.compile(r"\w+", re.UNICODE)


def _grams(text: str, n: int = 3) -> list[str]:
    """Character n-grams of each word (and each CJK character on its own): works for English and Chinese."""
    grams = []
    for word in _WORDS.findall(text.lower()):
        padded = f"#{word}#"
        grams.extend(padded[i : i + n] for i in range(max(1, len(padded) - n + 1)))
        grams.extend(ch for ch in word if "\u4e00" <= ch <= "\u9fff")
    return grams


SLOW_ENV = "EVALKIT_FAKE_EMBED_DELAY_S"
"""Environment variable: seconds the fake embedder sleeps per batch (tests of a slow stage)."""


class HashingEmbedder(Embedder):
    """Feature-hashed character trigrams, unit-normalised: similar spellings get similar vectors."""

    model_id = "fake-hashing-embedder"
    version = "1"
    dim = 256
    batch_size = 256

    def __init__(self) -> None:
        self.delay_s = float(os.environ.get(SLOW_ENV, "0"))
        """Seconds each batch sleeps: a slow model for tests of progress reporting (never changes a vector)."""

    def embed_batch(self, texts: Sequence[str], kind: EmbedKind) -> np.ndarray:
        if self.delay_s > 0:
            time.sleep(self.delay_s)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for gram in _grams(text):
                digest = hashlib.blake2b(gram.encode("utf-8"), digest_size=4).digest()
                out[row, int.from_bytes(digest, "little") % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)


class OverlapReranker(Reranker):
    """Share of the query's distinct words found in the document (0..1)."""

    model_id = "fake-overlap-reranker"
    version = "1"

    def score_pairs(self, query: str, documents: Sequence[str], counter: RerankCounter | None = None) -> np.ndarray:
        wanted = set(_grams(query))
        if counter is not None:
            counter.add(self.model_id, len(documents))
        if not wanted:
            return np.zeros(len(documents))
        return np.array([len(wanted & set(_grams(doc))) / len(wanted) for doc in documents], dtype=np.float64)
