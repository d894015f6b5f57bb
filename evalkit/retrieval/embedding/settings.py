"""The embedder group's settings (``conf/embedder/*.yaml``): one typed record, each backend its own keys."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalkit.plugins import Choices, Registry
from evalkit.settings import ConfigError, check_keys

COHERE_MAX_TEXTS = 96
"""Cohere's cap on texts per embed request (v2 API)."""

_TRANSPORT = ("api_key_env", "base_url", "timeout_s", "max_retries", "retry_base_delay_s", "retry_max_delay_s")


@dataclass(frozen=True)
class EmbedderBackend:
    """A built-in embedder as evalkit sees it: where its factory is and what it declares (no name is tested)."""

    target: str
    """``module:attribute`` of ``factory(settings, pricing_dir) -> Embedder`` (the embedder entry-point
    contract), imported when a config names it: reading a config imports no model or SDK."""
    keys: frozenset[str] = frozenset()
    """Its settings besides ``name``: ``embedder=e5`` with ``path=`` is a mistake, not a no-op."""
    priced: bool = False
    """Billed per request: ``embedder.model`` must be priced in the price files; the budget charges each request."""
    priced_if_listed: bool = False
    """Billed when the price files list its model (a hosted endpoint), free otherwise (a self-hosted one)."""
    needs_key: bool = False
    """Sends an API key: ``embedder.api_key_env`` must name its variable."""
    needs: tuple[tuple[str, str], ...] = ()
    """Settings it cannot run without (no default serves), each with what it is: ``(("path", "the model folder"),)``."""
    max_batch: int | None = None
    """The most texts one request may carry (the provider's cap); ``embedder.batch_size`` above it is refused."""

    def problem(self, settings: EmbedderSettings) -> str | None:
        """What in ``settings`` this backend cannot run with (one line), or None."""
        name = settings.name
        for key, what in self.needs:
            if not getattr(settings, key):
                return f"embedder.{key}: embedder={name} needs {what} (embedder.{key}=...)"
        if self.needs_key and settings.api_key_env is None:
            return f"embedder.api_key_env: embedder={name} needs a key's variable"
        if self.max_batch is not None and settings.batch_size is not None and settings.batch_size > self.max_batch:
            return f"embedder.batch_size: {settings.batch_size} is above embedder={name}'s {self.max_batch} per request"
        return None


_HOSTED = frozenset({"model", "batch_size", "output_dimension", "max_reply_mb", *_TRANSPORT})
_ONNX = frozenset({"path", "model_id", "pooling", "max_length", "batch_size", "query_prefix", "passage_prefix"})
_HERE = "evalkit.retrieval.embedding"

EMBEDDERS: Registry[EmbedderBackend] = Registry(
    "embedder",
    {
        "usem3": EmbedderBackend(f"{_HERE}.local:UniversalSentenceEncoder.from_settings"),
        "e5": EmbedderBackend(f"{_HERE}.local:MultilingualE5Small.from_settings"),
        "cohere": EmbedderBackend(
            f"{_HERE}.cohere:CohereEmbedder.from_settings", _HOSTED | {"truncate"}, priced=True, needs_key=True,
            max_batch=COHERE_MAX_TEXTS,
        ),
        "openai": EmbedderBackend(f"{_HERE}.openai_compat:OpenAICompatEmbedder.from_settings", _HOSTED | {"dimension"},
                                  priced_if_listed=True),
        "onnx": EmbedderBackend(
            f"{_HERE}.onnx:OnnxEmbedder.from_settings", _ONNX, needs=(("path", "the model folder"),)
        ),
        "fake": EmbedderBackend("evalkit.retrieval.fake:HashingEmbedder.from_settings"),  # wiring tests only
    },
)  # fmt: skip
"""The registration table: the one place a built-in embedder's name is written in code. An installed plugin
(entry-point group ``evalkit.embedders``) names its factory itself and takes any key of this record."""
EMBEDDER_NAMES = Choices("embedder", EMBEDDERS.builtin_names())
"""evalkit's own embedders, then installed plugins'."""
PLUGIN_EMBEDDER = EmbedderBackend("")
"""An installed embedder's traits as far as evalkit knows them: unpriced, no key it checks."""


def embedder_backend(name: str) -> EmbedderBackend:
    """What ``embedder.name`` declares: evalkit's own backend's traits, or a plugin's."""
    return EMBEDDERS[name] if EMBEDDERS.builtin(name) else PLUGIN_EMBEDDER


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
        problem = self.backend.problem(self)
        if problem is not None:
            raise ConfigError(problem)

    @property
    def backend(self) -> EmbedderBackend:
        """What this embedder declares (its table entry): priced, its key, its keys."""
        return embedder_backend(self.name)

    @property
    def hosted_version(self) -> str:
        """A hosted model's version in cache keys: its id (providers version models by name), and the vector size
        when ``output_dimension`` shortens it (a shorter vector is another embedding: never the same key)."""
        return self.model if self.output_dimension is None else f"{self.model}/d{self.output_dimension}"

    @property
    def priced(self) -> bool:
        return self.backend.priced

    @property
    def priced_if_listed(self) -> bool:
        return self.backend.priced_if_listed


def check_embedder_keys(raw: Mapping[str, Any], where: str = "embedder") -> None:
    """Each backend takes its own keys (a plugin's settings are its own affair: any key of this record)."""
    name = raw.get("name")
    if isinstance(name, str) and EMBEDDERS.builtin(name):
        check_keys(dict(raw), {"name", *EMBEDDERS[name].keys}, where)
