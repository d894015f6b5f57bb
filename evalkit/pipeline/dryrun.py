"""``dry_run=true``: what a sweep will call, and what it will cost, before a cent is spent.

Chunking is pure and cheap, and the cache is local, so the plan counts
exactly the texts still to embed. Rerank pairs are an upper bound (the pool's
members are known only after retrieval): every question's full pool, less
nothing. Local models cost $0 but their calls are listed, since they cost time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from evalkit.cache import Cache
from evalkit.chunking.chunkers import chunk_corpus
from evalkit.cost.apply import CostSettings
from evalkit.cost.model import estimate_tokens
from evalkit.cost.prices import load_price_table
from evalkit.labels.read import LabelSet
from evalkit.pipeline.plan import SweepPlan
from evalkit.retrieval.embedding.base import Embedder
from evalkit.retrieval.rerank.base import Reranker


@dataclass(frozen=True)
class PlannedCalls:
    """Calls one backend will receive in a sweep."""

    backend: str
    what: str
    calls: int
    tokens: int
    usd: float
    note: str = ""


def plan_calls(
    plan: SweepPlan, labelset: LabelSet, embedder: Embedder, reranker: Reranker | None, cache: Cache
) -> list[PlannedCalls]:
    """Embedding and rerank calls of the retrieval sweep, with tokens and dollars."""
    settings = CostSettings.from_config(plan.cost)
    family = load_price_table(_pricing_dir(settings)).model(settings.model).tokenizer_family
    questions = labelset.questions[: plan.labelset_limit] if plan.labelset_limit else labelset.questions
    planned: list[PlannedCalls] = []
    if plan.retriever.name in ("dense", "hybrid"):
        texts: dict[str, str] = {}
        for spec in plan.chunkings:
            for chunk in chunk_corpus(labelset.documents, spec):
                texts[embedder.key(chunk.embed_text, "passage")] = chunk.embed_text
        for question in questions:
            texts[embedder.key(question.question, "query")] = question.question
        cached = cache.get_many(f"embed:{embedder.identity}", list(texts))
        todo = [text for key, text in texts.items() if key not in cached]
        planned.append(
            PlannedCalls(
                backend=embedder.identity,
                what="embed (local model, $0)",
                calls=math.ceil(len(todo) / embedder.batch_size),
                tokens=sum(estimate_tokens(t, family) for t in todo),
                usd=0.0,
                note=f"{len(todo)} texts to embed, {len(texts) - len(todo)} cached",
            )
        )
    if reranker is not None:
        pairs = len(plan.chunkings) * len(questions) * plan.pool_size
        requests = len(plan.chunkings) * len(questions) * math.ceil(plan.pool_size / reranker.max_documents_per_request)
        usd = len(plan.chunkings) * len(questions) * reranker.request_cost_usd(plan.pool_size)
        planned.append(
            PlannedCalls(
                backend=reranker.identity,
                what="rerank",
                calls=requests,
                tokens=0,
                usd=usd,
                note=f"at most {pairs} (query, chunk) pairs; cached pairs are not sent",
            )
        )
    return planned


def _pricing_dir(settings: CostSettings) -> str:
    from evalkit.pipeline.plan import resolve_path

    return str(resolve_path(settings.pricing_dir))


def describe_plan(
    plan: SweepPlan,
    labelset: LabelSet,
    embedder: Embedder,
    reranker: Reranker | None,
    cache: Cache,
    extra: list[PlannedCalls] | None = None,
) -> str:
    """The dry-run table printed before any paid call."""
    planned = [*plan_calls(plan, labelset, embedder, reranker, cache), *(extra or [])]
    lines = [
        "evalkit dry run: nothing below has been sent",
        f"{'backend':34} {'what':28} {'calls':>8} {'tokens (est.)':>14} {'dollars':>10}  note",
    ]
    for item in planned:
        lines.append(
            f"{item.backend:34} {item.what:28} {item.calls:8d} {item.tokens:14d} {item.usd:10.4f}  {item.note}"
        )
    total = sum(item.usd for item in planned)
    lines.append(
        f"{'total':34} {'':28} {sum(i.calls for i in planned):8d} {'':14} {total:10.4f}  (token counts are estimates)"
    )
    return "\n".join(lines)
