"""``dry_run=true``: what a sweep will call, and what it will cost, before a cent is spent.

The dry run walks the same units of work as the sweep. It runs only the free
stage (chunking, which is pure; a finished chunk stage is read from the unit
store) and prices the rest: embedding is counted exactly against the cache,
rerank pairs are an upper bound (the pool's members are known only after
retrieval), and units the store already holds cost nothing. Local models cost
$0 but their calls are listed, since they cost time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from evalkit.cost.tokens import estimate_tokens
from evalkit.pipeline.work import UnitOfWork, WorkContext, chunk_stage


@dataclass(frozen=True)
class PlannedCalls:
    """Calls one backend will receive in a sweep."""

    backend: str
    what: str
    calls: int
    tokens: int
    usd: float
    note: str = ""


def plan_calls(units: Sequence[UnitOfWork], ctx: WorkContext) -> list[PlannedCalls]:
    """Embedding and rerank calls of the retrieval sweep's unfinished units, with tokens and dollars."""
    todo = [u for u in units if not ctx.store.has("score", u.ids.score)]
    planned: list[PlannedCalls] = []
    embedder, reranker = ctx.embedder, ctx.reranker
    if embedder is not None:
        texts: dict[str, str] = {}
        for unit in (u for u in todo if not ctx.store.has("retrieve", u.ids.retrieve)):
            for chunk in chunk_stage(unit, ctx):
                texts[embedder.key(chunk.embed_text, "passage")] = chunk.embed_text
            for question in ctx.questions:
                texts[embedder.key(question.question, "query")] = question.question
        cached = ctx.cache.get_many(f"embed:{embedder.identity}", list(texts))
        missing = [text for key, text in texts.items() if key not in cached]
        planned.append(
            PlannedCalls(
                backend=embedder.identity,
                what="embed (local model, $0)",
                calls=math.ceil(len(missing) / embedder.batch_size),
                tokens=sum(estimate_tokens(t, ctx.token_family) for t in missing),
                usd=0.0,
                note=f"{len(missing)} texts to embed, {len(texts) - len(missing)} cached",
            )
        )
    if reranker is not None:
        reranking = [u for u in todo if not ctx.store.has("rerank", u.ids.rerank)]
        n, pool = len(reranking) * len(ctx.questions), ctx.plan.pool_size
        planned.append(
            PlannedCalls(
                backend=reranker.identity,
                what="rerank",
                calls=n * math.ceil(pool / reranker.max_documents_per_request),
                tokens=0,
                usd=n * reranker.request_cost_usd(pool),
                note=f"at most {n * pool} (query, chunk) pairs; cached pairs are not sent",
            )
        )
    return planned


def describe_calls(planned: Sequence[PlannedCalls], finished_units: int = 0) -> str:
    """The dry-run table printed before any paid call."""
    lines = [
        "evalkit dry run: nothing below has been sent"
        + (f" ({finished_units} finished units of work are reused and cost nothing)" if finished_units else ""),
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
