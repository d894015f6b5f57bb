"""Candidate pools: exact top-n, BM25 with Chinese segmentation, fusion arithmetic, model mismatch."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from evalkit.retrieval.bm25 import BM25Index
from evalkit.retrieval.pools import (
    CandidatePool,
    DenseIndex,
    IndexMismatchError,
    QueryVectors,
    bm25_pool,
    collapse_to_parents,
    dense_pool,
    hybrid_pool,
    top_n,
)
from evalkit.retrieval.tokenize import tokenize


def _reference_top_n(scores: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    depth = min(n, scores.shape[1])
    columns = np.broadcast_to(np.arange(scores.shape[1]), scores.shape)
    order = np.lexsort((columns, -scores), axis=1)[:, :depth]
    return order, np.take_along_axis(scores, order, axis=1)


@settings(max_examples=200, deadline=None)
@given(
    arrays(
        np.float64, st.tuples(st.integers(1, 5), st.integers(1, 25)), elements=st.sampled_from([0.0, 0.2, 0.5, 1.0])
    ),
    st.integers(1, 30),
)
def test_top_n_equals_a_full_sort_with_ties_by_lower_column(scores: np.ndarray, n: int) -> None:
    indices, values = top_n(scores, n)
    expected_idx, expected_val = _reference_top_n(scores, n)
    depth = expected_idx.shape[1]
    assert (indices[:, :depth] == expected_idx).all() and (values[:, :depth] == expected_val).all()
    assert (indices[:, depth:] == -1).all() and np.isnan(values[:, depth:]).all()


def test_tokenizer_segments_chinese_and_folds_width() -> None:
    assert tokenize("广茂铁路全长多少公里？") == ["广茂", "铁路", "全长", "多少", "公里"]
    assert tokenize("RateLimiter的默认burst是２０") == ["ratelimiter", "的", "默认", "burst", "是", "20"]
    assert tokenize("What is the default burst?") == ["default", "burst"]


def test_bm25_finds_chinese_and_english_and_drops_non_matching_units() -> None:
    texts = ["住宿标准为每晚不超过六百元。", "The RateLimiter allows a burst of 20.", "无关的内容"]
    index = BM25Index(texts)
    index.set_queries(["住宿标准是多少", "RateLimiter burst", "zebra"])
    pool = bm25_pool(index.score_rows, 3, n=3)
    assert pool.indices[0, 0] == 0 and pool.indices[1, 0] == 1
    assert (pool.indices[2] == -1).all(), "a unit sharing no term with the query is not a candidate"
    assert (pool.indices[0, 1:] == -1).all()


def test_rrf_fusion_arithmetic_and_cosine_threshold_score() -> None:
    vectors = np.eye(3, dtype=np.float32)
    index = DenseIndex("m@1", 3, vectors)
    query = QueryVectors("m@1", np.array([[0.8, 0.6, 0.0]], dtype=np.float32))
    bm25 = np.array([[0.0, 1.0, 3.0]])
    pool = hybrid_pool(index, query, lambda rows: bm25[rows], n=3, method="rrf", rrf_k=60)
    # dense ranks: unit0 (0.8) 1st, unit1 (0.6) 2nd, unit2 (0.0) 3rd; bm25 ranks: unit2 1st, unit1 2nd.
    # RRF: unit0 = 1/61; unit1 = 1/62 + 1/62 = 0.032258; unit2 = 1/63 + 1/61 = 0.032266 -> unit2, unit1, unit0.
    assert pool.indices[0].tolist() == [2, 1, 0]
    assert np.allclose(pool.scores[0], [0.0, 0.6, 0.8]), "hybrid thresholds compare against the cosine"


def test_max_fusion_never_sums_scores() -> None:
    index = DenseIndex("m@1", 2, np.eye(2, dtype=np.float32))
    query = QueryVectors("m@1", np.array([[1.0, 0.0]], dtype=np.float32))
    bm25 = np.array([[2.0, 4.0]])
    pool = hybrid_pool(index, query, lambda rows: bm25[rows], n=2, method="max")
    # dense scaled by best: unit0 1.0, unit1 0.0; bm25 scaled: unit0 0.5, unit1 1.0 -> max: both 1.0, tie by column.
    assert pool.indices[0].tolist() == [0, 1]


def test_query_from_another_model_is_refused() -> None:
    index = DenseIndex("use@1", 2, np.eye(2, dtype=np.float32))
    with pytest.raises(IndexMismatchError, match="re-embed"):
        dense_pool(index, QueryVectors("e5@1", np.ones((1, 2), dtype=np.float32)), n=1)
    with pytest.raises(IndexMismatchError):
        dense_pool(index, QueryVectors("use@1", np.ones((1, 3), dtype=np.float32)), n=1)


def test_children_collapse_to_parents_at_best_rank() -> None:
    pool = CandidatePool(np.array([[3, 0, 2, 1, -1]]), np.array([[0.9, 0.8, 0.7, 0.6, np.nan]]), "dense")
    parent_of = np.array([0, 0, 1, 1])
    collapsed = collapse_to_parents(pool, parent_of)
    assert collapsed.indices[0].tolist() == [1, 0, -1, -1, -1]
    assert collapsed.scores[0, :2].tolist() == [0.9, 0.8]


def test_bm25_tokens_come_from_the_cache_on_a_second_index(tmp_path) -> None:
    from evalkit.cache import Cache

    texts = ["住宿标准为每晚不超过六百元。", "The RateLimiter allows a burst of 20."]
    with Cache(tmp_path / "c.sqlite") as cache:
        first = BM25Index(texts, cache=cache)
        first.set_queries(["住宿标准", "burst"])
        assert cache.count("tokens") == 4
        second = BM25Index(texts, cache=cache)
        second.set_queries(["住宿标准", "burst"])
        assert cache.stats.hits["tokens"] == 4
        assert np.array_equal(first.score_rows(slice(0, 2)), second.score_rows(slice(0, 2)))
