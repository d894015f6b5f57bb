"""Build the configured reranker (the only place that maps config names to backends)."""

from __future__ import annotations

from evalkit.cache import Cache
from evalkit.pipeline.plan import RerankerSpec
from evalkit.retrieval.rerank.base import Reranker

RERANKER_NAMES = ("local", "e5", "cohere")
"""Config names of ``reranker=...`` besides ``none``."""


def make_reranker(spec: RerankerSpec, cache: Cache, pricing_dir: str = "conf/pricing") -> Reranker | None:
    """The reranker for ``spec``, or None for ``reranker=none``; constructing it sends no request."""
    if spec.name == "none":
        return None
    if spec.name == "local":
        from evalkit.retrieval.rerank.local import NanoReranker

        return NanoReranker()
    if spec.name == "e5":
        from evalkit.retrieval.rerank.local import E5Reranker

        return E5Reranker(cache=cache)
    if spec.name == "cohere":
        from evalkit.cost.prices import load_price_table
        from evalkit.pipeline.plan import resolve_path
        from evalkit.retrieval.rerank.cohere import CohereReranker

        params = dict(spec.params)
        model = str(params.get("model", "rerank-v3.5"))
        # Priced so the budget cap can stop the sweep before a request that would cross it.
        price = load_price_table(resolve_path(pricing_dir)).reranker(model)
        return CohereReranker(
            model=model,
            max_documents_per_request=int(params.get("max_documents_per_request", 1000)),
            max_tokens_per_doc=int(params.get("max_tokens_per_doc", 4096)),
            base_url=params.get("base_url"),
            api_key_env=str(params.get("api_key_env", "COHERE_API_KEY")),
            price=price,
            max_retries=int(params.get("max_retries", 4)),
            retry_base_delay=float(params.get("retry_base_delay_s", 1.0)),
            timeout=float(params.get("timeout_s", 60.0)),
        )
    raise ValueError(f"unknown reranker {spec.name!r}; known: none, {', '.join(RERANKER_NAMES)}")
