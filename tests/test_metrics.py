"""Retrieval metrics: values worked out by hand, edge cases, dispatch."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalkit.scoring.ir.context_precision import context_precision_at_k
from evalkit.scoring.ir.coverage import answer_recall_at_k, covered_at_k, span_recall_at_k
from evalkit.scoring.ir.forms import JudgedRanking
from evalkit.scoring.ir.hit import hit_at_k
from evalkit.scoring.ir.ndcg import ndcg_at_k
from evalkit.scoring.ir.precision import precision_at_k, recall_at_k
from evalkit.scoring.ir.reciprocal_rank import reciprocal_rank
from evalkit.scoring.ir.zero_hit import zero_hit
from evalkit.scoring.metrics import METRICS, parse_metric, score_metric

# Ranked list used throughout: relevant at ranks 2, 4 and 5; the chunking holds
# 4 relevant units, so one relevant unit was never retrieved.
REL = (False, True, False, True, True)
N_REL = 4

# 1 / log2(rank + 1) for ranks 1..5
D1, D2, D3, D4, D5 = (1 / math.log2(r + 1) for r in range(1, 6))


def approx(value: float) -> pytest.approx:
    return pytest.approx(value, abs=1e-12)


def test_hit_at_k() -> None:
    assert hit_at_k(REL, 1) == 0.0  # rank 1 is not relevant
    assert hit_at_k(REL, 2) == 1.0  # rank 2 is
    assert hit_at_k(REL, 50) == 1.0


def test_recall_at_k() -> None:
    assert recall_at_k(REL, 1, N_REL) == 0.0  # 0 / 4
    assert recall_at_k(REL, 3, N_REL) == approx(0.25)  # 1 / 4
    assert recall_at_k(REL, 5, N_REL) == approx(0.75)  # 3 / 4
    assert recall_at_k(REL, 10, N_REL) == approx(0.75)  # k past the list: still 3 / 4


def test_precision_at_k_does_not_reward_short_lists() -> None:
    assert precision_at_k(REL, 1) == 0.0  # 0 / 1
    assert precision_at_k(REL, 3) == approx(1 / 3)  # 1 / 3
    assert precision_at_k(REL, 5) == approx(0.6)  # 3 / 5
    assert precision_at_k(REL, 10) == approx(0.3)  # 3 / 10, not 3 / 5
    assert precision_at_k((True,), 5) == approx(0.2)  # one hit returned: 1 / 5


def test_context_precision_at_k() -> None:
    # relevant at ranks 2, 4, 5: P@2 = 1/2, P@4 = 2/4, P@5 = 3/5
    # (0.5 + 0.5 + 0.6) / 3 = 1.6 / 3
    assert context_precision_at_k(REL, 5) == approx(1.6 / 3)
    assert context_precision_at_k(REL, 10) == approx(1.6 / 3)
    # top 4: (0.5 + 0.5) / 2 = 0.5
    assert context_precision_at_k(REL, 4) == approx(0.5)
    # top 3: only rank 2: 0.5 / 1
    assert context_precision_at_k(REL, 3) == approx(0.5)
    assert context_precision_at_k(REL, 1) == 0.0  # nothing relevant in the top 1
    # all relevant: P@i = 1 at every rank
    assert context_precision_at_k((True, True, True), 3) == approx(1.0)
    # relevant at ranks 1 and 3: (1/1 + 2/3) / 2 = 5/6
    assert context_precision_at_k((True, False, True), 3) == approx(5 / 6)


def test_reciprocal_rank() -> None:
    assert reciprocal_rank(REL, 1) == 0.0  # first relevant hit is at rank 2 > 1
    assert reciprocal_rank(REL, 2) == approx(0.5)
    assert reciprocal_rank(REL, 10) == approx(0.5)
    assert reciprocal_rank((False, False, True), 3) == approx(1 / 3)


def test_ndcg_at_k() -> None:
    # k=5: DCG = D2 + D4 + D5 = 0.63093 + 0.43068 + 0.38685 = 1.44846
    # ideal: min(5, 4) = 4 relevant units first: D1 + D2 + D3 + D4
    #        = 1 + 0.63093 + 0.5 + 0.43068 = 2.56161;  1.44846 / 2.56161 = 0.56545
    dcg5 = D2 + D4 + D5
    ideal4 = D1 + D2 + D3 + D4
    assert ndcg_at_k(REL, 5, N_REL) == approx(dcg5 / ideal4)
    assert ndcg_at_k(REL, 5, N_REL) == pytest.approx(0.5654, abs=1e-4)
    # k=2: DCG = D2 = 0.63093; ideal = D1 + D2 = 1.63093; 0.38685
    assert ndcg_at_k(REL, 2, N_REL) == approx(D2 / (D1 + D2))
    assert ndcg_at_k(REL, 2, N_REL) == pytest.approx(0.3869, abs=1e-4)
    # one relevant unit, found at rank 2: D2 / D1 = 0.63093
    assert ndcg_at_k((False, True), 10, 1) == approx(D2)
    # perfect ranking
    assert ndcg_at_k((True, True, False), 3, 2) == approx(1.0)
    # k=1: nothing relevant at rank 1
    assert ndcg_at_k(REL, 1, N_REL) == 0.0


def test_discount_constants() -> None:
    # D1 = 1, D2 = 1/log2(3), D3 = 1/log2(4) = 0.5, D4 = 1/log2(5), D5 = 1/log2(6)
    assert D1 == 1.0
    assert D3 == 0.5
    assert math.isclose(D2, 0.6309297535714574, abs_tol=1e-12)
    assert math.isclose(D4, 0.43067655807339306, abs_tol=1e-12)
    assert math.isclose(D5, 0.38685280723454163, abs_tol=1e-12)


# edge cases -------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 3, 10])
def test_empty_list_scores_zero(k: int) -> None:
    assert hit_at_k((), k) == 0.0
    assert recall_at_k((), k, 2) == 0.0
    assert precision_at_k((), k) == 0.0
    assert context_precision_at_k((), k) == 0.0
    assert reciprocal_rank((), k) == 0.0
    assert ndcg_at_k((), k, 2) == 0.0


def test_no_relevant_unit_scores_zero() -> None:
    # e.g. an answer straddling every chunk boundary: nothing can be found
    nothing = (False, False, False)
    assert recall_at_k(nothing, 3, 0) == 0.0
    assert ndcg_at_k(nothing, 3, 0) == 0.0
    assert hit_at_k(nothing, 3) == 0.0
    assert context_precision_at_k(nothing, 3) == 0.0
    assert reciprocal_rank(nothing, 3) == 0.0
    assert precision_at_k(nothing, 3) == 0.0


@pytest.mark.parametrize("k", [0, -1])
def test_k_below_one_is_rejected(k: int) -> None:
    for fn in (hit_at_k, precision_at_k, context_precision_at_k, reciprocal_rank):
        with pytest.raises(ValueError, match="k must be"):
            fn(REL, k)
    with pytest.raises(ValueError, match="k must be"):
        recall_at_k(REL, k, N_REL)
    with pytest.raises(ValueError, match="k must be"):
        ndcg_at_k(REL, k, N_REL)


@pytest.mark.parametrize("k", [2.0, True, "3"])
def test_k_must_be_an_integer(k: object) -> None:
    with pytest.raises(TypeError):
        hit_at_k(REL, k)  # type: ignore[arg-type]


def test_more_relevant_hits_than_relevant_units_is_an_error() -> None:
    with pytest.raises(ValueError, match="ranked twice"):
        recall_at_k(REL, 5, 2)
    with pytest.raises(ValueError, match="ranked twice"):
        ndcg_at_k(REL, 5, 2)
    with pytest.raises(ValueError, match=">= 0"):
        recall_at_k((), 5, -1)


def test_inputs_are_not_mutated() -> None:
    rel = [False, True, True]
    coverage = [frozenset(), frozenset({0}), frozenset({0, 1})]
    for metric in ("recall@2", "ndcg@2", "context_precision@3", "span_recall@5"):
        score_metric(metric, JudgedRanking(tuple(rel), 2, "all", tuple(coverage), 2))
    assert rel == [False, True, True]
    assert coverage == [frozenset(), frozenset({0}), frozenset({0, 1})]


# multi-hop ----------------------------------------------------------------------


# A two-hop question: rank 1 covers hop 1, ranks 2 and 3 together cover hop 0.
COVERAGE = (frozenset({1}), frozenset({1}), frozenset({0, 1}))


def test_covered_at_k_and_span_recall() -> None:
    assert covered_at_k(COVERAGE, 1) == frozenset({1})
    assert covered_at_k(COVERAGE, 3) == frozenset({0, 1})
    assert covered_at_k(COVERAGE, 10) == frozenset({0, 1})  # past the end: whole list
    assert covered_at_k((), 5) == frozenset()
    assert span_recall_at_k(covered_at_k(COVERAGE, 2), 2) == approx(0.5)  # 1 of 2 hops
    assert span_recall_at_k(covered_at_k(COVERAGE, 3), 2) == approx(1.0)  # 2 of 2
    assert span_recall_at_k(frozenset(), 0) == 0.0
    with pytest.raises(ValueError, match="out of range"):
        span_recall_at_k(frozenset({2}), 2)


def test_answer_recall_picks_by_mode() -> None:
    # mode any: hit@k
    assert answer_recall_at_k("any", REL, 1) == 0.0
    assert answer_recall_at_k("any", REL, 2) == 1.0
    # mode all: span recall of the union of the top k; the relevance flags do not matter
    rel = (True, False, False)
    assert answer_recall_at_k("all", rel, 1, COVERAGE, 2) == approx(0.5)
    assert answer_recall_at_k("all", rel, 3, COVERAGE, 2) == approx(1.0)
    with pytest.raises(ValueError, match="prefixes"):
        answer_recall_at_k("all", rel, 3, COVERAGE[:2], 2)
    # mode none: nothing to recall
    with pytest.raises(ValueError, match="zero_hit"):
        answer_recall_at_k("none", (), 5)


# zero-hit -----------------------------------------------------------------------


def test_zero_hit() -> None:
    assert zero_hit(None, 0.5)  # nothing retrieved
    assert zero_hit(0.3, 0.5)  # best score under the threshold
    assert not zero_hit(0.5, 0.5)  # equal passes: only strictly below is a zero-hit
    assert not zero_hit(0.7, 0.5)
    assert not zero_hit(-3.0, -math.inf)  # no threshold
    with pytest.raises(ValueError):
        zero_hit(math.nan, 0.5)
    with pytest.raises(ValueError):
        zero_hit(0.3, math.nan)


# dispatch -------------------------------------------------------------------------


def test_parse_metric() -> None:
    assert parse_metric("ndcg@10") == ("ndcg", 10)
    assert parse_metric("context_precision@5") == ("context_precision", 5)
    assert parse_metric(" mrr@3 ") == ("mrr", 3)
    for bad in ("ndcg", "ndcg@", "ndcg@0", "ndcg@-1", "ndcg@1.5", "map@10", "NDCG@10"):
        with pytest.raises(ValueError):
            parse_metric(bad)


def test_score_metric_dispatches_every_name() -> None:
    judged = JudgedRanking(rel=REL, n_relevant=N_REL)
    assert score_metric("hit@2", judged) == 1.0
    assert score_metric("recall@1", judged) == 0.0  # mode any: hit@1
    assert score_metric("recall_trec@5", judged) == approx(0.75)
    assert score_metric("precision@10", judged) == approx(0.3)
    assert score_metric("context_precision@5", judged) == approx(1.6 / 3)
    assert score_metric("mrr@5", judged) == approx(0.5)
    assert score_metric("ndcg@2", judged) == approx(D2 / (D1 + D2))
    multi_hop = JudgedRanking(rel=(True, False, False), n_relevant=2, mode="all", coverage=COVERAGE, n_spans=2)
    assert score_metric("recall@2", multi_hop) == approx(0.5)
    assert score_metric("span_recall@3", multi_hop) == approx(1.0)
    for name in METRICS:
        assert isinstance(score_metric(f"{name}@3", multi_hop), float)


# properties ------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(rel=st.lists(st.booleans(), max_size=30), extra=st.integers(0, 5), k=st.integers(1, 40))
def test_metrics_are_bounded_and_monotone_in_k(rel: list[bool], extra: int, k: int) -> None:
    n_relevant = sum(rel) + extra
    for fn in (hit_at_k, precision_at_k, context_precision_at_k, reciprocal_rank):
        assert 0.0 <= fn(rel, k) <= 1.0
    for fn in (recall_at_k, ndcg_at_k):
        assert 0.0 <= fn(rel, k, n_relevant) <= 1.0 + 1e-12
    # more hits seen never lowers hit or recall
    assert hit_at_k(rel, k) <= hit_at_k(rel, k + 1)
    assert recall_at_k(rel, k, n_relevant) <= recall_at_k(rel, k + 1, n_relevant)
    # a perfect ranking has nDCG 1
    if n_relevant:
        assert ndcg_at_k([True] * n_relevant, k, n_relevant) == pytest.approx(1.0, abs=1e-12)
