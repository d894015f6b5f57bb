"""Retrieval in blocks: how questions are blocked never changes a pool, and the block bounds what is held.

And the approximate index: deterministic, honours metadata filters, and says what it costs in recall.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("usearch", reason='the ann extra is not installed: pip install -e ".[ann]"')

from evalkit.retrieval.ann import HnswSettings, hnsw_pool, recall_against_exact
from evalkit.retrieval.bm25 import BM25Index
from evalkit.retrieval.cosine import exact_cosines, mantissa_bits, to_fixed_point
from evalkit.retrieval.pools import (
    DEFAULT_BLOCK_CELLS,
    CandidatePool,
    DenseIndex,
    QueryVectors,
    bm25_pool,
    dense_pool,
    hybrid_pool,
    question_blocks,
)
from tests.blas_env import other_core_env


def unit_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    rows = rng.standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def vectors() -> tuple[DenseIndex, QueryVectors]:
    rng = np.random.default_rng(7)
    units = unit_rows(rng, 3000, 48)
    # Queries near units, so the top of each pool is well separated and the tail is a real ranking.
    queries = units[rng.integers(0, 3000, 261)] + 0.3 * unit_rows(rng, 261, 48)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    return DenseIndex("m@1", 48, units), QueryVectors("m@1", queries.astype(np.float32))


def same_pool(a: CandidatePool, b: CandidatePool) -> bool:
    return np.array_equal(a.indices, b.indices) and np.array_equal(a.scores, b.scores, equal_nan=True)


@pytest.mark.parametrize("cells", [1, 3000, 3001 * 2, 3000 * 5 + 17, DEFAULT_BLOCK_CELLS])
def test_dense_pool_is_the_same_whatever_the_block(vectors: tuple[DenseIndex, QueryVectors], cells: int) -> None:
    index, queries = vectors
    # 261 questions: the default block (256 rows) leaves a one-row tail, computed like every other block.
    assert same_pool(dense_pool(index, queries, 20, cells=cells), dense_pool(index, queries, 20))


@pytest.mark.parametrize("cells", [1, 3000 * 3, DEFAULT_BLOCK_CELLS])
def test_hybrid_and_bm25_pools_are_the_same_whatever_the_block(
    vectors: tuple[DenseIndex, QueryVectors], cells: int
) -> None:
    index, queries = vectors
    rng = np.random.default_rng(3)
    bm25 = np.where(rng.random((261, 3000)) < 0.02, rng.gamma(2.0, 2.0, (261, 3000)), 0.0)
    allowed = rng.random((261, 3000)) < 0.9

    def rows(block: slice) -> np.ndarray:
        return bm25[block]

    for method in ("rrf", "max"):
        blocked = hybrid_pool(index, queries, rows, 15, method, 60, allowed, cells=cells)  # type: ignore[arg-type]
        whole = hybrid_pool(index, queries, rows, 15, method, 60, allowed)  # type: ignore[arg-type]
        assert same_pool(blocked, whole), method
    assert same_pool(bm25_pool(rows, 261, 15, allowed, 3000, cells), bm25_pool(rows, 261, 15, allowed))


def test_real_bm25_index_in_blocks_equals_one_block() -> None:
    texts = [f"policy {i % 7} travel expense receipt {i % 13} 出差 报销 {i % 5}" for i in range(400)]
    queries = [f"travel receipt {i}" if i % 2 else f"出差 报销 {i % 5}" for i in range(37)]
    index = BM25Index(texts)
    index.set_queries(queries)
    blocked = bm25_pool(index.score_rows, len(queries), 10, None, index.n_units, cells=400 * 3)
    assert same_pool(blocked, bm25_pool(index.score_rows, len(queries), 10))


@pytest.mark.parametrize(
    ("n_rows", "n_units", "cells"), [(1000, 10, 64), (1000, 100_000, 1 << 22), (5, 10**7, 1 << 22)]
)
def test_blocks_bound_the_scores_held(n_rows: int, n_units: int, cells: int) -> None:
    blocks = question_blocks(n_rows, n_units, cells)
    assert sum(b.stop - b.start for b in blocks) == n_rows and blocks[0].start == 0
    assert all(a.stop == b.start for a, b in itertools.pairwise(blocks))
    held = max(b.stop - b.start for b in blocks) * n_units
    assert held <= max(cells, n_units)


def test_hnsw_is_deterministic_reports_its_recall_and_respects_filters(
    vectors: tuple[DenseIndex, QueryVectors],
) -> None:
    index, queries = vectors
    first = hnsw_pool(index, queries, 20)
    assert same_pool(first, hnsw_pool(index, queries, 20)), "the same vectors build the same graph"
    recall = recall_against_exact(index, queries, first)
    assert recall["questions"] == 256 and recall["depth"] == 20
    assert 0.5 < recall["recall_at_pool"] <= 1.0
    # A poorer graph finds less of the exact pool, and the measure says so.
    poor = hnsw_pool(index, queries, 20, settings=HnswSettings(connectivity=2, expansion_add=2, expansion_search=2))
    assert recall_against_exact(index, queries, poor)["recall_at_pool"] < recall["recall_at_pool"]
    # Scores are the hits' cosines, best first.
    got = first.indices >= 0
    expected = np.einsum("qd,qkd->qk", queries.vectors, index.vectors[np.maximum(first.indices, 0)])
    assert np.allclose(first.scores[got], expected[got], atol=1e-5)
    steps = np.diff(first.scores, axis=1)
    assert (steps[~np.isnan(steps)] <= 0).all()
    allowed = np.random.default_rng(1).random((len(queries.vectors), len(index.vectors))) < 0.5
    filtered = hnsw_pool(index, queries, 20, allowed)
    for row in range(len(queries.vectors)):
        members = filtered.indices[row][filtered.indices[row] >= 0]
        assert allowed[row, members].all()


def test_a_dense_sweep_with_hnsw_records_its_recall_against_exact(tmp_path, small_demo) -> None:
    import json
    import subprocess
    import sys

    from tests.test_sweep import REPO

    command = [
        sys.executable, "-m", "evalkit.sweep", "position=off", "answer_check=off", "progress=false", "report=false",
        f"labelset.path={small_demo}", f"reports_dir={tmp_path}", "run_id=r", "retriever=dense", "embedder=fake",
        "chunk_size=[300]", "chunk_overlap=[0]", "retriever.index=hnsw",
    ]  # fmt: skip
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    info = json.loads((tmp_path / "r" / "chunkings" / "recursive-s300-o0.json").read_text())
    assert info["ann"]["questions"] > 0 and 0 < info["ann"]["recall_at_pool"] <= 1
    assert "hnsw found" in done.stderr
    on_bm25 = ["retriever=bm25" if part == "retriever=dense" else part for part in command]
    wrong = subprocess.run(on_bm25, cwd=REPO, capture_output=True, text=True)
    assert wrong.returncode == 2 and "retriever.index" in wrong.stderr
    assert len(wrong.stderr.strip().splitlines()) == 1


def test_a_corpus_without_terms_scores_zero_instead_of_failing() -> None:
    index = BM25Index(["..", "。。", " "])
    index.set_queries(["where?", "住宿"])
    assert not index.score_rows(slice(0, 2)).any()


_POOLS_SCRIPT = """
import hashlib, sys
import numpy as np
from evalkit.retrieval.pools import DenseIndex, QueryVectors, dense_pool, hybrid_pool
rng = np.random.default_rng(11)
def unit_rows(n, dim):
    rows = rng.standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)
units = unit_rows(2000, 384)
queries = units[rng.integers(0, 2000, 77)] + 0.3 * unit_rows(77, 384)
queries = (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype(np.float32)
index, asked = DenseIndex("m@1", 384, units), QueryVectors("m@1", queries)
bm25 = np.where(rng.random((77, 2000)) < 0.02, rng.gamma(2.0, 2.0, (77, 2000)), 0.0)
digests = set()
for cells in (1, 2000 * 2, 2000 * 3 + 5, 2000 * 7, 1 << 22):
    digest = hashlib.sha256()
    for pool in (dense_pool(index, asked, 25, cells=cells),
                 hybrid_pool(index, asked, lambda rows: bm25[rows], 25, "rrf", 60, None, cells=cells)):
        digest.update(pool.indices.tobytes()); digest.update(pool.scores.tobytes())
    digests.add(digest.hexdigest())
print(len(digests), digests.pop())
"""


def _pools_digest(env: dict[str, str]) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-c", _POOLS_SCRIPT], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    count, digest = done.stdout.split()
    return int(count), digest


@pytest.mark.parametrize("threads", ["1", "2"])
def test_pools_are_bitwise_the_same_under_either_openblas_core_type(threads: str) -> None:
    """Blocks of 1 to 256 rows, one or two BLAS threads, this core type and another: one set of bits."""
    here = {**os.environ, "OPENBLAS_NUM_THREADS": threads}
    other = {**other_core_env(), "OPENBLAS_NUM_THREADS": threads}
    (blocks_here, digest_here), (blocks_other, digest_other) = _pools_digest(here), _pools_digest(other)
    assert blocks_here == 1, "every block size gives the same pools under this machine's variables"
    assert blocks_other == 1, f"every block size gives the same pools with {other.get('OPENBLAS_CORETYPE')}"
    assert digest_here == digest_other, "the core type does not change a score"


def test_exact_cosines_are_within_float32_rounding_of_the_real_ones() -> None:
    rng = np.random.default_rng(5)
    for dim in (48, 384, 1024, 3072):
        units, queries = unit_rows(rng, 300, dim), unit_rows(rng, 40, dim)
        exact = exact_cosines(to_fixed_point(queries), to_fixed_point(units))
        real = queries.astype(np.float64) @ units.astype(np.float64).T
        assert np.abs(exact - real).max() < 1e-6, dim
        assert exact.dtype == np.float64


def test_fixed_point_products_stay_exact_for_the_largest_vectors() -> None:
    """The worst case: every component at its largest mantissa, so the dot product is dim * 2**(2*bits)."""
    for dim in (1, 384, 1024, 4096):
        bits = mantissa_bits(dim)
        assert dim * 2 ** (2 * bits) <= 2**53
        ones = np.full((2, dim), 1.0, dtype=np.float32)
        fixed = to_fixed_point(ones)
        assert np.all(np.abs(fixed.mantissas) <= 2**bits)
        assert np.array_equal(exact_cosines(fixed, fixed), np.full((2, 2), float(dim)))
    zero = to_fixed_point(np.zeros((1, 8), dtype=np.float32))
    assert np.array_equal(exact_cosines(zero, zero), np.zeros((1, 1)))
