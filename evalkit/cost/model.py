"""Pure per-call cost model: dollars for one call, one query and one day, plus rerank, embedding and index size.

Arms priced (DESIGN.md section 6; :mod:`evalkit.cost.stuffing` compares them):

* **stuff, uncached**: the whole corpus goes into every prompt at the input price;
* **stuff, cached**: the corpus is a prompt-cache prefix; a query that finds
  the cache cold writes it (1.25x input for the 5-minute lifetime, 2x for the
  1-hour one), a query that finds it warm reads it (0.1x input);
* **retrieve**: k chunks go into the prompt at the input price, plus any
  per-query retrieval extras (rerank search units, query embedding).

Token counts come either from the target model's own counter or from
:func:`evalkit.cost.tokens.estimate_tokens`. Every :class:`Cost` carries
``estimated`` so that a number derived from an estimate is never shown as a
counted one; sums are estimated when any part is.

The one usage record is :class:`evalkit.records.Usage` (what every Answer carries);
:class:`TokenUsage` is that record built strictly for pricing: counts checked,
``estimated`` stated, optionally the tokenizer family. :func:`call_cost` prices either.

All prices are US dollars per million tokens (:mod:`evalkit.cost.prices`). Every
function here is pure: no I/O, no clock, no mutation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

from evalkit.records import Usage

if TYPE_CHECKING:
    from evalkit.cost.prices import CacheTTL, EmbedPrice, ModelPrice, RerankPrice

__all__ = [
    "NO_COST",
    "PER_MILLION",
    "TTL_MINUTES",
    "CacheUse",
    "Cost",
    "IndexSize",
    "TokenUsage",
    "cache_writes_per_day",
    "call_cost",
    "check_amount",
    "check_tokens",
    "daily_cost",
    "embedding_cost",
    "index_growth",
    "index_size",
    "reembed_cost",
    "rerank_cost",
    "rerank_search_units",
    "retrieval_cost_per_query",
    "retrieval_usage",
    "stuff_cached_daily_cost",
    "stuff_cost_per_query",
    "stuff_usage",
    "ttl_minutes",
]

CacheUse = Literal["off", "write", "read"]
"""How a stuffed prompt meets the prompt cache."""

PER_MILLION = 1_000_000
"""Prices are per million tokens."""
TTL_MINUTES: Mapping[str, int] = MappingProxyType({"5m": 5, "1h": 60})
"""Lifetime of a prompt-cache entry, refreshed by every hit."""


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class Cost:
    """An amount of US dollars and whether any token count behind it was estimated."""

    usd: float
    """Dollars."""
    estimated: bool
    """True when derived from a local token estimate rather than the model's counter."""

    def __add__(self, other: Cost) -> Cost:
        """Sum; estimated when either part is."""
        return Cost(self.usd + other.usd, self.estimated or other.estimated)

    def scaled(self, factor: float) -> Cost:
        """This cost times a non-negative factor (e.g. queries per day)."""
        check_amount("factor", factor)
        return Cost(self.usd * factor, self.estimated)


NO_COST = Cost(0.0, estimated=False)
"""Zero dollars, exactly known."""


@dataclass(frozen=True)
class TokenUsage(Usage):
    """:class:`evalkit.records.Usage` built for pricing: tokens billed for one call, counts checked.

    The Anthropic ``usage`` convention: ``input_tokens`` excludes the cached part, so the prompt is
    ``input_tokens + cache_creation_input_tokens + cache_read_input_tokens``. Unlike a provider's
    Usage, the two main counts and ``estimated`` must be given, and a tokenizer family may be named.
    """

    input_tokens: int
    """Uncached prompt tokens, billed at the input price."""
    output_tokens: int
    """Generated tokens, billed at the output price."""
    cache_creation_input_tokens: int = 0
    """Prompt tokens written to the cache, billed at the write price of the lifetime."""
    cache_read_input_tokens: int = 0
    """Prompt tokens read from the cache, billed at the read price."""
    estimated: bool = field(kw_only=True)
    """True when counted by :func:`estimate_tokens` rather than the model's own counter."""
    tokenizer_family: str = field(default="", kw_only=True)
    """Tokenizer that produced the counts; when set, pricing for another family is refused."""

    def __post_init__(self) -> None:
        """Reject negative or non-integer counts."""
        for name in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
            check_tokens(name, getattr(self, name))

    @property
    def prompt_tokens(self) -> int:
        """All prompt tokens, cached or not (what counts against the window)."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens


@dataclass(frozen=True)
class IndexSize:
    """Size of one chunking's index compared with the same corpus chunked without overlap."""

    chunks: int
    """Chunks (= vectors) in the index."""
    stored_chars: int
    """Characters of chunk text stored (overlap is stored twice)."""
    growth_vs_no_overlap: float
    """Relative growth in chunk count: 216 vs 172 chunks gives 0.2558 (+25.6%)."""


# --------------------------------------------------------------------------- validation


def check_tokens(name: str, value: object) -> None:
    """A token (or item) count: a non-negative int, never a bool."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}")


def check_amount(name: str, value: object) -> None:
    """A volume or factor: a finite non-negative number."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
    if not ok:
        raise ValueError(f"{name} must be a finite non-negative number, got {value!r}")


def ttl_minutes(cache_ttl: str) -> int:
    """Minutes of a prompt-cache lifetime (``5m`` or ``1h``)."""
    if cache_ttl not in TTL_MINUTES:
        raise ValueError(f"cache_ttl must be one of {', '.join(TTL_MINUTES)}, got {cache_ttl!r}")
    return TTL_MINUTES[cache_ttl]


# --------------------------------------------------------------------------- one call


def call_cost(usage: Usage, price: ModelPrice, batch: bool = False, cache_ttl: CacheTTL = "5m") -> Cost:
    """Dollars for one call: a :class:`TokenUsage`, or an Answer's own :class:`evalkit.records.Usage`.

    Every cache write in ``usage`` is priced at the ``cache_ttl`` lifetime.
    With ``batch`` the whole bill, cache prices included, is multiplied by
    ``price.batch_multiplier`` (Anthropic: the discounts stack).
    """
    family = usage.tokenizer_family if isinstance(usage, TokenUsage) else ""
    if family and family != price.tokenizer_family:
        raise ValueError(
            f"token counts from tokenizer {family!r} cannot price "
            f"{price.model_id!r} (tokenizer {price.tokenizer_family!r}); count again for this model"
        )
    per_mtok_sum = (
        usage.input_tokens * price.input_per_mtok
        + usage.output_tokens * price.output_per_mtok
        + usage.cache_creation_input_tokens * price.cache_write_per_mtok(cache_ttl)
        + usage.cache_read_input_tokens * price.cache_read_per_mtok
    )
    multiplier = price.batch_multiplier if batch else 1.0
    return Cost(per_mtok_sum / PER_MILLION * multiplier, usage.estimated)


# --------------------------------------------------------------------------- per query


def stuff_usage(
    corpus_tokens: int, question_tokens: int, output_tokens: int, cache: CacheUse, *, estimated: bool
) -> TokenUsage:
    """Tokens of one stuffed query: corpus (cached prefix or not), then question, then answer."""
    for name, value in (("corpus_tokens", corpus_tokens), ("question_tokens", question_tokens)):
        check_tokens(name, value)
    if cache not in ("off", "write", "read"):
        raise ValueError(f"cache must be 'off', 'write' or 'read', got {cache!r}")
    return TokenUsage(
        input_tokens=question_tokens + (corpus_tokens if cache == "off" else 0),
        output_tokens=output_tokens,
        cache_creation_input_tokens=corpus_tokens if cache == "write" else 0,
        cache_read_input_tokens=corpus_tokens if cache == "read" else 0,
        estimated=estimated,
    )


def stuff_cost_per_query(
    corpus_tokens: int,
    question_tokens: int,
    output_tokens: int,
    price: ModelPrice,
    cached: bool,
    *,
    batch: bool = False,
    cache_ttl: CacheTTL = "5m",
    estimated: bool,
) -> Cost:
    """One stuffed query: uncached, or (``cached=True``) a cache hit on the corpus.

    The query that writes the cache is ``call_cost(stuff_usage(..., "write"))``;
    :func:`stuff_cached_daily_cost` mixes writes and hits.
    """
    usage = stuff_usage(corpus_tokens, question_tokens, output_tokens, "read" if cached else "off", estimated=estimated)
    return call_cost(usage, price, batch=batch, cache_ttl=cache_ttl)


def retrieval_usage(
    k: int, chunk_tokens: int, question_tokens: int, output_tokens: int, *, estimated: bool
) -> TokenUsage:
    """Tokens of one retrieval query: k chunks of ``chunk_tokens`` (mean) plus question, then answer."""
    for name, value in (("k", k), ("chunk_tokens", chunk_tokens), ("question_tokens", question_tokens)):
        check_tokens(name, value)
    return TokenUsage(k * chunk_tokens + question_tokens, output_tokens, estimated=estimated)


def retrieval_cost_per_query(
    k: int,
    chunk_tokens: int,
    question_tokens: int,
    output_tokens: int,
    price: ModelPrice,
    *,
    batch: bool = False,
    estimated: bool,
) -> Cost:
    """The generation call of one retrieval query (rerank and embedding are priced separately)."""
    usage = retrieval_usage(k, chunk_tokens, question_tokens, output_tokens, estimated=estimated)
    return call_cost(usage, price, batch=batch)


# --------------------------------------------------------------------------- per day


def daily_cost(per_query: Cost, queries_per_day: float) -> Cost:
    """A per-query cost at a daily volume."""
    return per_query.scaled(queries_per_day)


def cache_writes_per_day(queries_per_day: float, cache_ttl: CacheTTL = "5m", active_hours: float = 24.0) -> float:
    """Cache writes a day under the even-traffic assumption.

    Assumption: the queries are spread evenly over ``active_hours`` a day, so
    consecutive queries are ``active_hours * 60 / queries_per_day`` minutes
    apart. A hit refreshes the cache lifetime, so when that gap is at most the
    TTL only the first query of the day writes (the cache is taken as cold at
    the start of each day, even for round-the-clock traffic: conservative);
    when the gap exceeds the TTL every query writes. Real traffic is burstier,
    which favours caching: this is the pessimistic end for a given volume.
    """
    check_amount("queries_per_day", queries_per_day)
    if not (isinstance(active_hours, (int, float)) and 0 < active_hours <= 24):
        raise ValueError(f"active_hours must be in (0, 24], got {active_hours!r}")
    ttl = ttl_minutes(cache_ttl)
    if queries_per_day == 0:
        return 0.0
    gap_minutes = active_hours * 60 / queries_per_day
    return float(queries_per_day) if gap_minutes > ttl else min(float(queries_per_day), 1.0)


def stuff_cached_daily_cost(
    corpus_tokens: int,
    queries_per_day: float,
    price: ModelPrice,
    *,
    question_tokens: int = 0,
    output_tokens: int = 0,
    cache_ttl: CacheTTL = "5m",
    active_hours: float = 24.0,
    batch: bool = False,
    estimated: bool,
) -> Cost:
    """A day of cached stuffing: writes as :func:`cache_writes_per_day` assumes, hits for the rest."""
    writes = cache_writes_per_day(queries_per_day, cache_ttl, active_hours)
    write = call_cost(
        stuff_usage(corpus_tokens, question_tokens, output_tokens, "write", estimated=estimated),
        price,
        batch=batch,
        cache_ttl=cache_ttl,
    )
    hit = call_cost(
        stuff_usage(corpus_tokens, question_tokens, output_tokens, "read", estimated=estimated),
        price,
        batch=batch,
        cache_ttl=cache_ttl,
    )
    return write.scaled(writes) + hit.scaled(queries_per_day - writes)


# --------------------------------------------------------------------------- rerank, embedding


def rerank_search_units(n_documents: int, per_search: int = 100) -> int:
    """Search units for one query: ``ceil(n_documents / per_search)``; 0 documents cost 0."""
    check_tokens("n_documents", n_documents)
    if isinstance(per_search, bool) or not isinstance(per_search, int) or per_search < 1:
        raise ValueError(f"per_search must be a positive int, got {per_search!r}")
    return -(-n_documents // per_search)


def rerank_cost(n_queries: int, n_documents_each: int, price: RerankPrice) -> Cost:
    """Rerank ``n_queries`` queries of ``n_documents_each`` documents, one request per query.

    Units are counted per request: a pool split into several requests costs
    more unless each request holds a multiple of ``price.documents_per_search``.
    Counts are exact, so the cost is never estimated.
    """
    check_tokens("n_queries", n_queries)
    units = n_queries * rerank_search_units(n_documents_each, price.documents_per_search)
    return Cost(units * price.per_1000_searches / 1000, estimated=False)


def embedding_cost(tokens: int, price: EmbedPrice, *, estimated: bool) -> Cost:
    """Embedding ``tokens`` tokens (documents or queries)."""
    check_tokens("tokens", tokens)
    return Cost(tokens * price.input_per_mtok / PER_MILLION, estimated)


def reembed_cost(dirty_chunk_tokens: Sequence[int], price: EmbedPrice, *, estimated: bool) -> Cost:
    """Re-embedding only the chunks of changed ("dirty") documents: one token count per chunk.

    Unchanged chunks are served from the content-addressed cache and cost 0;
    pass only chunks whose (model, text) key is not yet cached.
    """
    for i, tokens in enumerate(dirty_chunk_tokens):
        check_tokens(f"dirty_chunk_tokens[{i}]", tokens)
    return embedding_cost(sum(dirty_chunk_tokens), price, estimated=estimated)


# --------------------------------------------------------------------------- index size


def index_growth(chunk_count: int, baseline_chunk_count: int) -> float:
    """Relative growth in chunks (= vectors) over the no-overlap chunking: 216 vs 172 -> 0.2558."""
    check_tokens("chunk_count", chunk_count)
    check_tokens("baseline_chunk_count", baseline_chunk_count)
    if baseline_chunk_count == 0:
        raise ValueError("baseline_chunk_count must be positive")
    return (chunk_count - baseline_chunk_count) / baseline_chunk_count


def index_size(chunk_chars: Sequence[int], baseline_chunk_count: int) -> IndexSize:
    """Size of an index from its chunks' lengths (characters) and the no-overlap chunk count."""
    for i, chars in enumerate(chunk_chars):
        check_tokens(f"chunk_chars[{i}]", chars)
    return IndexSize(
        chunks=len(chunk_chars),
        stored_chars=sum(chunk_chars),
        growth_vs_no_overlap=index_growth(len(chunk_chars), baseline_chunk_count),
    )
