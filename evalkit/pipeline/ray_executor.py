"""``executor=ray``: the units of work on a Ray cluster, the cache and the unit store with the driver.

What runs where:

- **On the cluster (Ray tasks):** chunking of each chunking's unit, the embedding
  batches of cache misses (fanned out, at most ``executor.batches_in_flight`` at a
  time), each unit's retrieval (BM25 segmentation of uncached texts included) and
  its scoring. Tasks are pure: they get their inputs from the object store and return
  results; a task whose worker died is simply run again (``executor.max_retries``).
- **On the driver:** every cache lookup (hits are resolved before anything is
  dispatched, so only misses travel), every cache and unit-store write (one SQLite
  writer), the rerank stage (a paid reranker's key and the spending cap stay here;
  no paid call is ever made by a worker, so a retried task never repeats one), and
  the position experiment after the sweep.

Why tasks and not Ray Data ``map_batches``: the driver must see each batch's vectors
to write them into the cache as they arrive, and must cut the batches exactly as the
local path does (same texts per batch, so the same vectors); a dataset pipeline
would re-batch and buffer on its own. Tasks keep both in the driver's hands.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import ray

from evalkit.labels.read import LabelSet
from evalkit.pipeline.executor_settings import ClusterError, ExecutorSettings
from evalkit.pipeline.plan import SweepPlan
from evalkit.pipeline.ray_connect import check_reachable, connect
from evalkit.pipeline.retrieve import SearchInputs, rerank_pool, search, store_table
from evalkit.pipeline.units import units_of
from evalkit.pipeline.work import (
    UnitOfWork,
    UnitResult,
    WorkContext,
    chunk_unit,
    load_pool,
    retrieval_mask,
    save_chunks,
    save_pool,
    save_score,
    score_unit,
    stored_result,
)
from evalkit.records import Chunk, ChunkingSpec, Question
from evalkit.retrieval.bm25 import cached_tokens, store_tokens
from evalkit.retrieval.embedding.base import (
    EmbedKind,
    compute_batch,
    pending_texts,
    plan_embedding,
    stack_vectors,
    store_batch,
)
from evalkit.retrieval.embedding.settings import EmbedderSettings
from evalkit.retrieval.pools import CandidatePool, collapse_to_parents
from evalkit.retrieval.vectorstore import StoreTable
from evalkit.run.progress import embedding_bar


@dataclass(frozen=True)
class Shared:
    """What every task reads, put into the object store once per sweep (no API key is in it)."""

    plan: SweepPlan
    labelset: LabelSet
    questions: tuple[Question, ...]
    token_family: str


# ----- tasks: pure functions of their inputs -------------------------------------------------------------


@ray.remote
def chunk_task(shared: Shared, spec: ChunkingSpec) -> tuple[tuple[Chunk, ...], dict[str, Any], float]:
    started = time.perf_counter()
    chunks, record = chunk_unit(shared.labelset, spec)
    return chunks, record, time.perf_counter() - started


_EMBEDDERS: dict[EmbedderSettings, Any] = {}


@ray.remote
def embed_task(settings: EmbedderSettings, texts: list[str], kind: EmbedKind) -> Any:
    """One batch of cache misses through the embedder, loaded once per worker process."""
    from evalkit.retrieval.embedding.registry import make_embedder

    if settings not in _EMBEDDERS:
        _EMBEDDERS[settings] = make_embedder(settings)
    return compute_batch(_EMBEDDERS[settings], texts, kind)


@ray.remote
def retrieve_task(
    shared: Shared, chunks: tuple[Chunk, ...], inputs: SearchInputs, store: StoreTable | None = None
) -> tuple[CandidatePool, dict[str, Any], dict[str, list[str]], float]:
    started = time.perf_counter()
    plan = shared.plan
    allowed = retrieval_mask(plan, shared.questions, chunks, shared.labelset)
    texts = [c.embed_text for c in chunks]
    cells = plan.options.executor.block_cells
    questions = shared.questions
    pool, report, fresh = search(plan.retriever, plan.pool_size, texts, questions, inputs, allowed, cells, store)
    _, child_to_parent = units_of(chunks, shared.labelset)
    if child_to_parent is not None:
        pool = collapse_to_parents(pool, child_to_parent)
    return pool, report, fresh, time.perf_counter() - started


@ray.remote
def score_task(shared: Shared, spec: ChunkingSpec, chunks: tuple[Chunk, ...], pool: CandidatePool) -> Any:
    started = time.perf_counter()
    units, _ = units_of(chunks, shared.labelset)
    rows, drill, info = score_unit(
        shared.plan, shared.labelset, shared.questions, shared.token_family, spec, chunks, units, pool
    )
    # The rows travel to the driver, so they are computed here (one chunking's, block by block).
    blocks = tuple(rows)
    return blocks, drill, info, time.perf_counter() - started


# ----- the driver's side ---------------------------------------------------------------------------------


@contextmanager
def ray_session(settings: ExecutorSettings) -> Iterator[None]:
    """Connect to ``executor.address``, or start a local instance (loopback only) that stops with the sweep."""
    started_here = not ray.is_initialized()
    if started_here:
        connect(settings)
    try:
        yield
    finally:
        if started_here:
            ray.shutdown()


class RayExecutor:
    name = "ray"

    def __init__(self, settings: ExecutorSettings) -> None:
        self.settings = settings

    def ready(self) -> None:
        """A wrong ``executor.address`` or a refused token stops here, before the run folder is announced."""
        if self.settings.address is not None and not ray.is_initialized():
            check_reachable(self.settings.address, self.settings.connect_timeout_s)

    def run(self, units: Sequence[UnitOfWork], ctx: WorkContext) -> Iterator[UnitResult]:
        with ray_session(self.settings):
            yield from _RaySweep(ctx, self.settings).run(units)


class _RaySweep:
    def __init__(self, ctx: WorkContext, settings: ExecutorSettings) -> None:
        self.ctx, self.settings = ctx, settings
        # The generator and judge sections are read-only mappings (not picklable) that no task reads.
        plan = replace(ctx.plan, generator=None, judge=None, position=None)
        shared = Shared(plan, ctx.labelset, ctx.questions, ctx.token_family)
        self.shared = ray.put(shared)
        self.retries = settings.max_retries
        self.done = 0

    def _options(self) -> dict[str, Any]:
        return {"max_retries": self.retries, "retry_exceptions": False}

    def run(self, units: Sequence[UnitOfWork]) -> Iterator[UnitResult]:
        store = self.ctx.store
        todo = [u for u in units if not store.has("score", u.ids.score)]
        try:
            chunks = self._chunk(todo)
            pools = self._retrieve(todo, chunks)
            scored = self._dispatch_scores(todo, chunks, pools)
            for unit in units:
                if unit.ids.score in scored:
                    yield self._finish_score(unit, scored[unit.ids.score])
                else:
                    yield stored_result(unit, self.ctx)
                self.done += 1
        except ray.exceptions.RayError as exc:
            raise ClusterError(
                # The entry point adds the resume hint (finished units are in the store).
                f"executor=ray: {type(exc).__name__} after {self.retries} retries; {self.done} of {len(units)} "
                f"chunkings had finished ({_first_line(exc)})"
            ) from None

    def _chunk(self, todo: Sequence[UnitOfWork]) -> dict[str, Any]:
        """Each unit's chunks as an object reference (chunked on the cluster unless the store has them)."""
        refs: dict[str, Any] = {}
        pending = {}
        for unit in todo:
            if self.ctx.store.has("chunk", unit.ids.chunk):
                self.ctx.stats.stages_reused["chunk"] += 1
                refs[unit.ids.chunk] = ray.put(_stored_chunks(self.ctx, unit))
            elif unit.ids.chunk not in pending:
                task = chunk_task.options(num_returns=3, **self._options())
                pending[unit.ids.chunk] = (unit, task.remote(self.shared, unit.spec))
        for chunk_id, (unit, (chunks_ref, record_ref, seconds_ref)) in pending.items():
            chunks, record, seconds = ray.get([chunks_ref, record_ref, seconds_ref])
            save_chunks(self.ctx, unit, chunks, record, seconds)
            refs[chunk_id] = chunks_ref  # already in the object store: later tasks read it, no second upload
        return refs

    def _retrieve(self, todo: Sequence[UnitOfWork], chunk_refs: dict[str, Any]) -> dict[str, Any]:
        """Each unit's final pool (retrieved on the cluster, reranked here), as a reference or a pool."""
        ctx = self.ctx
        dispatched: dict[str, Any] = {}
        for unit in todo:
            if ctx.store.has("retrieve", unit.ids.retrieve) or unit.ids.retrieve in dispatched:
                continue
            chunks: tuple[Chunk, ...] = ray.get(chunk_refs[unit.ids.chunk])
            inputs = self._search_inputs([c.embed_text for c in chunks])
            task = retrieve_task.options(**self._options())
            # retriever.index=lancedb: the table sits beside the cache file (a worker on this machine shares it).
            store = store_table(ctx.plan, unit.spec.key, ctx.embedder.identity if ctx.embedder is not None else None)
            dispatched[unit.ids.retrieve] = task.remote(self.shared, chunk_refs[unit.ids.chunk], inputs, store)
        pools: dict[str, Any] = {}
        for unit in todo:
            pool = self._retrieved_pool(unit, dispatched)
            if ctx.reranker is not None:
                pool = self._rerank(unit, pool, ray.get(chunk_refs[unit.ids.chunk]))
            pools[unit.ids.score] = pool
        return pools

    def _retrieved_pool(self, unit: UnitOfWork, dispatched: dict[str, Any]) -> CandidatePool:
        pool = load_pool(self.ctx, "retrieve", unit.ids.retrieve)
        if pool is not None:
            return pool
        pool, report, fresh, seconds = ray.get(dispatched[unit.ids.retrieve])
        store_tokens(self.ctx.cache, fresh)
        self.ctx.stats.add_time("retrieve", seconds)
        save_pool(self.ctx, "retrieve", unit.ids.retrieve, pool, report)
        return pool

    def _rerank(self, unit: UnitOfWork, pool: CandidatePool, chunks: tuple[Chunk, ...]) -> CandidatePool:
        ctx = self.ctx
        reranked = load_pool(ctx, "rerank", unit.ids.rerank)
        if reranked is None:
            assert ctx.reranker is not None
            units, _ = units_of(chunks, ctx.labelset)
            reranked = rerank_pool(pool, units, ctx.questions, ctx.reranker, ctx.cache, ctx.stats, ctx.progress)
            save_pool(ctx, "rerank", unit.ids.rerank, reranked)
        return reranked

    def _search_inputs(self, texts: list[str]) -> Any:
        """Vectors (misses embedded on the cluster) and the BM25 tokens the cache holds, in the object store."""
        ctx, retriever = self.ctx, self.ctx.plan.retriever
        passages = queries = None
        if retriever.backend.embeds:
            started = time.perf_counter()
            passages = self._embed(texts, "passage")
            queries = self._embed([q.question for q in ctx.questions], "query")
            ctx.stats.add_time("embed", time.perf_counter() - started)
        known = None
        if retriever.backend.tokenizes:
            known = cached_tokens([*texts, *(q.question for q in ctx.questions)], ctx.cache)
        embedder = ctx.embedder
        identity, dim = (embedder.identity, embedder.dim) if embedder is not None else (None, 0)
        return ray.put(SearchInputs(passages, queries, identity, dim, known))

    def _embed(self, texts: list[str], kind: EmbedKind) -> Any:
        """Resolve hits here, fan the missing batches out (a bounded number in flight), cache what returns."""
        ctx = self.ctx
        embedder = ctx.embedder
        assert embedder is not None
        work = plan_embedding(embedder, texts, kind, ctx.cache)
        task = embed_task.options(**self._options())
        waiting: dict[Any, Any] = {}
        batches = list(work.batches)
        with embedding_bar(pending_texts(work), kind, ctx.progress) as bar:  # the local path's bar
            while batches or waiting:
                while batches and len(waiting) < self.settings.batches_in_flight:
                    batch = batches.pop(0)
                    batch_texts = [text for _, text in batch]
                    if embedder.priced:  # charged here, before it is sent (a worker's resends are not seen)
                        ctx.stats.spend.charge(embedder.request_cost_usd(batch_texts), f"embed:{embedder.identity}")
                    waiting[task.remote(ctx.plan.embedder_config, batch_texts, kind)] = batch
                (ready,), _ = ray.wait(list(waiting), num_returns=1)
                batch = waiting.pop(ready)
                store_batch(ctx.cache, embedder, work, batch, ray.get(ready))
                ctx.stats.embed.add(embedder.identity, len(batch))
                bar.update(len(batch))
        return stack_vectors(embedder, work)

    def _dispatch_scores(
        self, todo: Sequence[UnitOfWork], chunk_refs: dict[str, Any], pools: dict[str, Any]
    ) -> dict[str, Any]:
        task = score_task.options(**self._options())
        return {
            unit.ids.score: task.remote(self.shared, unit.spec, chunk_refs[unit.ids.chunk], pools[unit.ids.score])
            for unit in todo
        }

    def _finish_score(self, unit: UnitOfWork, ref: Any) -> UnitResult:
        rows, drill, info, seconds = ray.get(ref)
        return save_score(self.ctx, unit, rows, drill, info, seconds)


def _stored_chunks(ctx: WorkContext, unit: UnitOfWork) -> tuple[Chunk, ...]:
    from evalkit.pipeline.units import chunks_from_table

    return chunks_from_table(ctx.store.table("chunk", unit.ids.chunk, "chunks"), ctx.labelset)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[-1][:200] if text else type(exc).__name__
