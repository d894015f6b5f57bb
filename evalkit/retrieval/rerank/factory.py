"""Build the configured reranker from its registration (``RERANKER_BACKENDS``: evalkit's own names and plugins')."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from evalkit.cache import Cache
from evalkit.plugins import PluginError
from evalkit.retrieval.rerank.base import Reranker
from evalkit.retrieval.settings import RERANKER_BACKENDS, RERANKERS, RerankerSettings
from evalkit.usercode import guard_methods

RerankerFactory = Callable[[RerankerSettings, Cache, Path], Reranker]
"""``factory(settings, cache, pricing_dir) -> Reranker``: constructing one sends no request."""


def make_reranker(settings: RerankerSettings, cache: Cache, pricing_dir: Path) -> Reranker | None:
    """The reranker for ``settings``, or None for ``reranker=none``; constructing it sends no request."""
    if not settings.enabled:
        return None
    if settings.name not in RERANKER_BACKENDS:
        raise ValueError(f"unknown reranker {settings.name!r}; known: {', '.join(RERANKERS)}")
    factory: RerankerFactory = RERANKER_BACKENDS.implementation(settings.name)  # type: ignore[assignment]
    reranker = factory(settings, cache, pricing_dir)
    if not isinstance(reranker, Reranker):
        raise PluginError(f"reranker={settings.name} built {type(reranker).__name__}, not a Reranker")
    where = RERANKER_BACKENDS.where(settings.name)
    return reranker if where is None else guard_methods(where, reranker, ("score_pairs",))  # type: ignore[no-any-return]
