"""Cost model and price tables: worked examples by hand, then properties.

Prices used (conf/pricing/anthropic.yaml, per million tokens):
Claude Sonnet 5 input $2, output $10, cache write 5 min $2.50 (1.25x),
1 h $4 (2x), cache read $0.20 (0.1x), batch x0.5, window 1,000,000;
Claude Haiku 4.5 input $1, window 200,000.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from evalkit.cost.budget import BudgetExceeded, SpendGuard
from evalkit.cost.model import (
    NO_COST,
    Cost,
    TokenUsage,
    cache_writes_per_day,
    call_cost,
    daily_cost,
    embedding_cost,
    index_growth,
    index_size,
    reembed_cost,
    rerank_cost,
    rerank_search_units,
    retrieval_cost_per_query,
    stuff_cached_daily_cost,
    stuff_cost_per_query,
    stuff_usage,
)
from evalkit.cost.prices import ModelPrice, PriceTable, PricingError, load_price_table, price_table
from evalkit.cost.stuffing import stuff_vs_retrieve
from evalkit.cost.tokens import TOKENIZER_SCALE_PERCENT, estimate_tokens
from evalkit.records import Usage

PRICING = Path(__file__).resolve().parents[1] / "conf" / "pricing"
TOL = 1e-9


@pytest.fixture(scope="module")
def table() -> PriceTable:
    return load_price_table(PRICING)


@pytest.fixture(scope="module")
def sonnet(table: PriceTable) -> ModelPrice:
    return table.model("claude-sonnet-5")


@pytest.fixture(scope="module")
def haiku(table: PriceTable) -> ModelPrice:
    return table.model("claude-haiku-4-5")


def approx(x: float) -> object:
    return pytest.approx(x, abs=TOL)


# A price fixed in the test itself, for property tests (no fixture inside @given).
SONNET = ModelPrice(
    model_id="claude-sonnet-5",
    provider="anthropic",
    input_per_mtok=2.0,
    output_per_mtok=10.0,
    cache_write_5m_per_mtok=2.5,
    cache_write_1h_per_mtok=4.0,
    cache_read_per_mtok=0.2,
    batch_multiplier=0.5,
    context_window=1_000_000,
    tokenizer_family="claude-4.7+",
    checked_on="2026-09",
    source="test",
)


def test_fixed_price_matches_yaml(sonnet: ModelPrice) -> None:
    assert dataclasses.replace(sonnet, source="test", note="") == SONNET


# --------------------------------------------------------------------------- worked examples, per query


def test_stuffing_200k_uncached_costs_40_cents(sonnet: ModelPrice) -> None:
    # 200,000 tokens x $2 / 1,000,000 = $0.40 (input only)
    cost = stuff_cost_per_query(200_000, 0, 0, sonnet, cached=False, estimated=False)
    assert cost.usd == approx(0.40)
    assert cost.estimated is False


def test_stuffing_200k_cache_hit_costs_4_cents(sonnet: ModelPrice) -> None:
    # 200,000 tokens x $0.20 (0.1 x $2) / 1,000,000 = $0.04
    cost = stuff_cost_per_query(200_000, 0, 0, sonnet, cached=True, estimated=False)
    assert cost.usd == approx(0.04)


def test_stuffing_200k_first_cache_write_costs_50_cents(sonnet: ModelPrice) -> None:
    # 200,000 tokens x $2.50 (1.25 x $2) / 1,000,000 = $0.50
    usage = TokenUsage(0, 0, cache_creation_input_tokens=200_000, estimated=False)
    assert call_cost(usage, sonnet).usd == approx(0.50)
    assert call_cost(stuff_usage(200_000, 0, 0, "write", estimated=False), sonnet).usd == approx(0.50)
    # 1-hour lifetime: 200,000 x $4 (2 x $2) / 1,000,000 = $0.80
    assert call_cost(usage, sonnet, cache_ttl="1h").usd == approx(0.80)


def test_retrieving_4k_tokens_costs_0_8_cents(sonnet: ModelPrice) -> None:
    # k=8 chunks x 500 tokens = 4,000 tokens x $2 / 1,000,000 = $0.008
    assert retrieval_cost_per_query(8, 500, 0, 0, sonnet, estimated=False).usd == approx(0.008)


def test_question_and_output_add_to_every_arm(sonnet: ModelPrice) -> None:
    # question 100 x $2 + output 500 x $10 = $0.0002 + $0.005 = $0.0052 on top of each arm
    extra = 0.0052
    assert stuff_cost_per_query(200_000, 100, 500, sonnet, cached=False, estimated=False).usd == approx(0.40 + extra)
    assert stuff_cost_per_query(200_000, 100, 500, sonnet, cached=True, estimated=False).usd == approx(0.04 + extra)
    assert retrieval_cost_per_query(8, 500, 100, 500, sonnet, estimated=False).usd == approx(0.008 + extra)


def test_batch_halves_the_price(sonnet: ModelPrice) -> None:
    # $0.40 x 0.5 = $0.20; the discount stacks with cache prices: $0.04 x 0.5 = $0.02
    assert stuff_cost_per_query(200_000, 0, 0, sonnet, cached=False, batch=True, estimated=False).usd == approx(0.20)
    assert stuff_cost_per_query(200_000, 0, 0, sonnet, cached=True, batch=True, estimated=False).usd == approx(0.02)


# --------------------------------------------------------------------------- worked examples, per day


def test_daily_costs_at_100_queries(sonnet: ModelPrice) -> None:
    uncached = stuff_cost_per_query(200_000, 0, 0, sonnet, cached=False, estimated=False)
    hit = stuff_cost_per_query(200_000, 0, 0, sonnet, cached=True, estimated=False)
    retrieve = retrieval_cost_per_query(8, 500, 0, 0, sonnet, estimated=False)
    assert daily_cost(uncached, 100).usd == approx(40.0)  # 100 x $0.40
    assert daily_cost(hit, 100).usd == approx(4.0)  # 100 x $0.04, if every query hit the cache
    assert daily_cost(retrieve, 100).usd == approx(0.80)  # 100 x $0.008


def test_cached_daily_round_the_clock_5m_every_query_writes(sonnet: ModelPrice) -> None:
    # 100 queries over 24 h: one every 14.4 min > 5 min TTL, so each finds the cache cold:
    # 100 writes x $0.50 = $50 (worse than uncached $40)
    assert cache_writes_per_day(100, "5m", 24) == 100
    cost = stuff_cached_daily_cost(200_000, 100, sonnet, active_hours=24, estimated=False)
    assert cost.usd == approx(50.0)


def test_cached_daily_office_hours_one_write(sonnet: ModelPrice) -> None:
    # 100 queries over 8 h: one every 4.8 min <= 5 min, each hit refreshes the cache:
    # 1 write x $0.50 + 99 hits x $0.04 = $0.50 + $3.96 = $4.46
    assert cache_writes_per_day(100, "5m", 8) == 1
    cost = stuff_cached_daily_cost(200_000, 100, sonnet, active_hours=8, estimated=False)
    assert cost.usd == approx(4.46)


def test_cached_daily_one_hour_ttl(sonnet: ModelPrice) -> None:
    # 100 queries over 24 h: gap 14.4 min <= 60 min: 1 write x $0.80 + 99 x $0.04 = $4.76
    cost = stuff_cached_daily_cost(200_000, 100, sonnet, cache_ttl="1h", active_hours=24, estimated=False)
    assert cost.usd == approx(4.76)


def test_cache_writes_edge_cases() -> None:
    assert cache_writes_per_day(0) == 0
    assert cache_writes_per_day(0.5) == 0.5  # a query every other day: each one writes
    # gap exactly the TTL counts as a hit: 288 queries over 24 h = one per 5 min
    assert cache_writes_per_day(288, "5m", 24) == 1
    assert cache_writes_per_day(287, "5m", 24) == 287
    with pytest.raises(ValueError, match="active_hours"):
        cache_writes_per_day(10, "5m", 0)
    with pytest.raises(ValueError, match="cache_ttl"):
        cache_writes_per_day(10, "10m", 8)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- stuff vs retrieve


def test_haiku_cannot_stuff_250k(haiku: ModelPrice) -> None:
    # 250,000 + 4,000 headroom > 200,000 window: routed before any price is compared
    result = stuff_vs_retrieve(250_000, 100, 8, 500, haiku, 4_000, estimated=True)
    assert result.stuffing == "does not fit"
    assert not result.fits
    assert result.window_margin_tokens == 200_000 - 254_000
    assert result.cheapest == "retrieve"
    assert result.stuff_uncached_per_query is None
    assert result.stuff_cached_daily is None
    # 8 x 500 = 4,000 tokens x $1 / 1e6 = $0.004 a query, $0.40 a day
    assert result.retrieve_per_query.usd == approx(0.004)
    assert result.retrieve_daily.usd == approx(0.40)
    assert result.estimated is True


def test_window_boundary(haiku: ModelPrice) -> None:
    # 196,000 + 4,000 = 200,000 exactly fits; one token more does not
    assert stuff_vs_retrieve(196_000, 10, 8, 500, haiku, 4_000, estimated=False).fits
    assert not stuff_vs_retrieve(196_001, 10, 8, 500, haiku, 4_000, estimated=False).fits
    with pytest.raises(ValueError, match="headroom"):
        stuff_vs_retrieve(1_000, 10, 8, 500, haiku, 100, question_tokens=50, output_tokens=100, estimated=False)


def test_sonnet_200k_at_100_queries(sonnet: ModelPrice) -> None:
    result = stuff_vs_retrieve(200_000, 100, 8, 500, sonnet, 8_000, active_hours=8, estimated=False)
    assert result.fits
    assert result.stuff_uncached_daily.usd == approx(40.0)  # 100 x $0.40
    assert result.stuff_cached_daily.usd == approx(4.46)  # $0.50 + 99 x $0.04
    assert result.retrieve_daily.usd == approx(0.80)  # 100 x $0.008
    assert result.stuff_cache_write_per_query.usd == approx(0.50)
    assert result.stuff_cache_hit_per_query.usd == approx(0.04)
    assert result.cheapest == "retrieve"
    # caching beats uncached when both hold:
    #   gap within TTL: qpd >= 8 h x 60 / 5 min = 96
    #   one write + (qpd-1) hits < qpd uncached: qpd > (2.50 - 0.20) / (2.00 - 0.20) = 1.28
    assert result.caching_beats_uncached_above_qpd == approx(96.0)
    # retrieval beats cached stuffing above C tokens where
    #   C x (1 x $2.50 + 99 x $0.20) / 1e6 = 100 x 4,000 x $2 / 1e6
    #   C = 800,000 / 22.3 = 35,874.4 tokens
    assert result.retrieve_beats_cached_above_corpus_tokens == approx(800_000 / 22.3)
    # retrieval beats uncached stuffing above the 4,000 tokens it retrieves
    assert result.retrieve_beats_uncached_above_corpus_tokens == approx(4_000)
    assert "evenly over 8 active hours" in result.assumption


def test_caching_break_even_round_the_clock(sonnet: ModelPrice) -> None:
    # 24 h x 60 / 5 min = 288 queries a day before the cache stays warm
    assert stuff_vs_retrieve(200_000, 100, 8, 500, sonnet, 8_000, estimated=False).caching_beats_uncached_above_qpd == (
        approx(288.0)
    )
    # 1 h TTL: 24 x 60 / 60 = 24, above (4.00 - 0.20) / (2.00 - 0.20) = 2.11
    one_hour = stuff_vs_retrieve(200_000, 100, 8, 500, sonnet, 8_000, cache_ttl="1h", estimated=False)
    assert one_hour.caching_beats_uncached_above_qpd == approx(24.0)
    assert one_hour.cheapest == "retrieve"


def test_cached_stuffing_wins_when_retrieval_sends_as_much(sonnet: ModelPrice) -> None:
    # k=100 chunks x 2,000 tokens = 200,000 tokens retrieved: $40/day, cached stuffing $4.46/day
    result = stuff_vs_retrieve(200_000, 100, 100, 2_000, sonnet, 8_000, active_hours=8, estimated=False)
    assert result.cheapest == "stuff_cached"


def test_retrieval_extra_counts_and_ties_go_to_retrieval(table: PriceTable) -> None:
    local = table.model("qwen2.5-coder-1.5b-instruct-gguf")
    result = stuff_vs_retrieve(10_000, 100, 5, 400, local, 2_000, estimated=True)
    assert result.retrieve_daily.usd == 0 == result.stuff_uncached_daily.usd
    assert result.cheapest == "retrieve"
    assert math.isinf(result.caching_beats_uncached_above_qpd)
    # rerank 100 documents per query = 1 search unit = $0.002 a query
    rerank = rerank_cost(1, 100, table.reranker("rerank-v3.5"))
    priced = stuff_vs_retrieve(
        200_000, 100, 8, 500, table.model("claude-sonnet-5"), 8_000, retrieval_extra_per_query=rerank, estimated=False
    )
    assert priced.retrieve_per_query.usd == approx(0.008 + 0.002)


# --------------------------------------------------------------------------- rerank, embedding, index


def test_rerank_search_units() -> None:
    assert rerank_search_units(250) == 3  # ceil(250 / 100)
    assert rerank_search_units(0) == 0  # a query with no documents costs nothing
    assert rerank_search_units(1) == 1
    assert rerank_search_units(100) == 1
    assert rerank_search_units(101) == 2
    assert rerank_search_units(250, per_search=50) == 5
    with pytest.raises(ValueError):
        rerank_search_units(-1)


def test_rerank_cost(table: PriceTable) -> None:
    cohere = table.reranker("rerank-v3.5")
    # 1,000 queries x 3 units (250 documents) = 3,000 units x $2 / 1,000 = $6
    cost = rerank_cost(1_000, 250, cohere)
    assert cost.usd == approx(6.0)
    assert cost.estimated is False
    assert rerank_cost(1_000, 0, cohere).usd == 0


def test_embedding_and_reembed(table: PriceTable) -> None:
    embed = table.embedder("embed-v4.0")
    # 1,000,000 tokens x $0.12 / 1e6 = $0.12
    assert embedding_cost(1_000_000, embed, estimated=False).usd == approx(0.12)
    # only dirty chunks: 500 + 700 + 300 = 1,500 tokens x $0.12 / 1e6 = $0.00018
    cost = reembed_cost([500, 700, 300], embed, estimated=True)
    assert cost.usd == approx(0.00018)
    assert cost.estimated is True
    assert reembed_cost([], embed, estimated=False).usd == 0


def test_index_growth_172_to_216() -> None:
    # 216 / 172 - 1 = 44 / 172 = 0.2558: +25.6% index at 20% overlap
    growth = index_growth(216, 172)
    assert growth == approx(44 / 172)
    assert round(growth * 100, 1) == 25.6
    size = index_size([500] * 216, baseline_chunk_count=172)
    assert size.chunks == 216
    assert size.stored_chars == 108_000
    assert size.growth_vs_no_overlap == approx(44 / 172)
    with pytest.raises(ValueError):
        index_growth(10, 0)


# --------------------------------------------------------------------------- the estimated label


def test_estimated_label_travels(sonnet: ModelPrice) -> None:
    usage = TokenUsage(1_000, 100, estimated=True)
    cost = call_cost(usage, sonnet)
    assert cost.estimated is True
    assert daily_cost(cost, 10).estimated is True
    assert (Cost(1.0, estimated=False) + cost).estimated is True
    assert (NO_COST + NO_COST).estimated is False
    assert stuff_cached_daily_cost(1_000, 10, sonnet, estimated=True).estimated is True


def test_token_usage_must_say_whether_estimated() -> None:
    with pytest.raises(TypeError):
        TokenUsage(1, 1)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="input_tokens"):
        TokenUsage(-1, 0, estimated=False)
    with pytest.raises(ValueError, match="output_tokens"):
        TokenUsage(1, 2.5, estimated=False)  # type: ignore[arg-type]
    assert TokenUsage(1, 2, 3, 4, estimated=False).prompt_tokens == 8


def test_counts_never_cross_tokenizer_families(haiku: ModelPrice) -> None:
    counted_for_sonnet = TokenUsage(1_000, 0, estimated=False, tokenizer_family="claude-4.7+")
    with pytest.raises(ValueError, match="count again"):
        call_cost(counted_for_sonnet, haiku)


# --------------------------------------------------------------------------- token estimate


def test_estimate_tokens_worked_examples() -> None:
    assert estimate_tokens("", "generic") == 0
    assert estimate_tokens("abcd" * 10, "generic") == 10  # 40 ASCII chars / 4
    assert estimate_tokens("abcd" * 10, "claude-4.7+") == 13  # 10 x 1.3, exact (no float round-up to 14)
    assert estimate_tokens("这是一个测试", "generic") == 6  # 1 token per CJK character
    assert estimate_tokens("退货政策 refund", "generic") == 6  # 4 CJK + ceil(7 ASCII / 4) = 4 + 2
    assert estimate_tokens("Größe", "generic") == 2  # 3 ASCII / 4 + 2 non-ASCII / 2 = 1.75 -> 2
    with pytest.raises(ValueError, match="known"):
        estimate_tokens("x", "gpt-2")


def test_every_priced_tokenizer_family_can_be_estimated(table: PriceTable) -> None:
    families = {p.tokenizer_family for p in (*table.models.values(), *table.embedders.values())}
    assert families <= set(TOKENIZER_SCALE_PERCENT)


# --------------------------------------------------------------------------- properties

tokens = st.integers(min_value=0, max_value=5_000_000)


@given(tokens, tokens, tokens, tokens, st.sampled_from(["input", "output", "write", "read"]), tokens)
def test_cost_monotone_in_tokens_and_non_negative(i: int, o: int, cw: int, cr: int, which: str, more: int) -> None:
    base = TokenUsage(i, o, cw, cr, estimated=False)
    bigger = TokenUsage(
        i + more * (which == "input"),
        o + more * (which == "output"),
        cw + more * (which == "write"),
        cr + more * (which == "read"),
        estimated=False,
    )
    for ttl in ("5m", "1h"):
        assert call_cost(base, SONNET, cache_ttl=ttl).usd >= 0
        assert call_cost(bigger, SONNET, cache_ttl=ttl).usd >= call_cost(base, SONNET, cache_ttl=ttl).usd


@given(tokens, tokens, tokens, tokens)
def test_batch_is_half(i: int, o: int, cw: int, cr: int) -> None:
    usage = TokenUsage(i, o, cw, cr, estimated=False)
    full = call_cost(usage, SONNET).usd
    assert call_cost(usage, SONNET, batch=True).usd == pytest.approx(full / 2, rel=1e-12, abs=TOL)


@given(st.integers(0, 900_000), st.integers(0, 900_000), st.floats(0, 10_000), st.sampled_from([1.0, 8.0, 24.0]))
def test_stuffing_costs_monotone_in_corpus(small: int, extra: int, qpd: float, hours: float) -> None:
    for cached in (False, True):
        a = stuff_cost_per_query(small, 0, 0, SONNET, cached=cached, estimated=False).usd
        b = stuff_cost_per_query(small + extra, 0, 0, SONNET, cached=cached, estimated=False).usd
        assert 0 <= a <= b
    a = stuff_cached_daily_cost(small, qpd, SONNET, active_hours=hours, estimated=False).usd
    b = stuff_cached_daily_cost(small + extra, qpd, SONNET, active_hours=hours, estimated=False).usd
    assert 0 <= a <= b


@settings(max_examples=200)
@given(
    st.floats(0.01, 5_000),
    st.sampled_from(["5m", "1h"]),
    st.floats(0.5, 24),
    st.integers(1_000, 900_000),
)
def test_caching_break_even_is_where_the_sign_flips(qpd: float, ttl: str, hours: float, corpus: int) -> None:
    result = stuff_vs_retrieve(corpus, qpd, 8, 500, SONNET, 8_000, cache_ttl=ttl, active_hours=hours, estimated=False)
    be = result.caching_beats_uncached_above_qpd
    assume(abs(qpd - be) > 1e-6 * max(1.0, be))
    cheaper = result.stuff_cached_daily.usd < result.stuff_uncached_daily.usd
    assert cheaper == (qpd > be)


@settings(max_examples=200)
@given(
    st.integers(1, 900_000),
    st.floats(1, 5_000),
    st.integers(1, 50),
    st.integers(50, 2_000),
    st.floats(0.5, 24),
)
def test_corpus_break_even_is_where_the_sign_flips(corpus: int, qpd: float, k: int, chunk: int, hours: float) -> None:
    result = stuff_vs_retrieve(corpus, qpd, k, chunk, SONNET, 8_000, active_hours=hours, estimated=False)
    be = result.retrieve_beats_cached_above_corpus_tokens
    assume(abs(corpus - be) > 1e-6 * be)
    assert (result.retrieve_daily.usd < result.stuff_cached_daily.usd) == (corpus > be)
    be_uncached = result.retrieve_beats_uncached_above_corpus_tokens
    assume(abs(corpus - be_uncached) > 1e-6 * be_uncached)
    assert (result.retrieve_daily.usd < result.stuff_uncached_daily.usd) == (corpus > be_uncached)


@given(st.integers(0, 100_000), st.integers(1, 1_000))
def test_search_units_are_the_ceiling(n: int, per: int) -> None:
    units = rerank_search_units(n, per)
    assert units * per >= n
    assert (units - 1) * per < n or n == 0
    assert units >= 0


@given(st.text(max_size=200), st.text(max_size=200), st.sampled_from(sorted(TOKENIZER_SCALE_PERCENT)))
def test_estimate_is_monotone_and_subadditive(a: str, b: str, family: str) -> None:
    whole = estimate_tokens(a + b, family)
    assert 0 <= estimate_tokens(a, family) <= whole <= estimate_tokens(a, family) + estimate_tokens(b, family)


# --------------------------------------------------------------------------- price tables


def test_price_table_loads(table: PriceTable) -> None:
    assert {"anthropic.yaml", "cohere.yaml", "local.yaml"} <= {Path(f).name for f in table.files}
    sonnet = table.model("claude-sonnet-5")
    assert (sonnet.input_per_mtok, sonnet.output_per_mtok, sonnet.cache_read_per_mtok) == (2.0, 10.0, 0.2)
    assert sonnet.context_window == 1_000_000
    assert table.model("claude-haiku-4-5").context_window == 200_000
    assert table.reranker("rerank-v3.5").per_1000_searches == 2.0
    assert table.reranker("rerank-v3.5").documents_per_search == 100
    assert table.embedder("embed-v4.0").input_per_mtok == 0.12
    for price in (*table.models.values(), *table.rerankers.values(), *table.embedders.values()):
        assert price.checked_on and price.source


def test_anthropic_cache_prices_follow_the_multipliers(table: PriceTable) -> None:
    for price in table.models.values():
        if price.provider != "anthropic":
            continue
        assert price.cache_write_5m_per_mtok == approx(1.25 * price.input_per_mtok)
        assert price.cache_write_1h_per_mtok == approx(2.0 * price.input_per_mtok)
        assert price.cache_read_per_mtok == approx(0.1 * price.input_per_mtok)
        assert price.batch_multiplier == 0.5


def test_local_models_are_free(table: PriceTable) -> None:
    local = [p for p in table.models.values() if p.provider == "local"]
    assert local
    usage = TokenUsage(10_000, 1_000, 5_000, 5_000, estimated=True)
    assert all(call_cost(usage, p).usd == 0 for p in local)


def test_price_table_reads_a_folder_once_per_process(table: PriceTable) -> None:
    cached = price_table(PRICING)
    assert cached == table
    assert price_table(PRICING / ".." / "pricing") is cached  # one entry per resolved path
    assert price_table(str(PRICING)) is cached


def test_an_answers_usage_prices_like_the_token_usage_it_holds(table: PriceTable) -> None:
    sonnet = table.model("claude-sonnet-5")
    reported = Usage(1_000, 100, 2_000, 3_000, estimated=False)
    strict = TokenUsage(1_000, 100, 2_000, 3_000, estimated=False)
    assert isinstance(strict, Usage)
    for batch in (False, True):
        assert call_cost(reported, sonnet, batch=batch) == call_cost(strict, sonnet, batch=batch)


def test_single_file_loads() -> None:
    table = load_price_table(PRICING / "cohere.yaml")
    assert set(table.rerankers) == {"rerank-v3.5"}
    assert not table.models


def test_unknown_model_lists_known_ids(table: PriceTable) -> None:
    with pytest.raises(PricingError, match=r"known: .*claude-haiku-4-5.*claude-sonnet-5"):
        table.model("claude-sonnet-9")


GOOD_ENTRY = """\
  - model_id: m1
    input_per_mtok: 1.0
    output_per_mtok: 5.0
    cache_write_5m_per_mtok: 1.25
    cache_write_1h_per_mtok: 2.0
    cache_read_per_mtok: 0.1
    batch_multiplier: 0.5
    context_window: 200000
    tokenizer_family: generic
    checked_on: "2026-09"
    source: test sheet
"""
HEADER = "provider: acme\ncurrency: USD\nmodels:\n"


def write_yaml(tmp_path: Path, body: str, name: str = "acme.yaml") -> Path:
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    return path


def test_good_tmp_yaml_loads(tmp_path: Path) -> None:
    price = load_price_table(write_yaml(tmp_path, HEADER + GOOD_ENTRY)).model("m1")
    assert price.provider == "acme"
    assert price.note == ""


@pytest.mark.parametrize(
    ("edit", "field", "problem"),
    [
        (lambda s: s.replace("    output_per_mtok: 5.0\n", ""), "output_per_mtok", "is missing"),
        (lambda s: s.replace("input_per_mtok: 1.0", "input_per_mtok: -2"), "input_per_mtok", "non-negative"),
        (lambda s: s.replace("input_per_mtok: 1.0", "input_per_mtok: '$1'"), "input_per_mtok", "non-negative"),
        (lambda s: s.replace("batch_multiplier: 0.5", "batch_multiplier: 0"), "batch_multiplier", "(0, 1]"),
        (lambda s: s.replace("context_window: 200000", "context_window: 2.5e5"), "context_window", "integer"),
        (lambda s: s.replace('checked_on: "2026-09"', "checked_on: last week"), "checked_on", "YYYY-MM"),
        (lambda s: s.replace("source: test sheet", "source: ''"), "source", "non-empty"),
        (lambda s: s.replace("source: test sheet", "source: test\n    inptu_per_mtok: 1"), "inptu_per_mtok", "unknown"),
    ],
)
def test_malformed_entry_is_one_line_naming_file_entry_field(tmp_path: Path, edit, field: str, problem: str) -> None:
    path = write_yaml(tmp_path, HEADER + edit(GOOD_ENTRY))
    with pytest.raises(PricingError) as err:
        load_price_table(tmp_path)
    message = str(err.value)
    assert "\n" not in message
    assert str(path) in message
    assert "models[0] 'm1'" in message
    assert f"'{field}'" in message
    assert problem in message


def test_entry_without_id_is_named_by_position(tmp_path: Path) -> None:
    write_yaml(tmp_path, HEADER + GOOD_ENTRY + GOOD_ENTRY.replace("  - model_id: m1\n    ", "  - "))
    with pytest.raises(PricingError, match=r"acme\.yaml: models\[1\]: field 'model_id' is missing"):
        load_price_table(tmp_path)


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (HEADER + GOOD_ENTRY + GOOD_ENTRY, "'m1' already defined in"),
        (HEADER.replace("USD", "EUR") + GOOD_ENTRY, "'currency' must be USD"),
        (HEADER.replace("provider: acme\n", "") + GOOD_ENTRY, "'provider'"),
        (HEADER + "  - [not, a, mapping]\n", "models[0]: entry must be a mapping"),
        ("provider: acme\ncurrency: USD\n", "no entries"),
        (HEADER + GOOD_ENTRY + "pricez: 1\n", "unknown top-level key(s) pricez"),
        (HEADER + "  - model_id: [unclosed\n", "not valid YAML at line"),
    ],
)
def test_malformed_file_is_one_line(tmp_path: Path, body: str, problem: str) -> None:
    path = write_yaml(tmp_path, body)
    with pytest.raises(PricingError) as err:
        load_price_table(path)
    message = str(err.value)
    assert "\n" not in message
    assert str(path) in message
    assert problem in message


def test_duplicate_id_across_files(tmp_path: Path) -> None:
    write_yaml(tmp_path, HEADER + GOOD_ENTRY, "a.yaml")
    write_yaml(tmp_path, HEADER + GOOD_ENTRY, "b.yaml")
    with pytest.raises(PricingError, match=r"b\.yaml: ModelPrice 'm1' already defined in .*a\.yaml"):
        load_price_table(tmp_path)


def test_missing_path_and_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(PricingError, match="no such"):
        load_price_table(tmp_path / "nope")
    with pytest.raises(PricingError, match=r"no \*\.yaml"):
        load_price_table(tmp_path)


def test_records_are_frozen(table: PriceTable) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        table.model("claude-sonnet-5").input_per_mtok = 0  # type: ignore[misc]
    with pytest.raises(TypeError):
        table.models["x"] = table.model("claude-sonnet-5")  # type: ignore[index]


def test_spend_before_the_run_folder_is_known_is_carried_into_its_ledger(tmp_path: Path) -> None:
    """threshold=auto pays for the first chunking's embeddings before the run id (and its ledger) exists."""
    ledger = tmp_path / "spend.json"
    SpendGuard(ledger=ledger).charge(0.25, "embed:m")  # an earlier invocation of the same run
    early = SpendGuard(1.0)
    early.charge(0.5, "embed:m")
    guard = early.into_ledger(ledger)
    assert guard.spent_usd == pytest.approx(0.75) and guard.spent_this_invocation_usd == pytest.approx(0.5)
    assert guard.by_item == pytest.approx({"embed": 0.75})
    assert SpendGuard(ledger=ledger).spent_usd == pytest.approx(0.75)  # written, not only held
    with pytest.raises(BudgetExceeded):
        guard.charge(0.3, "embed:m")  # the same cap, over everything the run spent
