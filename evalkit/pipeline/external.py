"""The unit of work of ``retriever=external``: production's retriever answers, its spans become the chunking.

The chunk and retrieve stages of other retrievers are one step here (production chunked and searched):
every query is asked once for ``pool_size`` hits (cached per query), the hits are anchored to document
spans, and the distinct spans are stored as the unit's chunks, each query's hits as its pool. Rerank,
top_k, thresholds, scoring, the gate and the report then run as for any chunking.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from evalkit.labels.locate import build_locator
from evalkit.records import Chunk
from evalkit.retrieval.external.calls import fetch_results, where_of
from evalkit.retrieval.external.hits import anchor_hits, document_record, query_record
from evalkit.retrieval.external.pool import check_best_first, chunks_and_pool
from evalkit.retrieval.pools import CandidatePool

if TYPE_CHECKING:
    from evalkit.pipeline.work import WorkContext

UNANCHORED_SHOWN = 50
"""Questions listed by id with their unanchored hits (the count covers all of them)."""


def external_unit(ctx: WorkContext) -> tuple[tuple[Chunk, ...], CandidatePool, dict[str, Any]]:
    """The returned spans as chunks, each query's pool, and what the call reports (asked, unanchored)."""
    settings, questions, documents = ctx.plan.retriever, ctx.questions, ctx.labelset.documents
    where = where_of(settings)
    locator_of = functools.cache(lambda: build_locator(documents))  # once, for every batch's text hits

    def validate(batch: list[int], results: list[list[Any]]) -> None:
        asked = [questions[i] for i in batch]
        check_best_first(asked, anchor_hits(asked, results, documents, where, locator_of), where)

    queries = [query_record(q) for q in questions]
    given = [document_record(d) for d in documents]  # read only by a Python retriever that asks for them
    raw, asked = fetch_results(
        settings, queries, ctx.plan.pool_size, ctx.cache, validate, ctx.progress, documents=given
    )
    anchored = anchor_hits(questions, raw, documents, where, locator_of)
    chunks, pool = chunks_and_pool(anchored, documents, ctx.plan.pool_size)
    unanchored = {q.id: n for q, n in zip(questions, anchored.unanchored) if n}
    report = {
        "external": {
            "where": where,
            "version": settings.version,
            "queries": len(questions),
            "asked": asked,
            "hits": int(sum(len(h) for h in anchored.hits)),
            "anchored_text": anchored.anchored_text,
            "unanchored": anchored.n_unanchored,
            "unanchored_questions": len(unanchored),
            "unanchored_by_question": dict(list(unanchored.items())[:UNANCHORED_SHOWN]),
            "no_hits": int(sum(1 for h in anchored.hits if not h)),
        }
    }
    return chunks, pool, report
