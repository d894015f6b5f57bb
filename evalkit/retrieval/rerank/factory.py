"""Build the configured reranker: the one registry of reranker names (evalkit's own and plugins')."""

from __future__ import annotations

from pathlib import Path

from evalkit.cache import Cache
from evalkit.plugins import PluginError, Registry
from evalkit.retrieval.rerank.base import Reranker
from evalkit.retrieval.settings import RerankerSettings
from evalkit.usercode import guard_methods


def _fake(settings: RerankerSettings, cache: Cache, pricing_dir: Path) -> Reranker:
    from evalkit.retrieval.fake import OverlapReranker

    return OverlapReranker()


def _local(settings: RerankerSettings, cache: Cache, pricing_dir: Path) -> Reranker:
    from evalkit.retrieval.rerank.local import NanoReranker

    return NanoReranker()


def _e5(settings: RerankerSettings, cache: Cache, pricing_dir: Path) -> Reranker:
    from evalkit.retrieval.rerank.local import E5Reranker

    return E5Reranker(cache=cache)


def _cohere(settings: RerankerSettings, cache: Cache, pricing_dir: Path) -> Reranker:
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
        max_reply_mb=settings.max_reply_mb,
    )


RERANKER_FACTORIES = Registry("reranker", {"local": _local, "e5": _e5, "cohere": _cohere, "fake": _fake})
"""``reranker=<name>`` (besides ``none``) to ``factory(settings, cache, pricing_dir) -> Reranker``."""


def make_reranker(settings: RerankerSettings, cache: Cache, pricing_dir: Path) -> Reranker | None:
    """The reranker for ``settings``, or None for ``reranker=none``; constructing it sends no request."""
    if not settings.enabled:
        return None
    if settings.name not in RERANKER_FACTORIES:
        raise ValueError(f"unknown reranker {settings.name!r}; known: none, {', '.join(RERANKER_FACTORIES)}")
    reranker = RERANKER_FACTORIES[settings.name](settings, cache, pricing_dir)
    if not isinstance(reranker, Reranker):
        raise PluginError(f"reranker={settings.name} built {type(reranker).__name__}, not a Reranker")
    where = RERANKER_FACTORIES.where(settings.name)
    return reranker if where is None else guard_methods(where, reranker, ("score_pairs",))  # type: ignore[no-any-return]
