"""Cohere Rerank (v2 API) through the official ``cohere`` SDK.

Retries are evalkit's (:mod:`~evalkit.retry`, the policy shared with the Anthropic
generator), not the SDK's: the SDK's own retry loop (2 retries of 408/409/429/5xx by
default) is switched off so that every HTTP request is counted in
:class:`~evalkit.retrieval.rerank.base.RerankCounter` and the retry budget is one number
in the config. Retried with backoff (full jitter, ``Retry-After`` honoured): the policy's
transient statuses (408/409/429/5xx but 501/505, 529 included), connection errors, and
replies that cannot be used: a body that is not JSON, empty or cut short, of the wrong
shape, or results that cannot be right (not one result per document, a repeated or
out-of-range index, a NaN score). A bad reply is never a silent score. Errors a retry
cannot fix (400, 401, 404, 422, a missing key) become
:class:`~evalkit.retrieval.rerank.base.RerankError` at once, with the server's own
message; exhausted retries become one such line naming the last failure.

Wire format (``POST /v2/rerank``)::

    request  {"model", "query", "documents": [str], "top_n", "max_tokens_per_doc"}
    response {"id", "results": [{"index", "relevance_score"}],
              "meta": {"api_version": {...}, "billed_units": {"search_units": n}}}

``results`` come sorted by score and are mapped back to input order here.
Scores lie in [0, 1] and are absolute per (query, document), so batches of a
large pool merge by score and thresholds mean the same across questions.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from evalkit.cache import cache_key, text_hash
from evalkit.retrieval.cohere_api import Attempts, call_with_cohere_retries, describe, make_client, resolve_api_key
from evalkit.retrieval.rerank.base import RerankCounter, Reranker, RerankError
from evalkit.retry import RetriesExhausted, RetryPolicy

if TYPE_CHECKING:
    from pathlib import Path

    from evalkit.cache import Cache
    from evalkit.cost.prices import RerankPrice
    from evalkit.retrieval.settings import RerankerSettings

WHAT = "reranker=cohere"

DOCUMENTS_PER_SEARCH_UNIT = 100
"""Cohere bills one search unit per query with up to 100 documents."""


class CohereReranker(Reranker):
    """Cohere's hosted rerank models (``rerank-v3.5``, ``rerank-v4.0-*``, ...); scores in [0, 1].

    The client is built at construction, so a missing key fails before a sweep
    spends time on embedding; no request is sent until :meth:`score_pairs`.
    """

    def __init__(
        self,
        settings: RerankerSettings,
        price: RerankPrice | None = None,
        *,
        api_key: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
        jitter: random.Random | None = None,
    ) -> None:
        """Configure the model and transport from the frozen ``reranker`` settings, taken whole.

        Args:
            settings: ``model`` (also the version: Cohere versions models by name), ``max_documents_per_request``
                (Cohere recommends at most 1,000; ``rerank_scores`` splits larger pools; a multiple of 100 wastes
                no search unit), ``max_tokens_per_doc`` (truncation: part of the cache key since it changes
                scores), ``base_url`` (None: the SDK default, ``CO_API_URL`` or api.cohere.com), ``api_key_env``,
                ``timeout_s`` per HTTP request, ``max_reply_mb`` (a larger reply is refused, never held whole) and
                the retry rule's ``max_retries``, ``retry_*_s``.
            price: the model's price (``conf/pricing/cohere.yaml``), so a budget guard can price
                each request before it is sent; without it :meth:`request_cost_usd` raises.
            api_key: the key; None reads the variable ``settings.api_key_env`` (then ``CO_API_KEY``).
            sleep: the wait function (tests pass a recorder).
            jitter: the backoff's random source (tests pass a seeded one); None: a fresh one seeded by the OS.
        """
        # Checked here too: settings built in Python (not read from a config) have not met the reader's bounds.
        if settings.max_documents_per_request < 1:
            raise ValueError(f"max_documents_per_request must be >= 1, got {settings.max_documents_per_request}")
        if settings.max_tokens_per_doc < 1:
            raise ValueError(f"max_tokens_per_doc must be >= 1, got {settings.max_tokens_per_doc}")
        self.model_id = settings.model
        self.version = settings.model
        self.max_documents_per_request = settings.max_documents_per_request
        self.max_tokens_per_doc = settings.max_tokens_per_doc
        self.max_retries = settings.max_retries
        # The policy checks its own values (max_retries >= 0, delays >= 0): shared with the Anthropic generator.
        self.retry = RetryPolicy(
            settings.max_retries, settings.retry_base_delay_s, settings.retry_max_delay_s, settings.retry_deadline_s
        )
        self._jitter = jitter if jitter is not None else random.Random()
        self.timeout = settings.timeout_s
        self.price = price
        self.api_key_env = settings.api_key_env
        self._sleep = sleep
        offline = "rerank offline with reranker=local (or reranker=e5)"
        key = resolve_api_key(api_key, settings.api_key_env, RerankError, WHAT, offline)
        self._client = make_client(key, settings.base_url, settings.timeout_s, RerankError, WHAT, settings.max_reply_mb)

    @classmethod
    def from_settings(cls, settings: RerankerSettings, cache: Cache, pricing_dir: Path) -> CohereReranker:
        """``reranker=cohere``: priced, so the budget cap can stop the sweep before a request that would cross it."""
        from evalkit.cost.prices import price_table

        return cls(settings, price_table(pricing_dir).reranker(settings.model))

    def request_cost_usd(self, n_documents: int) -> float:
        """Dollars for one request: search units (one per ``documents_per_search`` documents) times the price."""
        if self.price is None:
            # Returning 0 would let a budget-capped sweep spend without limit; refuse instead.
            raise RerankError(
                f"reranker=cohere has no price for {self.model_id}: pass price=load_price_table(...)"
                f".reranker({self.model_id!r}) (conf/pricing/cohere.yaml) so the budget guard can price requests"
            )
        from evalkit.cost.model import rerank_cost

        return rerank_cost(1, n_documents, self.price).usd

    def key(self, query: str, document: str) -> str:
        """Cache key; includes ``max_tokens_per_doc`` because truncation changes the score."""
        return cache_key(
            "rerank",
            self.identity,
            {"max_tokens_per_doc": self.max_tokens_per_doc},
            text_hash(query),
            text_hash(document),
        )

    bills_unanswered_requests = True

    def score_pairs(
        self,
        query: str,
        documents: Sequence[str],
        counter: RerankCounter | None = None,
        on_resend: Callable[[], None] | None = None,
    ) -> np.ndarray:
        """One relevance score per document, in input order; one request (plus retries)."""
        if not documents:
            return np.zeros(0, dtype=np.float64)
        if len(documents) > self.max_documents_per_request:
            raise RerankError(
                f"{len(documents)} documents in one request exceeds max_documents_per_request="
                f"{self.max_documents_per_request}; call rerank_scores, which splits the pool"
            )
        response, scores, attempts = self._send(query, list(documents), counter, on_resend)
        if counter is not None:
            counter.add(
                self.model_id, len(documents), requests=attempts, search_units=_search_units(response, len(documents))
            )
        return scores

    def _send(
        self,
        query: str,
        documents: list[str],
        counter: RerankCounter | None,
        on_resend: Callable[[], None] | None = None,
    ) -> tuple[Any, np.ndarray, int]:
        """The response, its scores in input order, and the number of HTTP requests it took.

        A transient failure is retried with backoff: 408/429/5xx/529, connection errors, and replies
        that arrive but cannot be used (not JSON, empty, cut short, of the wrong shape, or scores
        that cannot be right). The last failure becomes one :class:`RerankError` line.
        """
        from cohere.core.api_error import ApiError

        what, attempts = f"Cohere rerank ({self.model_id})", Attempts()

        def send() -> tuple[Any, np.ndarray]:
            response = self._client.rerank(
                model=self.model_id,
                query=query,
                documents=documents,
                top_n=len(documents),
                max_tokens_per_doc=self.max_tokens_per_doc,
                # The client is built with max_retries=0 too; repeating it per request guards
                # against an SDK whose client-level setting stops applying.
                request_options={"max_retries": 0},
            )
            return response, _scores_in_input_order(response, len(documents))

        try:
            response, scores = call_with_cohere_retries(
                send, self.retry, _ImpossibleReply, attempts, sleep=self._sleep, jitter=self._jitter,
                on_resend=on_resend, error=RerankError,
            )  # fmt: skip
        except ApiError as exc:  # a status a retry cannot fix
            self._count_failure(counter, attempts.n)
            raise RerankError(describe(exc, what, attempts.n, False, self.api_key_env)) from exc
        except RetriesExhausted as exc:
            self._count_failure(counter, attempts.n)
            cause = exc.last.__cause__
            if isinstance(cause, ApiError):
                raise RerankError(describe(cause, what, attempts.n, True, self.api_key_env)) from exc
            raise RerankError(f"Cohere rerank ({self.model_id}) {exc}") from exc
        return response, scores, attempts.n

    def _count_failure(self, counter: RerankCounter | None, attempts: int) -> None:
        # Failed requests are recorded (they cost time, and show up in rate-limit reports) but
        # score no pair and bill no search unit.
        if counter is not None:
            counter.add(self.model_id, 0, requests=attempts, search_units=0)


class _ImpossibleReply(RerankError):
    """A reply that parsed but cannot be right (a missing, repeated or out-of-range index, a NaN score)."""


def _scores_in_input_order(response: Any, n_documents: int) -> np.ndarray:
    """One score per document from the sorted results; :class:`_ImpossibleReply` unless each document has one."""
    results = getattr(response, "results", None)
    if not isinstance(results, list):
        raise _ImpossibleReply(f"no results list (got {type(results).__name__})")
    if len(results) != n_documents:
        # top_n is len(documents), so every document must come back once; a gap would rank as missing.
        raise _ImpossibleReply(f"{len(results)} results for {n_documents} documents")
    scores = np.full(n_documents, np.nan, dtype=np.float64)
    for result in results:
        try:
            raw_index, score = getattr(result, "index", None), float(result.relevance_score)
            index = int(raw_index)  # type: ignore[arg-type]
        except (AttributeError, TypeError, ValueError) as exc:
            raise _ImpossibleReply(f"a malformed result: {result!r}") from exc
        if isinstance(raw_index, bool) or index != raw_index:
            raise _ImpossibleReply(f"a non-integer index {raw_index!r}")
        if not 0 <= index < n_documents:
            raise _ImpossibleReply(f"index {index} for {n_documents} documents")
        if not np.isnan(scores[index]):
            raise _ImpossibleReply(f"index {index} twice")
        if not math.isfinite(score):
            raise _ImpossibleReply(f"score {score} for document {index}")
        scores[index] = score
    return scores


def _search_units(response: Any, n_documents: int) -> int:
    """Billed search units as reported, else what Cohere's pricing implies (one per 100 documents)."""
    meta = getattr(response, "meta", None)
    billed = getattr(meta, "billed_units", None)
    units = getattr(billed, "search_units", None)
    if units is None:
        return math.ceil(n_documents / DOCUMENTS_PER_SEARCH_UNIT)
    return round(float(units))
