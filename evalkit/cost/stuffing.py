"""Stuffing the corpus into every prompt against retrieving k chunks: the routing and the break-even points.

Pure. The window decides first (a corpus that does not fit is never stuffed,
whatever the price); then the three arms of :mod:`evalkit.cost.model` are
priced per query and per day under one stated traffic assumption, and the
break-even points say where the answer would change.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from evalkit.cost.model import (
    NO_COST,
    PER_MILLION,
    TTL_MINUTES,
    Cost,
    cache_writes_per_day,
    call_cost,
    check_tokens,
    daily_cost,
    retrieval_cost_per_query,
    stuff_cached_daily_cost,
    stuff_cost_per_query,
    stuff_usage,
    ttl_minutes,
)

if TYPE_CHECKING:
    from evalkit.cost.prices import CacheTTL, ModelPrice

Arm = Literal["stuff_uncached", "stuff_cached", "retrieve"]
"""The three ways to put the corpus in front of the model."""
StuffingFit = Literal["fits", "does not fit"]
"""Whether corpus plus headroom fits the model's context window."""


@dataclass(frozen=True)
class StuffVsRetrieve:
    """Stuffing the corpus into every prompt against retrieving k chunks, per query and per day.

    Stuffing costs are ``None`` when the corpus does not fit. Break-even
    points are ``math.inf`` when the crossing never happens; they are price
    facts, given whether or not the corpus fits.
    """

    model_id: str
    """Model priced."""
    corpus_tokens: int
    """Tokens of the whole corpus, in this model's tokenizer."""
    headroom_tokens: int
    """Tokens kept free for instructions, question and the longest answer."""
    context_window: int
    """The model's window."""
    window_margin_tokens: int
    """``context_window - corpus_tokens - headroom_tokens``; negative when it does not fit."""
    stuffing: StuffingFit
    """Window routing, decided before any price is compared."""
    queries_per_day: float
    """Volume the daily figures assume."""
    assumption: str
    """The traffic and caching assumption behind the cached figures, in one sentence."""
    retrieve_per_query: Cost
    """One retrieval query: k chunks plus question and output, plus retrieval extras."""
    retrieve_daily: Cost
    """Retrieval at the daily volume."""
    stuff_uncached_per_query: Cost | None
    """One query with the whole corpus at the input price."""
    stuff_uncached_daily: Cost | None
    """Uncached stuffing at the daily volume."""
    stuff_cache_write_per_query: Cost | None
    """A query that finds the cache cold and writes the corpus."""
    stuff_cache_hit_per_query: Cost | None
    """A query that reads the corpus from the cache."""
    stuff_cached_daily: Cost | None
    """Cached stuffing at the daily volume (writes plus hits)."""
    cache_writes_per_day: float
    """Cache writes the assumption implies at this volume."""
    cheapest: Arm
    """Cheapest arm that fits; ties go to retrieval (smaller prompts)."""
    caching_beats_uncached_above_qpd: float
    """Queries per day above which cached stuffing costs less than uncached."""
    retrieve_beats_cached_above_corpus_tokens: float
    """Corpus size above which retrieval costs less than cached stuffing, at this volume."""
    retrieve_beats_uncached_above_corpus_tokens: float
    """Corpus size above which retrieval costs less than uncached stuffing."""
    estimated: bool
    """True when any token count behind these figures was estimated."""

    @property
    def fits(self) -> bool:
        """Whether stuffing is possible at all."""
        return self.stuffing == "fits"


def stuff_vs_retrieve(
    corpus_tokens: int,
    queries_per_day: float,
    k: int,
    chunk_tokens: int,
    price: ModelPrice,
    headroom_tokens: int,
    *,
    question_tokens: int = 0,
    output_tokens: int = 0,
    cache_ttl: CacheTTL = "5m",
    active_hours: float = 24.0,
    batch: bool = False,
    retrieval_extra_per_query: Cost = NO_COST,
    estimated: bool,
) -> StuffVsRetrieve:
    """Route by window first, then compare the three arms and give break-even points.

    Stuffing is possible only when ``corpus_tokens + headroom_tokens`` fits
    ``price.context_window``; ``headroom_tokens`` must cover instructions,
    question and the largest ``max_tokens`` (output counts against the window)
    and should carry a margin when counts are estimated. Question and output
    tokens cost the same in every arm, so they cancel out of the break-evens.
    """
    check_tokens("headroom_tokens", headroom_tokens)
    if headroom_tokens < question_tokens + output_tokens:
        raise ValueError("headroom_tokens must cover question_tokens + output_tokens")
    args = {"question_tokens": question_tokens, "output_tokens": output_tokens, "estimated": estimated}
    margin = price.context_window - corpus_tokens - headroom_tokens
    fits = margin >= 0
    retrieve_q = retrieval_cost_per_query(k, chunk_tokens, price=price, batch=batch, **args) + retrieval_extra_per_query
    uncached_q = stuff_cost_per_query(corpus_tokens, price=price, cached=False, batch=batch, **args)
    write_q = call_cost(stuff_usage(corpus_tokens, cache="write", **args), price, batch=batch, cache_ttl=cache_ttl)
    hit_q = stuff_cost_per_query(corpus_tokens, price=price, cached=True, batch=batch, cache_ttl=cache_ttl, **args)
    cached_day = stuff_cached_daily_cost(
        corpus_tokens, queries_per_day, price, cache_ttl=cache_ttl, active_hours=active_hours, batch=batch, **args
    )
    day = {
        "retrieve": daily_cost(retrieve_q, queries_per_day),
        "stuff_cached": cached_day,
        "stuff_uncached": daily_cost(uncached_q, queries_per_day),
    }
    writes = cache_writes_per_day(queries_per_day, cache_ttl, active_hours)
    caching_qpd, over_cached, over_uncached = _break_evens(
        price, queries_per_day, k, chunk_tokens, writes, batch, cache_ttl, active_hours, retrieval_extra_per_query
    )
    return StuffVsRetrieve(
        model_id=price.model_id,
        corpus_tokens=corpus_tokens,
        headroom_tokens=headroom_tokens,
        context_window=price.context_window,
        window_margin_tokens=margin,
        stuffing="fits" if fits else "does not fit",
        queries_per_day=queries_per_day,
        assumption=_assumption(cache_ttl, active_hours),
        retrieve_per_query=retrieve_q,
        retrieve_daily=day["retrieve"],
        stuff_uncached_per_query=uncached_q if fits else None,
        stuff_uncached_daily=day["stuff_uncached"] if fits else None,
        stuff_cache_write_per_query=write_q if fits else None,
        stuff_cache_hit_per_query=hit_q if fits else None,
        stuff_cached_daily=cached_day if fits else None,
        cache_writes_per_day=writes,
        cheapest=_cheapest(day) if fits else "retrieve",
        caching_beats_uncached_above_qpd=caching_qpd,
        retrieve_beats_cached_above_corpus_tokens=over_cached,
        retrieve_beats_uncached_above_corpus_tokens=over_uncached,
        estimated=estimated or retrieval_extra_per_query.estimated,
    )


def _break_evens(
    price: ModelPrice,
    queries_per_day: float,
    k: int,
    chunk_tokens: int,
    writes: float,
    batch: bool,
    cache_ttl: CacheTTL,
    active_hours: float,
    extra: Cost,
) -> tuple[float, float, float]:
    """Queries per day above which caching beats uncached stuffing, and the corpus sizes above which
    retrieval beats cached and uncached stuffing (prices per token, batch discount included)."""
    multiplier = price.batch_multiplier if batch else 1.0
    u, r, w = (
        p / PER_MILLION * multiplier
        for p in (price.input_per_mtok, price.cache_read_per_mtok, price.cache_write_per_mtok(cache_ttl))
    )
    over_cached = _corpus_break_even(
        queries_per_day * (k * chunk_tokens * u + extra.usd),
        writes * w + (queries_per_day - writes) * r,
    )
    over_uncached = k * chunk_tokens + extra.usd / u if u > 0 else math.inf
    return caching_break_even_qpd(u, r, w, cache_ttl, active_hours), over_cached, over_uncached


def _cheapest(daily: Mapping[str, Cost]) -> Arm:
    """Arm with the lowest daily cost; dict order breaks ties (retrieval first)."""
    return min(daily, key=lambda arm: daily[arm].usd)  # type: ignore[return-value]


def _corpus_break_even(retrieval_usd: float, stuff_usd_per_corpus_token: float) -> float:
    """Corpus tokens at which stuffing costs as much as retrieval (inf: never)."""
    if stuff_usd_per_corpus_token <= 0:
        return math.inf
    return retrieval_usd / stuff_usd_per_corpus_token


def caching_break_even_qpd(
    input_usd: float, read_usd: float, write_usd: float, cache_ttl: CacheTTL = "5m", active_hours: float = 24.0
) -> float:
    """Queries per day above which cached stuffing beats uncached (prices in $ per token).

    Under the even-traffic assumption of :func:`cache_writes_per_day`, two
    conditions must hold: the gap between queries is within the TTL
    (``qpd >= active_minutes / ttl``), so only one write a day; and the one
    write plus ``qpd - 1`` hits cost less than ``qpd`` uncached prompts
    (``qpd > (write - read) / (input - read)``). Independent of corpus size
    and of the batch discount. ``math.inf`` when reading is not cheaper than
    input; ``0.0`` when even a write is cheaper than input.
    """
    if write_usd < input_usd:
        return 0.0
    if input_usd <= read_usd:
        return math.inf
    gap_bound = active_hours * 60 / ttl_minutes(cache_ttl)
    price_bound = (write_usd - read_usd) / (input_usd - read_usd)
    return max(gap_bound, price_bound)


def _assumption(cache_ttl: str, active_hours: float) -> str:
    """The traffic and caching assumption behind the cached figures, in one sentence."""
    return (
        f"Queries spread evenly over {active_hours:g} active hours a day; the corpus cache "
        f"({cache_ttl} lifetime, refreshed by each hit) is written by the first query of the day "
        f"and by every query whose gap since the previous one exceeds {TTL_MINUTES[cache_ttl]} minutes."
    )
