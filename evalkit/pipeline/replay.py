"""Production's config on unlabelled questions: which of them get no context (the weekly replay's counts).

The replay runs the sweep's own stages on production's grid point (``baseline`` of the
plan) and nothing else: the chunking (:func:`evalkit.pipeline.work.chunk_unit`), the
metadata filters (:func:`evalkit.pipeline.work.retrieval_mask`), one candidate pool
(:func:`evalkit.pipeline.retrieve.retrieve`), its rerank when the config has a reranker,
and the sweep's slice of the pool at (top_k, threshold)
(:func:`evalkit.scoring.ir.returned.returned_mask`). A question is a zero-hit when that
slice is empty, exactly as the sweep's ``zero_hit`` column counts it. Every model call goes
through the sweep's cache, so a replay of questions asked before costs nothing again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from evalkit.cache import Cache
from evalkit.cost.budget import SpendGuard
from evalkit.labels.load import read_documents
from evalkit.labels.read import LabelSet
from evalkit.pipeline.counters import RunStats
from evalkit.pipeline.plan import SweepPlan
from evalkit.pipeline.retrieve import rerank_pool, retrieve
from evalkit.pipeline.score import config_ids
from evalkit.pipeline.units import units_of
from evalkit.pipeline.work import chunk_unit, retrieval_mask
from evalkit.records import ChunkingSpec, Question
from evalkit.retrieval.embedding.registry import make_embedder
from evalkit.retrieval.pools import collapse_to_parents
from evalkit.retrieval.rerank.factory import make_reranker
from evalkit.scoring.ir.returned import returned_mask
from evalkit.settings import ConfigError

__all__ = ["PoolZeroHits", "ProductionPoint", "corpus_of", "production_point", "replay_zero_hits"]


@dataclass(frozen=True)
class ProductionPoint:
    """Production's grid point, resolved from the plan's ``baseline``."""

    spec: ChunkingSpec
    top_k: int
    threshold: float
    config_id: str
    """As the sweep names it, e.g. ``recursive-s512-o64|bm25|none|k5|t0``."""


@dataclass(frozen=True)
class PoolZeroHits:
    """Which questions got no context at one pool size."""

    pool_size: int
    zero_hit: tuple[bool, ...]
    """Per question, in the order asked."""
    best_score: tuple[float, ...]
    """Per question, the best score in the pool (NaN: no candidate at all)."""

    @property
    def zero_hits(self) -> int:
        return sum(self.zero_hit)


def production_point(plan: SweepPlan) -> ProductionPoint:
    """Production's chunking, top_k and threshold; a null threshold is the lowest of the grid, as in the sweep."""
    base = plan.baseline
    for key in ("chunk_size", "chunk_overlap", "top_k"):
        if getattr(base, key) is None:
            raise ConfigError(f"baseline.{key}: not set; the replay runs production's config (baseline.*)")
    assert base.chunk_size is not None and base.chunk_overlap is not None and base.top_k is not None
    if base.threshold is None and plan.thresholds_auto:
        raise ConfigError("baseline.threshold: set production's threshold (threshold=auto has no grid before a sweep)")
    threshold = float(min(plan.thresholds)) if base.threshold is None else float(base.threshold)
    chunker = plan.chunkings[0]
    spec = ChunkingSpec(chunker.chunker, base.chunk_size, base.chunk_overlap, chunker.child_size)
    row = {
        "chunking": [spec.key],
        "retriever": [plan.retriever.name],
        "reranker": [plan.reranker.name],
        "top_k": [base.top_k],
        "threshold": [threshold],
    }
    return ProductionPoint(spec, base.top_k, threshold, str(config_ids(pd.DataFrame(row)).iloc[0]))


def corpus_of(plan: SweepPlan) -> LabelSet:
    """The plan's documents (the labelled set's, without its questions: the replay needs none)."""
    root = Path(plan.labelset_path)
    return LabelSet(name=root.name, root=root, documents=read_documents(root), questions=(), fingerprint="")


def replay_zero_hits(
    plan: SweepPlan, corpus: LabelSet, questions: Sequence[Question], pool_sizes: Sequence[int]
) -> tuple[PoolZeroHits, ...]:
    """Production's zero-hits on ``questions`` at each pool size (the config's own first, then wider ones)."""
    point = production_point(plan)
    chunks, _ = chunk_unit(corpus, point.spec)
    units, child_to_parent = units_of(chunks, corpus)
    allowed = retrieval_mask(plan, questions, chunks, corpus)
    texts = [c.embed_text for c in chunks]
    stats = RunStats(spend=SpendGuard(plan.options.budget_usd))
    embedder = make_embedder(plan.embedder_config, plan.pricing_dir) if plan.uses_embedder else None
    results = []
    with Cache(plan.options.cache_path) as cache:
        reranker = make_reranker(plan.reranker, cache, plan.pricing_dir)
        for size in pool_sizes:
            cells = plan.options.executor.block_cells
            pool, _ = retrieve(plan.retriever, size, texts, questions, embedder, cache, stats, allowed, cells)
            if child_to_parent is not None:
                pool = collapse_to_parents(pool, child_to_parent)
            if reranker is not None:
                pool = rerank_pool(pool, units, questions, reranker, cache, stats)
            returned = returned_mask(pool.scores, point.top_k, point.threshold)
            best = np.fmax.reduce(pool.scores, axis=1) if pool.scores.shape[1] else np.full(len(questions), np.nan)
            zero = tuple(bool(z) for z in returned.sum(axis=1) == 0)
            results.append(PoolZeroHits(size, zero, tuple(float(b) for b in best)))
    return tuple(results)
