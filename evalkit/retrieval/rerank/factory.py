"""Build the configured reranker (the only place that maps config names to backends)."""

from __future__ import annotations

from pathlib import Path

from evalkit.cache import Cache
from evalkit.retrieval.rerank.base import Reranker
from evalkit.retrieval.settings import RerankerSettings

RERANKER_NAMES = ("local", "e5", "cohere", "fake")
"""Config names of ``reranker=...`` besides ``none``."""


def make_reranker(settings: RerankerSettings, cache: Cache, pricing_dir: Path) -> Reranker | None:
    """The reranker for ``settings``, or None for ``reranker=none``; constructing it sends no request."""
    if settings.name == "none":
        return None
    if settings.name == "fake":
        from evalkit.retrieval.fake import OverlapReranker

        return OverlapReranker()
    if settings.name == "local":
        from evalkit.retrieval.rerank.local import NanoReranker

        return NanoReranker()
    if settings.name == "e5":
        from evalkit.retrieval.rerank.local import E5Reranker

        return E5Reranker(cache=cache)
    if settings.name == "cohere":
        from evalkit.cost.prices import price_table
        from evalkit.retrieval.rerank.cohere import CohereReranker

        # Priced so the budget cap can stop the sweep before a request that would cross it.
        price = price_table(pricing_dir).reranker(settings.model)
        return CohereReranker(
            model=settings.model,
            max_documents_per_request=settings.max_documents_per_request,
            max_tokens_per_doc=settings.max_tokens_per_doc,
            base_url=settings.base_url,
            api_key_env=settings.api_key_env,
            price=price,
            max_retries=settings.max_retries,
            retry_base_delay=settings.retry_base_delay_s,
            retry_max_delay=settings.retry_max_delay_s,
            retry_deadline=settings.retry_deadline_s,
            timeout=settings.timeout_s,
        )
    raise ValueError(f"unknown reranker {settings.name!r}; known: none, {', '.join(RERANKER_NAMES)}")
