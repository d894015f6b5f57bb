"""evalkit's own retrievers, registered as a plugin's are: what each needs, its search, its score scale.

The rule: the pipeline never tests a retriever's name. It asks the backend (:func:`backend_of`)
whether it needs vectors (``embeds``) or BM25 tokens (``tokenizes``), which ``retriever.index``
values it takes, whether production answers for it (``external``), and calls its ``search``.
:data:`RETRIEVER_BACKENDS` is the one table of evalkit's own; an installed retriever (entry-point
group ``evalkit.retrievers``) speaks the external contract, so its backend is :data:`EXTERNAL`.

Adding a built-in retriever: its ``search`` and one :class:`RetrieverBackend` line in the table
below, plus its ``conf/retriever/NAME.yaml``. The search implementations import numpy, the pools
and the indexes when first called: a config is read without them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalkit.plugins import Registry

if TYPE_CHECKING:
    from evalkit.retrieval.bm25 import BM25Index
    from evalkit.retrieval.mask import Mask
    from evalkit.retrieval.pools import CandidatePool, DenseIndex, QueryVectors
    from evalkit.retrieval.settings import RetrieverSettings
    from evalkit.retrieval.vectorstore import StoreTable


@dataclass(frozen=True)
class SearchParts:
    """What a search reads, built by the pipeline from what the backend said it needs."""

    n_queries: int
    pool_size: int
    index: DenseIndex | None = None
    queries: QueryVectors | None = None
    bm25: BM25Index | None = None
    allowed: Mask | None = None
    cells: int = 0
    store: StoreTable | None = None


Search = Callable[["RetrieverSettings", SearchParts], "tuple[CandidatePool, dict[str, Any]]"]
"""``search(settings, parts) -> (pool, report)``: one candidate pool per question, pure given ``parts``."""


@dataclass(frozen=True)
class RetrieverBackend:
    """A retriever as the pipeline sees it: its needs and its search (no name is tested anywhere)."""

    embeds: bool
    """Needs passage and query vectors from the embedder."""
    tokenizes: bool
    """Needs BM25 tokens of the units and the questions."""
    search: Search | None
    """None: production retrieves (the external unit of work), evalkit does not search."""
    score_range: Callable[[RetrieverSettings], tuple[float, float] | None]
    """The values its score can take, when it alone sets the score (None: not known here)."""
    indexes: tuple[str, ...] = ("exact",)
    """The ``retriever.index`` values it takes."""
    external: bool = False
    """Production's own retriever: its chunking is its own; the grid is top_k x threshold."""
    score_name: str = ""
    """What the threshold compares when it is not the retriever's own ranking score (words for warnings)."""


def _dense(settings: RetrieverSettings, parts: SearchParts) -> tuple[CandidatePool, dict[str, Any]]:
    from evalkit.retrieval.ann import HnswSettings, hnsw_pool, recall_against_exact
    from evalkit.retrieval.pools import dense_pool
    from evalkit.retrieval.vectorstore import StoreSettings, store_pool

    index, queries, allowed, cells = parts.index, parts.queries, parts.allowed, parts.cells
    assert index is not None and queries is not None
    report: dict[str, Any] = {}
    if settings.index == "hnsw":
        hnsw = HnswSettings(settings.hnsw_connectivity, settings.hnsw_expansion_add, settings.hnsw_expansion_search)
        pool = hnsw_pool(index, queries, parts.pool_size, allowed, hnsw)
        report["ann"] = recall_against_exact(index, queries, pool, allowed, cells)
    elif settings.index == "lancedb":
        assert parts.store is not None, "retriever.index=lancedb searches a table: pass its StoreTable"
        store = StoreSettings(settings.lancedb_index, settings.lancedb_partitions, settings.lancedb_nprobes)
        pool = store_pool(index, queries, parts.pool_size, parts.store, allowed, store)
        if not store.exact:  # flat is exact search (equal pools, tested): nothing lost to report
            report["ann"] = {
                "index": f"lancedb {store.index}",
                **recall_against_exact(index, queries, pool, allowed, cells),
            }
    else:
        pool = dense_pool(index, queries, parts.pool_size, allowed, cells)
    return pool, report


def _bm25(settings: RetrieverSettings, parts: SearchParts) -> tuple[CandidatePool, dict[str, Any]]:
    from evalkit.retrieval.pools import bm25_pool

    bm25 = parts.bm25
    assert bm25 is not None
    return bm25_pool(bm25.score_rows, parts.n_queries, parts.pool_size, parts.allowed, bm25.n_units, parts.cells), {}


def _hybrid(settings: RetrieverSettings, parts: SearchParts) -> tuple[CandidatePool, dict[str, Any]]:
    from evalkit.retrieval.pools import hybrid_pool

    index, queries, bm25 = parts.index, parts.queries, parts.bm25
    assert index is not None and queries is not None and bm25 is not None
    fusion, rrf_k = settings.fusion, settings.rrf_k
    pool = hybrid_pool(index, queries, bm25.score_rows, parts.pool_size, fusion, rrf_k, parts.allowed, parts.cells)  # type: ignore[arg-type]
    return pool, {}


def _unknown_range(settings: RetrieverSettings) -> tuple[float, float] | None:
    return None


DENSE = RetrieverBackend(True, False, _dense, lambda s: (-1.0, 1.0), indexes=("exact", "hnsw", "lancedb"))
"""Cosines of the embedder's vectors, in [-1, 1]; exact, an HNSW graph or a LanceDB table."""
BM25 = RetrieverBackend(False, True, _bm25, lambda s: (0.0, math.inf))
"""BM25 scores are never negative."""
HYBRID = RetrieverBackend(True, True, _hybrid, lambda s: (-1.0, 1.0), score_name="the dense cosine of each fused hit")
"""Ordered by fusion, but a threshold compares the dense cosine of each fused hit, in [-1, 1] (the fused value is
rank-based: its best is the same for every question, so it cannot say "nothing relevant here"); the order the
user sees is the fused one, the score shown beside each hit and compared with the threshold is the cosine."""
EXTERNAL = RetrieverBackend(False, False, None, _unknown_range, external=True)
"""Production's retriever (``retriever.target`` or ``retriever.url``), and every installed retriever plugin."""

RETRIEVER_BACKENDS: Registry[RetrieverBackend] = Registry(
    "retriever", {"dense": DENSE, "bm25": BM25, "hybrid": HYBRID, "external": EXTERNAL}
)
"""The registration table: the one place a built-in retriever's name is written in code."""
BUILTIN_RETRIEVERS: tuple[str, ...] = tuple(RETRIEVER_BACKENDS.builtin_names())


def backend_of(name: str) -> RetrieverBackend:
    """The backend of ``retriever.name``: evalkit's own, else the external contract (an installed plugin)."""
    return RETRIEVER_BACKENDS[name] if RETRIEVER_BACKENDS.builtin(name) else EXTERNAL


def taking_index(index: str) -> tuple[str, ...]:
    """The built-in retrievers that take ``retriever.index=index`` (for the line refusing it)."""
    return tuple(name for name, backend in _builtins().items() if index in backend.indexes)


def _builtins() -> Mapping[str, RetrieverBackend]:
    return {name: RETRIEVER_BACKENDS[name] for name in BUILTIN_RETRIEVERS}
