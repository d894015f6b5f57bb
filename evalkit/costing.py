"""The cost model applied to a sweep's results (pure).

Each retrieval config is priced as the generation call it would feed: the
target model reads the system prompt, the question and the chunks the config
returned (their real, per-question token counts), then writes an answer;
rerank search units are added where the reranker is paid. Token counts are
local estimates unless a run recorded the model's own counts, and every
cost carries that label (``cost_estimated``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from evalkit.costs import (
    Cost,
    TokenUsage,
    call_cost,
    estimate_tokens,
    index_growth,
    rerank_search_units,
    stuff_vs_retrieve,
)
from evalkit.pricing import PriceTable


@dataclass(frozen=True)
class CostSettings:
    """What a query costs at the team's volume: the target model and the traffic."""

    model: str = "claude-sonnet-5"
    queries_per_day: float = 1000.0
    system_tokens: int = 300
    """Instructions sent with every query (a fixed estimate)."""
    output_tokens: int = 200
    """Answer length per query."""
    cache_ttl: str = "5m"
    active_hours: float = 24.0
    batch: bool = False
    headroom_tokens: int = 8000
    """Kept free in the window for instructions, question and answer when stuffing."""
    pricing_dir: str = "conf/pricing"

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any] | None) -> CostSettings:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in (cfg or {}).items() if k in known})


def unit_token_counts(texts: list[str] | tuple[str, ...], family: str) -> np.ndarray:
    """Estimated tokens of each retrievable unit's text."""
    return np.array([estimate_tokens(text, family) for text in texts], dtype=np.int64)


def returned_tokens(returned: np.ndarray, pool_indices: np.ndarray, unit_tokens: np.ndarray) -> np.ndarray:
    """Per question: tokens of the units a slice returned."""
    tokens = np.where(pool_indices >= 0, unit_tokens[np.maximum(pool_indices, 0)], 0)
    return (tokens * returned).sum(axis=1)


def price_configs(
    summary: pd.DataFrame, settings: CostSettings, prices: PriceTable, rerank_model: str | None, pool_size: int
) -> pd.DataFrame:
    """Add $/query, $/day and index growth columns to a per-config summary."""
    price = prices.model(settings.model)
    rerank_per_query = Cost(0.0, estimated=False)
    if rerank_model is not None and rerank_model in prices.rerankers:
        rerank = prices.reranker(rerank_model)
        units = rerank_search_units(pool_size, rerank.documents_per_search)
        rerank_per_query = Cost(units * rerank.per_1000_searches / 1000, estimated=False)
    per_query = []
    for _, row in summary.iterrows():
        prompt = settings.system_tokens + round(row["mean_question_tokens"]) + round(row["mean_returned_tokens"])
        usage = TokenUsage(prompt, settings.output_tokens, estimated=True)
        per_query.append(call_cost(usage, price, batch=settings.batch) + rerank_per_query)
    out = summary.copy()
    out["cost_model"] = settings.model
    out["cost_per_query_usd"] = [c.usd for c in per_query]
    out["cost_per_day_usd"] = [c.usd * settings.queries_per_day for c in per_query]
    out["cost_estimated"] = [c.estimated for c in per_query]
    out["queries_per_day"] = settings.queries_per_day
    baseline_chunks = (
        out[out["chunk_overlap"] == 0].groupby("chunk_size")["n_chunks"].first()
        if "n_chunks" in out.columns
        else pd.Series(dtype=float)
    )
    out["index_growth_vs_no_overlap"] = [
        index_growth(int(row["n_chunks"]), int(baseline_chunks[row["chunk_size"]]))
        if row["chunk_size"] in baseline_chunks.index
        else np.nan
        for _, row in out.iterrows()
    ]
    return out


def stuffing_decision(
    corpus_tokens: int, mean_chunk_tokens: float, k: int, settings: CostSettings, prices: PriceTable
) -> dict[str, Any]:
    """Stuffing the corpus vs retrieving k chunks at the configured volume, as a JSON-ready record."""
    price = prices.model(settings.model)
    decision = stuff_vs_retrieve(
        corpus_tokens,
        settings.queries_per_day,
        k,
        round(mean_chunk_tokens),
        price,
        max(settings.headroom_tokens, settings.system_tokens + settings.output_tokens),
        output_tokens=settings.output_tokens,
        cache_ttl=settings.cache_ttl,  # type: ignore[arg-type]
        active_hours=settings.active_hours,
        batch=settings.batch,
        estimated=True,
    )
    return {
        "model": settings.model,
        "corpus_tokens": corpus_tokens,
        "corpus_tokens_estimated": True,
        "k": k,
        "mean_chunk_tokens": mean_chunk_tokens,
        "settings": asdict(settings),
        "decision": _jsonable(asdict(decision)),
    }


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not np.isfinite(value):
        return str(value)
    return value
