"""One chunking's unit of work: chunk -> retrieve -> rerank -> score, each stage with its own id.

A stage's id hashes its own settings, the id of the stage it reads and the
stage's code version (:data:`STAGE_VERSIONS`), plus the labelled-set content it
depends on. :func:`run_unit` walks the stages and reuses any whose id is in the
unit store, so:

- growing the grid by a chunking runs the four stages of that chunking only;
- adding a top_k or a threshold re-runs only ``score`` (no embedding, retrieval or rerank);
- changing the reranker re-runs ``rerank`` and ``score``, never ``chunk`` or ``retrieve``;
- a changed document changes the ``chunk`` id of every chunking (each reads every
  document), and the embedding cache re-embeds only the chunks whose text changed.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evalkit.cache import Cache
from evalkit.chunking.chunkers import chunk_corpus
from evalkit.chunking.health import chunk_health
from evalkit.labels.read import LabelSet, document_fingerprints
from evalkit.pipeline.counters import RunStats
from evalkit.pipeline.external import external_unit
from evalkit.pipeline.index_store import load_bm25, save_bm25
from evalkit.pipeline.plan import SweepPlan
from evalkit.pipeline.retrieve import bm25_params, rerank_pool, retrieve_with_index, store_table
from evalkit.pipeline.score import gold_cut_share, judge, pool_table, score_chunking, unit_index
from evalkit.pipeline.search_timing import sample_queries, sample_rows, searches_here, time_chunking
from evalkit.pipeline.units import Units, chunk_table, chunks_from_table, units_of
from evalkit.records import EXTERNAL_CHUNKING, Chunk, ChunkingSpec, Question
from evalkit.retrieval.bm25 import BM25Index
from evalkit.retrieval.embedding.base import Embedder
from evalkit.retrieval.filters import access
from evalkit.retrieval.mask import UnitMask
from evalkit.retrieval.pools import CandidatePool, collapse_to_parents, keep_allowed
from evalkit.retrieval.rerank.base import Reranker
from evalkit.retrieval.tokenize import TOKENIZER_VERSION
from evalkit.run.units import UnitStore
from evalkit.scoring.calibration import calibrate_by_class
from evalkit.scoring.thresholds import floor_significant

STAGE_VERSIONS = {"chunk": 1, "index": 1, "retrieve": 1, "rerank": 1, "score": 3}
"""Bump a stage's version when its code changes what it computes: its finished units are then redone."""


def content_id(stage: str, *parts: Any) -> str:
    payload = json.dumps([stage, STAGE_VERSIONS[stage], *parts], sort_keys=True, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:20]


@dataclass(frozen=True)
class UnitIds:
    """Content ids of a unit's stages; ``rerank`` equals ``retrieve`` when there is no reranker."""

    chunk: str
    retrieve: str
    rerank: str
    score: str
    index: str
    """The chunking's BM25 index: the chunk id with the BM25 parameters and the tokeniser (not the questions)."""


@dataclass(frozen=True)
class UnitOfWork:
    spec: ChunkingSpec
    ids: UnitIds


@dataclass(frozen=True)
class UnitResult:
    """What a finished unit gives the sweep: the pool for drill-down and its info record.

    Its per-question rows are in the unit store only (``score/<id>.rows.parquet``): they are questions x
    grid points, so the sweep reads them back in blocks (:mod:`evalkit.pipeline.results`), never whole.
    """

    key: str
    pool: pd.DataFrame | None
    """None once the pool is on disk only (the sweep keeps rows and info for the summary)."""
    info: dict[str, Any]


@dataclass(frozen=True)
class WorkContext:
    """Everything a unit reads besides its own spec; built once per sweep by the driver."""

    plan: SweepPlan
    labelset: LabelSet
    questions: tuple[Question, ...]
    embedder: Embedder | None
    reranker: Reranker | None
    cache: Cache
    store: UnitStore
    stats: RunStats
    token_family: str
    progress: bool = False
    latency: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per chunking, its per-query search (and rerank) times, taken on the index its pool was searched with
    (:mod:`evalkit.pipeline.search_timing`); the latency pass builds an index only for the chunkings missing."""


def questions_fingerprint(questions: Sequence[Question]) -> str:
    payload = json.dumps([asdict(q) for q in questions], sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


ROWS_VERSION = 2
"""Bump when the scored rows gain columns or grid points (2: lists_key, off_grid and the advised threshold)."""


def plan_units(
    plan: SweepPlan, labelset: LabelSet, questions: Sequence[Question], embedder_identity: str | None, family: str
) -> tuple[UnitOfWork, ...]:
    """One unit per chunking of the plan, with the content id of each of its stages."""
    documents = sorted(document_fingerprints(labelset).items())
    asked = questions_fingerprint(questions)
    units = []
    for spec in plan.chunkings:
        chunk = content_id("chunk", asdict(spec), documents)
        if spec.chunker == EXTERNAL_CHUNKING:  # production chunked and searched: its answers are the chunking
            chunk = content_id("chunk", asdict(spec), documents, plan.retriever.identity(), asked, plan.pool_size)
        retrieval = {
            "retriever": plan.retriever.identity(),
            "embedder": embedder_identity if plan.uses_embedder else None,
            "pool_size": plan.pool_size,
            "filters": asdict(plan.filters),
        }
        retrieved = content_id("retrieve", chunk, retrieval, asked)
        reranked = content_id("rerank", retrieved, plan.reranker.identity()) if plan.reranker.enabled else retrieved
        scoring = {
            "top_ks": plan.top_ks,
            "thresholds": plan.thresholds,
            "tau": plan.relevance_tau,
            "calibration_tag": plan.calibration_tag,
            "zero_hit_target": plan.objective.zero_hit_answerable_max,
            "token_family": family,
            "names": [plan.retriever.name, plan.reranker.name],
            "rows": ROWS_VERSION,
        }
        scored = content_id("score", reranked, scoring)
        indexed = content_id("index", chunk, asdict(bm25_params(plan.retriever)), TOKENIZER_VERSION)
        units.append(UnitOfWork(spec, UnitIds(chunk, retrieved, reranked, scored, indexed)))
    return tuple(units)


def run_unit(
    unit: UnitOfWork, ctx: WorkContext, chunks: Sequence[Chunk] | None = None, bm25: BM25Index | None = None
) -> UnitResult:
    """Walk the unit's stages, reusing each one the store already holds.

    ``chunks`` and ``bm25``: the unit's chunks and BM25 index, already built and stored elsewhere
    (:mod:`evalkit.pipeline.chunk_ahead`).
    """
    if ctx.store.has("score", unit.ids.score):
        return stored_result(unit, ctx)
    chunks = chunk_stage(unit, ctx) if chunks is None else chunks
    units, child_to_parent = units_of(chunks, ctx.labelset)
    pool = pool_stage(unit, ctx, chunks, units, child_to_parent, bm25)
    return score_stage(unit, ctx, chunks, units, pool)


def chunk_stage(unit: UnitOfWork, ctx: WorkContext) -> tuple[Chunk, ...]:
    store, stage_id = ctx.store, unit.ids.chunk
    if store.has("chunk", stage_id):
        ctx.stats.stages_reused["chunk"] += 1
        return chunks_from_table(store.table("chunk", stage_id, "chunks"), ctx.labelset)
    started = time.perf_counter()
    if unit.spec.chunker == EXTERNAL_CHUNKING:
        chunks, pool, report = external_unit(ctx)
        # No chunk health: production's chunking is not judged from the spans it happened to return.
        record = {"chunking": unit.spec.key, "n_chunks": len(chunks), "chunk_health": [], **report}
        save_chunks(ctx, unit, chunks, record, time.perf_counter() - started)
        if not store.has("retrieve", unit.ids.retrieve):
            save_pool(ctx, "retrieve", unit.ids.retrieve, _allowed_only(ctx, chunks, pool), report)
        return chunks
    chunks, record = chunk_unit(ctx.labelset, unit.spec)
    save_chunks(ctx, unit, chunks, record, time.perf_counter() - started)
    return chunks


def chunk_unit(labelset: LabelSet, spec: ChunkingSpec) -> tuple[tuple[Chunk, ...], dict[str, Any]]:
    """The chunks of every document and the chunk-health record (pure: runs on any worker)."""
    chunks = tuple(chunk_corpus(labelset.documents, spec))
    health = chunk_health(labelset.documents, chunks).findings(spec.key)
    return chunks, {"chunking": spec.key, "n_chunks": len(chunks), "chunk_health": health}


def save_chunks(
    ctx: WorkContext, unit: UnitOfWork, chunks: Sequence[Chunk], record: dict[str, Any], seconds: float
) -> None:
    ctx.store.save("chunk", unit.ids.chunk, record, tables={"chunks": chunk_table(chunks)})
    ctx.stats.add_time("chunk", seconds)
    ctx.stats.stages_run["chunk"] += 1


def pool_stage(
    unit: UnitOfWork,
    ctx: WorkContext,
    chunks: Sequence[Chunk],
    units: Units,
    child_to_parent: np.ndarray | None,
    built: BM25Index | None = None,
) -> CandidatePool:
    """The retrieved pool (in returned units), reranked when there is a reranker (``built``: its BM25 index)."""
    pool = load_pool(ctx, "retrieve", unit.ids.retrieve)
    if pool is None and unit.spec.chunker == EXTERNAL_CHUNKING:  # its chunks were stored, its pool was not
        _, fetched, report = external_unit(ctx)  # every reply is cached: no call is sent again
        pool = _allowed_only(ctx, chunks, fetched)
        save_pool(ctx, "retrieve", unit.ids.retrieve, pool, report)
    if pool is None:
        plan, questions = ctx.plan, ctx.questions
        allowed = retrieval_mask(plan, questions, chunks, ctx.labelset)
        texts = [c.embed_text for c in chunks]
        cells, shown = plan.options.executor.block_cells, ctx.progress
        store = store_table(plan, unit.spec.key, ctx.embedder.identity if ctx.embedder is not None else None)
        tokenizes = plan.retriever.backend.tokenizes
        bm25 = built
        if bm25 is None and tokenizes:
            bm25 = load_bm25(ctx.store, ctx.stats, unit.ids.index, bm25_params(plan.retriever))
        pool, report, parts = retrieve_with_index(
            plan.retriever,
            plan.pool_size,
            texts,
            questions,
            ctx.embedder,
            ctx.cache,
            ctx.stats,
            allowed,
            cells,
            shown,
            store,
            bm25,
        )
        if bm25 is None and parts.bm25 is not None:  # built here: later runs and the latency pass load it
            save_bm25(ctx.store, ctx.stats, unit.ids.index, unit.spec.key, parts.bm25)
        if child_to_parent is not None:
            pool = collapse_to_parents(pool, child_to_parent)
        save_pool(ctx, "retrieve", unit.ids.retrieve, pool, report)
        if searches_here(ctx):  # the latency pass reads these times instead of building the index again
            started = time.perf_counter()
            rows = sample_rows(len(questions), plan.seed)
            vectors = None if parts.queries is None else parts.queries.vectors[rows]
            sampled = sample_queries(ctx, [questions[r] for r in rows], vectors)
            ctx.latency[unit.spec.key] = time_chunking(ctx, parts, sampled, units.texts, child_to_parent)
            ctx.stats.add_time("latency", time.perf_counter() - started)
    if ctx.reranker is None:
        return pool
    reranked = load_pool(ctx, "rerank", unit.ids.rerank)
    if reranked is None:
        reranked = rerank_pool(pool, units, ctx.questions, ctx.reranker, ctx.cache, ctx.stats, ctx.progress)
        save_pool(ctx, "rerank", unit.ids.rerank, reranked)
    return reranked


def _allowed_only(ctx: WorkContext, chunks: Sequence[Chunk], pool: CandidatePool) -> CandidatePool:
    """Production's hits a question's metadata filters would not let it see are dropped, as for any retriever."""
    allowed = retrieval_mask(ctx.plan, ctx.questions, chunks, ctx.labelset)
    return pool if allowed is None else keep_allowed(pool, allowed)


def retrieval_mask(
    plan: SweepPlan, questions: Sequence[Question], chunks: Sequence[Chunk], labelset: LabelSet
) -> UnitMask | None:
    """Per question, the chunks metadata filters let it retrieve (None: no filters)."""
    if not plan.filters.enabled:
        return None
    # Retrieval ranks chunks; they are the returned units unless parent-child maps them to parents.
    chunk_doc_ids = np.array([c.doc_id for c in chunks], dtype=object)
    return access(questions, chunk_doc_ids, labelset.documents, plan.filters).allowed


def score_stage(
    unit: UnitOfWork, ctx: WorkContext, chunks: Sequence[Chunk], units: Units, pool: CandidatePool
) -> UnitResult:
    started = time.perf_counter()
    plan, labelset, questions = ctx.plan, ctx.labelset, ctx.questions
    rows, drill, info = score_unit(plan, labelset, questions, ctx.token_family, unit.spec, chunks, units, pool)
    return save_score(ctx, unit, rows, drill, info, time.perf_counter() - started)


def score_unit(
    plan: SweepPlan,
    labelset: LabelSet,
    questions: Sequence[Question],
    token_family: str,
    spec: ChunkingSpec,
    chunks: Sequence[Chunk],
    units: Units,
    pool: CandidatePool,
) -> tuple[Iterator[pd.DataFrame], pd.DataFrame, dict[str, Any]]:
    """Per-question rows (one block per grid point, computed as they are read), the drill-down pool and the
    unit's info record (pure: runs on any worker)."""
    unit_access = access(questions, units.doc_ids, labelset.documents, plan.filters)
    index = unit_index(units)
    judgement = judge(questions, pool, units, plan.relevance_tau, index)
    classes = [str(q.tags.get(plan.calibration_tag, "untagged")) for q in questions]
    answerable = np.array([q.evidence_mode != "none" for q in questions])
    target = plan.objective.zero_hit_answerable_max
    calibrations = calibrate_by_class(
        spec.key, pool.source, classes, pool.scores, judgement.relevant, answerable, zero_hit_target=target
    )
    # The threshold the calibration advises (the value the report shows) is scored too: advice is gated first.
    advised = [
        floor_significant(c.advised_threshold)
        for c in calibrations
        if c.question_class == "all" and c.advice == "threshold" and np.isfinite(c.advised_threshold)
    ]
    rows = score_chunking(plan, spec, questions, pool, units, judgement, token_family, unit_access, advised)
    info = {
        "chunking": spec.key,
        "n_chunks": len(chunks),
        "n_units": len(units.ids),
        "stored_chars": units.stored_chars,
        "indexed_chars": int(sum(len(c.embed_text) for c in chunks)),
        "gold_cut_share": gold_cut_share(questions, units, index),
        "calibration": [c.to_dict() for c in calibrations],
    }
    return rows, pool_table(questions, pool, units, judgement.relevant), info


def save_score(
    ctx: WorkContext,
    unit: UnitOfWork,
    rows: Iterable[pd.DataFrame],
    drill: pd.DataFrame,
    scored: dict[str, Any],
    seconds: float,
) -> UnitResult:
    """Store a scored unit with what only the driver knows (its chunk record, its ids)."""
    info = {
        **scored,
        "chunk_health": ctx.store.record("chunk", unit.ids.chunk)["chunk_health"],
        "unit_ids": asdict(unit.ids),
    }
    retrieved = ctx.store.record("retrieve", unit.ids.retrieve)
    for report in ("ann", "external"):
        if report in retrieved:
            info[report] = retrieved[report]
    started = time.perf_counter()
    ctx.store.save("score", unit.ids.score, info, tables={"rows": rows, "pool": drill})
    ctx.stats.add_time("score", seconds + time.perf_counter() - started)  # the rows are computed as they are written
    ctx.stats.stages_run["score"] += 1
    return UnitResult(unit.spec.key, drill, info)


def stored_result(unit: UnitOfWork, ctx: WorkContext) -> UnitResult:
    ctx.stats.stages_reused["score"] += 1
    drill = ctx.store.table("score", unit.ids.score, "pool")
    return UnitResult(unit.spec.key, drill, ctx.store.record("score", unit.ids.score))


def load_pool(ctx: WorkContext, stage: str, stage_id: str) -> CandidatePool | None:
    if not ctx.store.has(stage, stage_id):
        return None
    ctx.stats.stages_reused[stage] += 1
    arrays = ctx.store.arrays(stage, stage_id)
    return CandidatePool(arrays["indices"], arrays["scores"], ctx.store.record(stage, stage_id)["source"])


def save_pool(
    ctx: WorkContext, stage: str, stage_id: str, pool: CandidatePool, report: dict[str, Any] | None = None
) -> None:
    record = {"source": pool.source, **(report or {})}
    ctx.store.save(stage, stage_id, record, arrays={"indices": pool.indices, "scores": pool.scores})
    ctx.stats.stages_run[stage] += 1
