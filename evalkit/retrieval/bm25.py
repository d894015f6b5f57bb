"""BM25 over chunk texts with ``bm25s`` and evalkit's multilingual tokeniser."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evalkit.cache import Cache, cache_key, decode_json, encode_json, text_hash
from evalkit.retrieval.tokenize import TOKENIZER_VERSION, tokenize_many


def tokens_of(texts: Sequence[str], cache: Cache | None = None) -> list[list[str]]:
    """BM25 tokens of each text; with a cache, each distinct text is segmented once across chunkings and runs.

    Chinese segmentation is the slow part of indexing, and a warm re-run should not pay it again.
    """
    if cache is None:
        return tokenize_many(texts)
    keys = [cache_key("tokens", TOKENIZER_VERSION, text_hash(text)) for text in texts]
    found = {key: decode_json(blob) for key, blob in cache.get_many("tokens", keys).items()}
    missing = {key: text for key, text in zip(keys, texts) if key not in found}
    fresh = dict(zip(missing, tokenize_many(missing.values())))
    cache.put_many("tokens", {key: encode_json(tokens) for key, tokens in fresh.items()})
    found.update(fresh)
    return [found[key] for key in keys]


@dataclass(frozen=True)
class BM25Params:
    """Okapi BM25 parameters (Lucene variant)."""

    k1: float = 1.5
    b: float = 0.75


class BM25Index:
    """A BM25 index of unit texts; ``score_rows`` gives full score rows for query blocks."""

    def __init__(self, texts: Sequence[str], params: BM25Params = BM25Params(), cache: Cache | None = None) -> None:
        import logging

        import bm25s

        # bm25s logs every index build at INFO; a sweep builds one per chunking.
        logging.getLogger("bm25s").setLevel(logging.WARNING)
        self.params = params
        self._retriever = bm25s.BM25(k1=params.k1, b=params.b, method="lucene")
        self._cache = cache
        self._retriever.index(tokens_of(texts, cache), show_progress=False)
        self._vocab: dict[str, int] = self._retriever.vocab_dict
        self.n_units = len(texts)
        self._query_ids: list[list[int]] = []

    def set_queries(self, queries: Sequence[str]) -> None:
        """Tokenise the queries once; ``score_rows`` then scores blocks of them."""
        self._query_ids = [
            [self._vocab[token] for token in tokens if token in self._vocab]
            for tokens in tokens_of(queries, self._cache)
        ]

    def score_rows(self, rows: slice) -> np.ndarray:
        """BM25 scores of every unit for the queries in ``rows``: shape (n_rows, n_units)."""
        block = self._query_ids[rows]
        out = np.zeros((len(block), self.n_units), dtype=np.float64)
        for i, token_ids in enumerate(block):
            if token_ids:
                out[i] = self._retriever.get_scores_from_ids(token_ids)
        return out
