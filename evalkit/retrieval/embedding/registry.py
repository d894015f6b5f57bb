"""Build the configured embedder from its registration (``EMBEDDERS``: evalkit's own names and plugins')."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from evalkit.plugins import PluginError
from evalkit.retrieval.embedding.base import Embedder
from evalkit.retrieval.embedding.settings import EMBEDDERS, EmbedderSettings
from evalkit.usercode import guard_methods

EmbedderFactory = Callable[[EmbedderSettings, Path | None], Embedder]
"""``factory(settings, pricing_dir) -> Embedder``: constructing one sends no request and loads no weights."""


def make_embedder(settings: EmbedderSettings, pricing_dir: Path | None = None) -> Embedder:
    """The embedder ``settings`` name (``pricing_dir``: where a paid one finds its price when asked)."""
    factory: EmbedderFactory = EMBEDDERS.implementation(settings.name)  # type: ignore[assignment]
    embedder = factory(settings, pricing_dir)
    if not isinstance(embedder, Embedder):
        raise PluginError(f"embedder={settings.name} built {type(embedder).__name__}, not an Embedder")
    where = EMBEDDERS.where(settings.name)
    return embedder if where is None else guard_methods(where, embedder, ("embed_batch",))
