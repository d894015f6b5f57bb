"""BM25 over chunk texts with ``bm25s`` and evalkit's multilingual tokeniser."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from evalkit.cache import Cache, cache_key, decode_json, encode_json, text_hash
from evalkit.retrieval.tokenize import TOKENIZER_VERSION, tokenize_many


def token_key(text: str) -> str:
    return cache_key("tokens", TOKENIZER_VERSION, text_hash(text))


def cached_tokens(texts: Sequence[str], cache: Cache) -> dict[str, list[str]]:
    """The tokens the cache already holds for ``texts``, by :func:`token_key`."""
    keys = list(dict.fromkeys(token_key(text) for text in texts))
    return cache.get_decoded("tokens", keys, _decode_tokens)


def _decode_tokens(blob: bytes) -> list[str]:
    tokens = decode_json(blob)
    if not isinstance(tokens, list) or not all(isinstance(token, str) for token in tokens):
        raise ValueError("cached tokens are not a list of strings")
    return tokens


def complete_tokens(texts: Sequence[str], known: dict[str, list[str]]) -> tuple[list[list[str]], dict[str, list[str]]]:
    """Every text's tokens from ``known``, segmenting only the others; returns (tokens, the new entries).

    Pure: a cluster worker runs it on what the driver resolved and sends the new entries back.
    """
    keys = [token_key(text) for text in texts]
    missing = {key: text for key, text in zip(keys, texts) if key not in known}
    fresh = dict(zip(missing, tokenize_many(missing.values())))
    return [known[key] if key in known else fresh[key] for key in keys], fresh


def store_tokens(cache: Cache, fresh: dict[str, list[str]]) -> None:
    cache.put_many("tokens", {key: encode_json(tokens) for key, tokens in fresh.items()})


def tokens_of(texts: Sequence[str], cache: Cache | None = None) -> list[list[str]]:
    """BM25 tokens of each text; with a cache, each distinct text is segmented once across chunkings and runs.

    Chinese segmentation is the slow part of indexing, and a warm re-run should not pay it again.
    """
    if cache is None:
        return tokenize_many(texts)
    tokens, fresh = complete_tokens(texts, cached_tokens(texts, cache))
    store_tokens(cache, fresh)
    return tokens


@dataclass(frozen=True)
class BM25Params:
    """Okapi BM25 parameters (Lucene variant)."""

    k1: float = 1.5
    b: float = 0.75


class BM25Index:
    """A BM25 index of unit texts; ``score_rows`` gives full score rows for query blocks."""

    def __init__(
        self,
        texts: Sequence[str],
        params: BM25Params = BM25Params(),
        cache: Cache | None = None,
        tokens: Sequence[list[str]] | None = None,
    ) -> None:
        """``tokens``: the texts' tokens already resolved (a cluster worker gets them from the driver's cache)."""
        import logging

        import bm25s

        # bm25s logs every index build at INFO; a sweep builds one per chunking.
        logging.getLogger("bm25s").setLevel(logging.WARNING)
        self.params = params
        self._retriever = bm25s.BM25(k1=params.k1, b=params.b, method="lucene")
        self._cache = cache
        corpus = list(tokens) if tokens is not None else tokens_of(texts, cache)
        self._vocab: dict[str, int] = {}
        # A corpus without a single term (only punctuation, say) scores 0 everywhere; bm25s cannot index it.
        if any(corpus):
            self._retriever.index(corpus, show_progress=False)
            self._vocab = self._retriever.vocab_dict
        self.n_units = len(texts)
        self._query_ids: list[list[int]] = []

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The built index as plain arrays (the unit store keeps them, so a later run loads it instead of
        tokenising and indexing every unit again): bm25s's score matrix (CSC) and the vocabulary by term id."""
        if not self._vocab:
            return {"n_units": np.array(self.n_units, dtype=np.int64)}
        scores = self._retriever.scores
        terms = sorted(self._vocab, key=self._vocab.__getitem__)
        return {
            "n_units": np.array(self.n_units, dtype=np.int64),
            "data": scores["data"],
            "indices": scores["indices"],
            "indptr": scores["indptr"],
            "terms": np.array(terms, dtype=np.str_),
            "term_ids": np.array([self._vocab[t] for t in terms], dtype=np.int64),
        }

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], params: BM25Params = BM25Params()) -> BM25Index:
        """The index :meth:`to_arrays` gave, scoring exactly as it did (no text, no tokens read)."""
        index = cls([], params, tokens=[])
        index.n_units = int(arrays["n_units"])
        if "data" in arrays:
            index._retriever.scores = {
                "data": arrays["data"],
                "indices": arrays["indices"],
                "indptr": arrays["indptr"],
                "num_docs": index.n_units,
            }
            index._vocab = {str(t): int(i) for t, i in zip(arrays["terms"], arrays["term_ids"])}
            index._retriever.vocab_dict = index._vocab
            index._retriever.nonoccurrence_array = None  # Lucene's BM25 scores absent terms 0 (no array)
        return index

    def set_queries(self, queries: Sequence[str], tokens: Sequence[list[str]] | None = None) -> None:
        """Tokenise the queries once (or take their ``tokens``); ``score_rows`` then scores blocks of them."""
        self._query_ids = [
            [self._vocab[token] for token in query_tokens if token in self._vocab]
            for query_tokens in (tokens if tokens is not None else tokens_of(queries, self._cache))
        ]

    def score_rows(self, rows: slice) -> np.ndarray:
        """BM25 scores of every unit for the queries in ``rows``: shape (n_rows, n_units)."""
        block = self._query_ids[rows]
        out = np.zeros((len(block), self.n_units), dtype=np.float64)
        for i, token_ids in enumerate(block):
            if token_ids:
                out[i] = self._retriever.get_scores_from_ids(token_ids)
        return out
