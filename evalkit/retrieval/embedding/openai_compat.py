"""Any OpenAI-compatible embeddings endpoint through the official ``openai`` SDK: ``embedder=openai``.

OpenAI, Azure OpenAI's v1 API, vLLM, TEI (Text Embeddings Inference), Ollama and llama.cpp's
server (started with ``--embeddings``) take ``POST {base_url}/embeddings``::

    request  {"model", "input": [str], "encoding_format": "float", "dimensions"?}
    response {"data": [{"index": i, "embedding": [...]}], "model", "usage": {"prompt_tokens": n}}

Queries and passages are embedded alike (the API has no input type), so they share cache
entries: the cache key is (model, text), plus ``/d<n>`` when ``output_dimension`` shortens the
vectors. At most ``batch_size`` texts per request. The transport (key from ``api_key_env``,
the one HTTP rule of :mod:`evalkit.http_call`, the shared retries, one-line errors) is :mod:`evalkit.openai_api`'s; a
reply that cannot be right (not one finite vector of the recorded size per text, indices not
0..n-1) is retried like a lost one. The vector size is known before any request (OpenAI's
models, ``output_dimension`` or ``dimension``), so the run records it up front.

Priced when ``conf/pricing/`` has the model (``embed:``): each request is charged to the budget
before it is sent, from a local token estimate, and each question's embedding is added to its
$/query. A model without a price there (a self-hosted one) is not charged.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from evalkit import openai_api
from evalkit.retrieval.embedding.base import Embedder, EmbeddingError, EmbedKind
from evalkit.retrieval.embedding.settings import EmbedderSettings
from evalkit.retry import RetryPolicy, Transient

if TYPE_CHECKING:
    from evalkit.cost.prices import EmbedPrice

WHAT = "embedder=openai"
DEFAULT_BATCH = 64
KNOWN_DIMENSIONS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}
"""OpenAI's models' vector sizes; any other model needs ``embedder.dimension``."""


class OpenAICompatEmbedder(Embedder):
    """One OpenAI-compatible ``/embeddings`` endpoint; symmetric (queries and passages alike)."""

    @classmethod
    def from_settings(cls, settings: EmbedderSettings, pricing_dir: Path | None = None) -> OpenAICompatEmbedder:
        return cls(settings, pricing_dir)

    def __init__(
        self,
        settings: EmbedderSettings,
        pricing_dir: Path | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        jitter: random.Random | None = None,
    ) -> None:
        self.model_id = settings.model
        self.version = settings.hosted_version
        dim = settings.output_dimension or settings.dimension or KNOWN_DIMENSIONS.get(settings.model)
        if dim is None:
            raise EmbeddingError(
                f"embedder.dimension: the size of {settings.model}'s vectors is not known here; set it "
                "(the model card's embedding size, e.g. embedder.dimension=768)"
            )
        self.dim = dim
        self.batch_size = settings.batch_size or DEFAULT_BATCH
        self.settings = settings
        self.base_url = openai_api.check_base_url(
            settings.base_url or openai_api.DEFAULT_BASE_URL, "embedder.base_url", EmbeddingError
        )
        self.retry = RetryPolicy(settings.max_retries, settings.retry_base_delay_s, settings.retry_max_delay_s)
        self._sleep = sleep
        self._jitter = jitter if jitter is not None else random.Random()
        self._price = _price_of(settings.model, pricing_dir)
        self.priced = self._price is not None
        self.billed_tokens = 0
        self._sdk = openai_api.sdk(EmbeddingError, WHAT)
        self._client = openai_api.make_client(
            self._sdk,
            settings.api_key_env,
            self.base_url,
            settings.timeout_s,
            int(settings.max_reply_mb * 1024 * 1024),
            WHAT,
            EmbeddingError,
        )

    def request_cost_usd(self, texts: Sequence[str]) -> float:
        """Dollars for one request, from a local token estimate (only called when :attr:`priced`)."""
        if self._price is None:
            return math.nan
        from evalkit.cost.model import embedding_cost
        from evalkit.cost.tokens import estimate_tokens

        tokens = sum(estimate_tokens(text, self._price.tokenizer_family) for text in texts)
        return embedding_cost(tokens, self._price, estimated=True).usd

    def embed_batch(self, texts: Sequence[str], kind: EmbedKind) -> np.ndarray:
        body: dict[str, Any] = {"model": self.model_id, "input": list(texts), "encoding_format": "float"}
        if self.settings.output_dimension is not None:
            body["dimensions"] = self.settings.output_dimension
        what = f"openai-compatible embeddings ({self.model_id} at {self.base_url})"
        resends = 0

        def send() -> tuple[np.ndarray, int]:
            nonlocal resends
            if resends:
                self.resent()  # the last reply was lost or unusable: the provider may have billed it
            resends += 1
            reply = self._client.embeddings.create(**body)
            return _vectors(reply, len(texts), self.dim), _billed(reply)

        try:
            vectors, billed = openai_api.call(
                self._sdk,
                send,
                what=what,
                policy=self.retry,
                error=EmbeddingError,
                sleep=self._sleep,
                jitter=self._jitter,
            )
        except self._sdk.APIStatusError as err:
            line = openai_api.status_line(
                err.status_code,
                openai_api.api_message(err),
                base_url=self.base_url,
                model=self.model_id,
                api_key_env=self.settings.api_key_env,
                path="/embeddings",
            )
            raise EmbeddingError(line) from None
        if self.priced:  # a self-hosted model's token counts are not a bill
            self.billed_tokens += billed
        return vectors


def _price_of(model: str, pricing_dir: Path | None) -> EmbedPrice | None:
    if pricing_dir is None:
        return None
    from evalkit.cost.prices import price_table

    return price_table(pricing_dir).embedders.get(model)  # None: not priced (a self-hosted model)


def _vectors(reply: Any, n_texts: int, dim: int) -> np.ndarray:
    """The vectors in input order; :class:`Transient` unless each is finite and of the recorded size."""
    data = getattr(reply, "data", None)
    if not isinstance(data, list) or len(data) != n_texts:
        got = len(data) if isinstance(data, list) else type(data).__name__
        raise Transient(f"an impossible reply: {got} embeddings for {n_texts} texts")
    rows = sorted(data, key=lambda item: getattr(item, "index", -1))
    if [getattr(item, "index", None) for item in rows] != list(range(n_texts)):
        raise Transient("an impossible reply: embedding indices are not 0..n-1")
    try:
        matrix = np.asarray([item.embedding for item in rows], dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise Transient(f"an impossible reply: vectors that are not lists of numbers ({exc})") from None
    if matrix.ndim == 2 and matrix.shape[0] == n_texts and matrix.shape[1] not in (0, dim):
        # Every vector has one size, not the one recorded: a setting to fix, not a fault to retry.
        raise EmbeddingError(
            f"embedder.dimension: the endpoint returns vectors of {matrix.shape[1]} numbers, not {dim}; "
            f"set embedder.dimension={matrix.shape[1]}"
        )
    if matrix.shape != (n_texts, dim):
        raise Transient(f"an impossible reply: vectors of shape {matrix.shape}, expected ({n_texts}, {dim})")
    if not np.isfinite(matrix).all():
        raise Transient("an impossible reply: a vector with a NaN or an infinity")
    return matrix.astype(np.float32)


def _billed(reply: Any) -> int:
    tokens = getattr(getattr(reply, "usage", None), "prompt_tokens", None)
    return int(tokens) if isinstance(tokens, int) and tokens >= 0 else 0
