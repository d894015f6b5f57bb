"""The cost model applied to a sweep's results (pure).

Each retrieval config is priced as the generation call it would feed: the
target model reads the system prompt, the question and the chunks the config
returned (their real, per-question token counts), then writes an answer;
rerank search units are added where the reranker is paid. Token counts are
local estimates unless a run recorded the model's own counts, and every
cost carries that label (``cost_estimated``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from evalkit.cost.model import Cost, TokenUsage, call_cost, index_growth, rerank_cost
from evalkit.cost.prices import EmbedPrice, PriceTable
from evalkit.cost.stuffing import stuff_vs_retrieve
from evalkit.records import COST_PER_DAY, COST_PER_QUERY

if TYPE_CHECKING:  # only its frames are handled here: a config reads CostSettings without loading pandas
    import pandas as pd

__all__ = [
    "CostSettings",
    "price_configs",
    "question_costs",
    "rerank_cost_per_query",
    "returned_tokens",
    "stuffing_decision",
]


@dataclass(frozen=True)
class CostSettings:
    """What a query costs at the team's volume: the target model and the traffic."""

    model: str = "claude-sonnet-5"
    queries_per_day: float = field(default=1000.0, metadata={"above": 0.0})
    system_tokens: int = field(default=300, metadata={"min": 0})
    """Instructions sent with every query (a fixed estimate)."""
    output_tokens: int = field(default=200, metadata={"min": 0})
    """Answer length per query."""
    cache_ttl: str = field(default="5m", metadata={"choices": ("5m", "1h")})
    active_hours: float = field(default=24.0, metadata={"above": 0.0, "max": 24.0})
    batch: bool = False
    headroom_tokens: int = field(default=8000, metadata={"min": 0})
    """Kept free in the window for instructions, question and answer when stuffing."""
    pricing_dir: str = "conf/pricing"


def returned_tokens(returned: np.ndarray, pool_indices: np.ndarray, unit_tokens: np.ndarray) -> np.ndarray:
    """Per question: tokens of the units a slice returned."""
    tokens = np.append(unit_tokens, 0)[pool_indices]  # -1 (no hit) takes the appended 0, also with no units
    return (tokens * returned).sum(axis=1)


def rerank_cost_per_query(prices: PriceTable, rerank_model: str | None, pool_size: int) -> Cost:
    """Search units of one question's pool, for a paid reranker (0 for local ones)."""
    if rerank_model is None or rerank_model not in prices.rerankers:
        return Cost(0.0, estimated=False)
    return rerank_cost(1, pool_size, prices.reranker(rerank_model))


def question_costs(
    rows: pd.DataFrame, settings: CostSettings, prices: PriceTable, rerank: Cost, query_embed: EmbedPrice | None = None
) -> np.ndarray:
    """Dollars per (config, question): system prompt + question + returned chunks in, an answer out.

    ``query_embed``: a paid embedder's price; each question's embedding is added (its token count is
    the question's estimate, labelled estimated like every token count here).

    Prices are linear in tokens, so the per-token rates are taken from :func:`call_cost` itself
    (one million tokens of each kind) rather than restated here.
    """
    price = prices.model(settings.model)
    per_input = call_cost(TokenUsage(1_000_000, 0, estimated=True), price, batch=settings.batch).usd / 1e6
    answer = call_cost(TokenUsage(0, settings.output_tokens, estimated=True), price, batch=settings.batch).usd
    prompt = settings.system_tokens + rows["question_tokens"].to_numpy() + rows["returned_tokens"].to_numpy()
    embed = 0.0 if query_embed is None else rows["question_tokens"].to_numpy() * query_embed.input_per_mtok / 1e6
    return prompt * per_input + answer + rerank.usd + embed


def price_configs(summary: pd.DataFrame, per_config: pd.Series, settings: CostSettings) -> pd.DataFrame:
    """Add $/query, $/day and index growth columns to a per-config summary.

    ``per_config``: each config's mean $/query over its questions, indexed by config_id (:func:`config_costs`).
    """
    out = summary.copy()
    out["cost_model"] = settings.model
    out[COST_PER_QUERY] = out["config_id"].map(per_config)
    out[COST_PER_DAY] = out[COST_PER_QUERY] * settings.queries_per_day
    out["cost_estimated"] = True  # token counts are local estimates
    out["queries_per_day"] = settings.queries_per_day
    baseline_chunks = out[out["chunk_overlap"] == 0].groupby("chunk_size")["n_chunks"].first()
    out["index_growth_vs_no_overlap"] = [
        index_growth(int(row["n_chunks"]), int(baseline_chunks[row["chunk_size"]]))
        if baseline_chunks.get(row["chunk_size"], 0) > 0  # none, or no units at all: growth is undefined
        else np.nan
        for _, row in out.iterrows()
    ]
    return out


def config_costs(rows: pd.DataFrame) -> pd.Series:
    """Each config's mean $/query over its rows (rows holding whole configs), indexed by config_id."""
    return rows.groupby("config_id", sort=False)[COST_PER_QUERY].mean()


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
