"""Pure cost model: dollars per call, per query and per day for each arm.

Arms compared (DESIGN.md section 6):

* **stuff, uncached**: the whole corpus goes into every prompt at the input price;
* **stuff, cached**: the corpus is a prompt-cache prefix; a query that finds
  the cache cold writes it (1.25x input for the 5-minute lifetime, 2x for the
  1-hour one), a query that finds it warm reads it (0.1x input);
* **retrieve**: k chunks go into the prompt at the input price, plus any
  per-query retrieval extras (rerank search units, query embedding).

Token counts come either from the target model's own counter or from
:func:`estimate_tokens`. Every :class:`Cost` carries ``estimated`` so that a
number derived from an estimate is never shown as a counted one; sums are
estimated when any part is. Token counts belong to one tokenizer family
(Claude 4.7+ tokenizers count about 30% more tokens than earlier ones for the
same text) and must never be reused across families.

All prices are US dollars per million tokens (:mod:`evalkit.cost.prices`). Every
function here is pure: no I/O, no clock, no mutation.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from evalkit.cost.prices import CacheTTL, EmbedPrice, ModelPrice, RerankPrice

Arm = Literal["stuff_uncached", "stuff_cached", "retrieve"]
"""The three ways to put the corpus in front of the model."""
CacheUse = Literal["off", "write", "read"]
"""How a stuffed prompt meets the prompt cache."""
StuffingFit = Literal["fits", "does not fit"]
"""Whether corpus plus headroom fits the model's context window."""

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
        _check_amount("factor", factor)
        return Cost(self.usd * factor, self.estimated)


NO_COST = Cost(0.0, estimated=False)
"""Zero dollars, exactly known."""


@dataclass(frozen=True)
class TokenUsage:
    """Tokens billed for one model call, in the Anthropic ``usage`` convention.

    ``input_tokens`` excludes the cached part: the prompt is
    ``input_tokens + cache_creation_input_tokens + cache_read_input_tokens``.
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
            _check_tokens(name, getattr(self, name))

    @property
    def prompt_tokens(self) -> int:
        """All prompt tokens, cached or not (what counts against the window)."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens


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


def _check_tokens(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}")


def _check_amount(name: str, value: object) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
    if not ok:
        raise ValueError(f"{name} must be a finite non-negative number, got {value!r}")


def _ttl_minutes(cache_ttl: str) -> int:
    if cache_ttl not in TTL_MINUTES:
        raise ValueError(f"cache_ttl must be one of {', '.join(TTL_MINUTES)}, got {cache_ttl!r}")
    return TTL_MINUTES[cache_ttl]


# --------------------------------------------------------------------------- one call


def call_cost(usage: TokenUsage, price: ModelPrice, batch: bool = False, cache_ttl: CacheTTL = "5m") -> Cost:
    """Dollars for one call.

    Every cache write in ``usage`` is priced at the ``cache_ttl`` lifetime.
    With ``batch`` the whole bill, cache prices included, is multiplied by
    ``price.batch_multiplier`` (Anthropic: the discounts stack).
    """
    if usage.tokenizer_family and usage.tokenizer_family != price.tokenizer_family:
        raise ValueError(
            f"token counts from tokenizer {usage.tokenizer_family!r} cannot price "
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
        _check_tokens(name, value)
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
        _check_tokens(name, value)
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
    _check_amount("queries_per_day", queries_per_day)
    if not (isinstance(active_hours, (int, float)) and 0 < active_hours <= 24):
        raise ValueError(f"active_hours must be in (0, 24], got {active_hours!r}")
    ttl = _ttl_minutes(cache_ttl)
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


def _assumption(cache_ttl: str, active_hours: float) -> str:
    return (
        f"Queries spread evenly over {active_hours:g} active hours a day; the corpus cache "
        f"({cache_ttl} lifetime, refreshed by each hit) is written by the first query of the day "
        f"and by every query whose gap since the previous one exceeds {TTL_MINUTES[cache_ttl]} minutes."
    )


# --------------------------------------------------------------------------- stuff vs retrieve


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
    _check_tokens("headroom_tokens", headroom_tokens)
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
    multiplier = price.batch_multiplier if batch else 1.0
    u, r, w = (
        p / PER_MILLION * multiplier
        for p in (price.input_per_mtok, price.cache_read_per_mtok, price.cache_write_per_mtok(cache_ttl))
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
        caching_beats_uncached_above_qpd=caching_break_even_qpd(u, r, w, cache_ttl, active_hours),
        retrieve_beats_cached_above_corpus_tokens=_corpus_break_even(
            queries_per_day * (k * chunk_tokens * u + retrieval_extra_per_query.usd),
            writes * w + (queries_per_day - writes) * r,
        ),
        retrieve_beats_uncached_above_corpus_tokens=(
            k * chunk_tokens + retrieval_extra_per_query.usd / u if u > 0 else math.inf
        ),
        estimated=estimated or retrieval_extra_per_query.estimated,
    )


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
    gap_bound = active_hours * 60 / _ttl_minutes(cache_ttl)
    price_bound = (write_usd - read_usd) / (input_usd - read_usd)
    return max(gap_bound, price_bound)


# --------------------------------------------------------------------------- rerank, embedding


def rerank_search_units(n_documents: int, per_search: int = 100) -> int:
    """Search units for one query: ``ceil(n_documents / per_search)``; 0 documents cost 0."""
    _check_tokens("n_documents", n_documents)
    if isinstance(per_search, bool) or not isinstance(per_search, int) or per_search < 1:
        raise ValueError(f"per_search must be a positive int, got {per_search!r}")
    return -(-n_documents // per_search)


def rerank_cost(n_queries: int, n_documents_each: int, price: RerankPrice) -> Cost:
    """Rerank ``n_queries`` queries of ``n_documents_each`` documents, one request per query.

    Units are counted per request: a pool split into several requests costs
    more unless each request holds a multiple of ``price.documents_per_search``.
    Counts are exact, so the cost is never estimated.
    """
    _check_tokens("n_queries", n_queries)
    units = n_queries * rerank_search_units(n_documents_each, price.documents_per_search)
    return Cost(units * price.per_1000_searches / 1000, estimated=False)


def embedding_cost(tokens: int, price: EmbedPrice, *, estimated: bool) -> Cost:
    """Embedding ``tokens`` tokens (documents or queries)."""
    _check_tokens("tokens", tokens)
    return Cost(tokens * price.input_per_mtok / PER_MILLION, estimated)


def reembed_cost(dirty_chunk_tokens: Sequence[int], price: EmbedPrice, *, estimated: bool) -> Cost:
    """Re-embedding only the chunks of changed ("dirty") documents: one token count per chunk.

    Unchanged chunks are served from the content-addressed cache and cost 0;
    pass only chunks whose (model, text) key is not yet cached.
    """
    for i, tokens in enumerate(dirty_chunk_tokens):
        _check_tokens(f"dirty_chunk_tokens[{i}]", tokens)
    return embedding_cost(sum(dirty_chunk_tokens), price, estimated=estimated)


# --------------------------------------------------------------------------- index size


def index_growth(chunk_count: int, baseline_chunk_count: int) -> float:
    """Relative growth in chunks (= vectors) over the no-overlap chunking: 216 vs 172 -> 0.2558."""
    _check_tokens("chunk_count", chunk_count)
    _check_tokens("baseline_chunk_count", baseline_chunk_count)
    if baseline_chunk_count == 0:
        raise ValueError("baseline_chunk_count must be positive")
    return (chunk_count - baseline_chunk_count) / baseline_chunk_count


def index_size(chunk_chars: Sequence[int], baseline_chunk_count: int) -> IndexSize:
    """Size of an index from its chunks' lengths (characters) and the no-overlap chunk count."""
    for i, chars in enumerate(chunk_chars):
        _check_tokens(f"chunk_chars[{i}]", chars)
    return IndexSize(
        chunks=len(chunk_chars),
        stored_chars=sum(chunk_chars),
        growth_vs_no_overlap=index_growth(len(chunk_chars), baseline_chunk_count),
    )


# --------------------------------------------------------------------------- token estimate

TOKENIZER_SCALE_PERCENT: Mapping[str, int] = MappingProxyType(
    {
        "generic": 100,
        "claude-pre-4.7": 100,
        "claude-4.7+": 130,
        "cohere-embed-v4": 100,
        "qwen2": 100,
        "gemma3": 100,
        "use-multilingual": 100,
        "xlm-roberta": 100,
        "bert-wordpiece": 100,
    }
)
"""Scale of each tokenizer family over the base heuristic (Claude 4.7+: about 30% more)."""

_CJK = re.compile(
    "[\u1100-\u11ff\u2e80-\u303f\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7af\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0003134f]"
)


def estimate_tokens(text: str, model_family: str) -> int:
    """A local, labelled estimate of the tokens ``text`` costs in a tokenizer family.

    Heuristic, deliberately on the high side (an over-estimate keeps both
    the budget and the window check safe): about 4 ASCII characters per token
    (English prose, spaces included); 1 token per CJK character (Han, kana,
    Hangul, full-width forms; real tokenizers give 1 token per 1-1.5 CJK
    characters); 2 other non-ASCII characters per token (accented Latin,
    Cyrillic, Greek, ...). The sum is scaled by the family's
    :data:`TOKENIZER_SCALE_PERCENT` (Claude 4.7+: x1.3) and rounded up.
    Any cost computed from it must be flagged ``estimated=True``; use the
    model's own counter (Anthropic ``count_tokens``) when a key exists.
    """
    if model_family not in TOKENIZER_SCALE_PERCENT:
        known = ", ".join(sorted(TOKENIZER_SCALE_PERCENT))
        raise ValueError(f"unknown tokenizer family {model_family!r}; known: {known}")
    cjk = len(_CJK.findall(text))
    ascii_chars = sum(1 for ch in text if ch < "\x80")
    other = len(text) - cjk - ascii_chars
    quarter_tokens = ascii_chars + 2 * other + 4 * cjk
    return -(-quarter_tokens * TOKENIZER_SCALE_PERCENT[model_family] // 400)
