"""retriever.index=lancedb: a real vector database (LanceDB, embedded in the process: no server, no socket).

Flat search through the store equals evalkit's exact search question by question (ties and metadata
filters included, and whole sweeps' results.parquet with a real embedder); an approximate LanceDB index
records its recall against exact search; a missing lancedb is one line naming the extra. The external
retriever's worked example (examples/lancedb_retriever) scores the same as the sweep's own store search.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("lancedb", reason='the vectorstore extra is not installed: pip install -e ".[vectorstore]"')

from evalkit.retrieval.ann import recall_against_exact
from evalkit.retrieval.pools import DenseIndex, QueryVectors, dense_pool
from evalkit.retrieval.vectorstore import StoreSettings, StoreTable, store_pool
from tests.conftest import REPO, shared_set

FAST = ["position=off", "answer_check=off", "progress=false", "report=false", "retriever=dense"]


def unit_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    rows = rng.standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def same_pool(a, b) -> bool:  # type: ignore[no-untyped-def]
    return np.array_equal(a.indices, b.indices) and np.array_equal(a.scores, b.scores, equal_nan=True)


def test_flat_store_search_equals_exact_search_with_ties_and_filters(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    units = unit_rows(rng, 2000, 48)
    units[100:140] = units[99]  # 41 equal vectors: exact search keeps the lowest units, the store must too
    queries = units[rng.integers(0, 2000, 120)] + 0.3 * unit_rows(rng, 120, 48)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    queries[0] = units[99]
    index, asked = DenseIndex("m@1", 48, units), QueryVectors("m@1", queries.astype(np.float32))
    table = StoreTable(tmp_path / "store", "t")
    assert same_pool(store_pool(index, asked, 20, table), dense_pool(index, asked, 20))
    allowed = rng.random((120, 2000)) < 0.3
    assert same_pool(store_pool(index, asked, 20, table, allowed), dense_pool(index, asked, 20, allowed))
    marker = json.loads((tmp_path / "store" / "t.json").read_text())
    # Changed vectors rebuild the table (its fingerprint follows them); the pool follows too.
    moved = DenseIndex("m@1", 48, unit_rows(rng, 2000, 48))
    assert same_pool(store_pool(moved, asked, 20, table), dense_pool(moved, asked, 20))
    assert json.loads((tmp_path / "store" / "t.json").read_text())["fingerprint"] != marker["fingerprint"]


def test_an_approximate_store_index_reports_its_recall(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    index = DenseIndex("m@1", 32, unit_rows(rng, 3000, 32))
    asked = QueryVectors("m@1", unit_rows(rng, 100, 32))
    table = StoreTable(tmp_path / "store", "t")
    wide = store_pool(index, asked, 20, table, settings=StoreSettings("ivf_flat", partitions=16, nprobes=16))
    narrow = store_pool(index, asked, 20, table, settings=StoreSettings("ivf_flat", partitions=16, nprobes=1))
    assert recall_against_exact(index, asked, wide)["recall_at_pool"] == 1.0, "every partition probed: exact"
    assert recall_against_exact(index, asked, narrow)["recall_at_pool"] < 0.9
    got = narrow.indices >= 0
    cosines = np.einsum("qd,qkd->qk", asked.vectors, index.vectors[np.maximum(narrow.indices, 0)])
    assert np.allclose(narrow.scores[got], cosines[got], atol=1e-6)


def _sweep(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "evalkit.sweep", *FAST, *args]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, env=env)


def _exact_and_store(tmp_path: Path, labelset: Path, *grid: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The same sweep through exact search and through the store, one cache (the vectors are embedded once)."""
    shared = [f"labelset.path={labelset}", f"cache_path={tmp_path}/cache/evalkit.sqlite", "run_id=r", *grid]
    frames = []
    for index in ("exact", "lancedb"):
        done = _sweep(*shared, f"reports_dir={tmp_path}/{index}", f"retriever.index={index}")
        assert done.returncode == 0, done.stderr[-2000:]
        frames.append(pd.read_parquet(tmp_path / index / "r" / "results.parquet"))
    assert any((tmp_path / "cache" / "vectorstore").glob("*.lance")), "the store's tables are under the cache"
    return frames[0], frames[1]


def test_a_sweep_through_the_store_equals_exact_search(tmp_path: Path, small_demo: Path) -> None:
    exact, store = _exact_and_store(tmp_path, small_demo, "embedder=e5", "chunk_size=[300]", "chunk_overlap=[0]")
    pd.testing.assert_frame_equal(exact, store)


@pytest.mark.slow
@pytest.mark.parametrize("labelset", ["demo", "squad2-en"])
def test_a_sweep_through_the_store_equals_exact_search_on_real_sets(tmp_path: Path, labelset: str) -> None:
    path = REPO / "labelsets" / "demo" if labelset == "demo" else shared_set(labelset)
    grid = ["embedder=e5", "chunk_size=[300,600]", "chunk_overlap=[0,60]"]  # about 15 min on 2 shared cores
    if labelset != "demo":  # 1,878 units a chunking: one chunking, 300 of its questions
        grid = ["embedder=e5", "chunk_size=[512]", "chunk_overlap=[64]", "labelset.limit=300"]
    exact, store = _exact_and_store(tmp_path, path, *grid)
    pd.testing.assert_frame_equal(exact, store)


def test_an_approximate_store_sweep_records_recall_and_a_missing_lancedb_is_one_line(
    tmp_path: Path, small_demo: Path
) -> None:
    args = [f"labelset.path={small_demo}", f"reports_dir={tmp_path}", "run_id=r", "embedder=fake",
            "chunk_size=[300]", "chunk_overlap=[0]", "retriever.index=lancedb", "retriever.lancedb_index=ivf_flat",
            "retriever.lancedb_partitions=8", "retriever.lancedb_nprobes=2"]  # fmt: skip
    done = _sweep(*args)
    assert done.returncode == 0, done.stderr[-2000:]
    info = json.loads((tmp_path / "r" / "chunkings" / "recursive-s300-o0.json").read_text())
    assert info["ann"]["index"] == "lancedb ivf_flat"
    assert info["ann"]["questions"] > 0 and 0 < info["ann"]["recall_at_pool"] <= 1
    assert "lancedb ivf_flat found" in done.stderr
    # lancedb that cannot be imported (a real ImportError from a package shadowing it on the path).
    shadow = tmp_path / "shadow" / "lancedb"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('lancedb is not installed here')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "shadow"), str(REPO)])}
    missing = _sweep(*[a.replace("run_id=r", "run_id=m") for a in args], env=env)
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [
        'evalkit: error: retriever.index=lancedb needs lancedb: pip install -e ".[vectorstore]" '
        "(or retriever.index=exact)"
    ]
    assert not (tmp_path / "m").exists()


def test_the_external_lancedb_example_scores_like_the_sweeps_own_store(tmp_path: Path, small_demo: Path) -> None:
    store = tmp_path / "store"
    build = [sys.executable, "examples/lancedb_retriever/retriever.py", "build", str(small_demo), str(store)]
    cache = {**os.environ, "EVALKIT_CACHE_PATH": f"{tmp_path}/cache/e.sqlite"}  # the sweeps' cache_path below
    built = subprocess.run([*build, "--chunk-size", "300"], cwd=REPO, capture_output=True, text=True, env=cache)
    assert built.returncode == 0, built.stderr[-2000:]
    # Filters off: the sweep filters before ranking, an external retriever's hits are filtered after.
    shared = [f"labelset.path={small_demo}", f"cache_path={tmp_path}/cache/e.sqlite", "embedder=e5",
              "filters.enabled=false", "top_k=[1,3,5]", "pool_size=10", "threshold=[0.0]", "run_id=r"]  # fmt: skip
    target = "retriever.target=examples.lancedb_retriever.retriever:retrieve"
    env = {**cache, "EVALKIT_LANCEDB_STORE": str(store)}
    external = _sweep(*shared, f"reports_dir={tmp_path}/ext", "retriever=external", target, env=env)
    assert external.returncode == 0, external.stderr[-2000:]
    own = _sweep(*shared, f"reports_dir={tmp_path}/own", "retriever.index=lancedb", "chunk_size=[300]",
                 "chunk_overlap=[0]")  # fmt: skip
    assert own.returncode == 0, own.stderr[-2000:]
    stats = json.loads((tmp_path / "own" / "r" / "run_stats.json").read_text(encoding="utf-8"))
    assert stats["texts_embedded_total"] == 0, "the store's chunk vectors and the queries' came from the cache"
    keys = ["top_k", "question_id"]
    ext = pd.read_parquet(tmp_path / "ext" / "r" / "results.parquet").sort_values(keys, ignore_index=True)
    mine = pd.read_parquet(tmp_path / "own" / "r" / "results.parquet").sort_values(keys, ignore_index=True)
    assert 0.3 < ext.loc[ext.top_k == 5, "recall"].mean() <= 1.0
    # Same chunks, same model, same ranking: every rank-based metric equal per question.
    for column in ("recall", "gold_rank_in_pool", "answerable"):
        pd.testing.assert_series_equal(ext[column], mine[column], check_names=False)
    # Scores: LanceDB's float32 cosine against evalkit's exact one.
    assert np.allclose(ext["best_score"], mine["best_score"], atol=1e-6, equal_nan=True)


# A store that does not read heals like the cache: moved aside with one warning, rebuilt, results unchanged.


def _table(store: Path) -> Path:
    (lance,) = store.glob("*.lance")
    return lance


def _marker(store: Path) -> Path:
    return _table(store).with_suffix(".json")


def _rewrite_files(pattern: str, change) -> Callable[[Path], None]:  # type: ignore[no-untyped-def]
    def corrupt(store: Path) -> None:
        files = sorted(_table(store).glob(pattern))
        assert files, pattern
        for path in files:
            change(path)

    return corrupt


def _marker_lies(store: Path) -> None:
    """The marker still names these vectors; the table now holds others (a copy from elsewhere)."""
    import lancedb
    import pyarrow as pa

    lance = _table(store)
    table = lancedb.connect(str(store)).open_table(lance.stem)
    stored = table.to_arrow()
    vectors = stored["vector"].combine_chunks().flatten().to_numpy().reshape(stored.num_rows, -1)[::-1].copy()
    replaced = pa.table({"unit": stored["unit"], "vector": pa.FixedSizeListArray.from_arrays(
        pa.array(vectors.ravel()), vectors.shape[1])})  # fmt: skip
    lancedb.connect(str(store)).create_table(lance.stem, replaced, mode="overwrite")


def _replace_with_file(path: Path) -> None:
    shutil.rmtree(path)
    path.write_bytes(b"not a folder")


STORE_CORRUPTIONS: dict[str, Callable[[Path], None]] = {
    "data file deleted": _rewrite_files("data/*.lance", Path.unlink),
    "data file truncated": _rewrite_files("data/*.lance", lambda p: p.write_bytes(p.read_bytes()[:-100])),
    "data file random bytes": _rewrite_files("data/*.lance", lambda p: p.write_bytes(os.urandom(p.stat().st_size))),
    "garbage manifest": _rewrite_files("_versions/*.manifest", lambda p: p.write_bytes(os.urandom(400))),
    "marker not JSON": lambda store: _marker(store).write_text("{fingerprint: ", encoding="utf-8"),
    "marker lies": _marker_lies,
    "table folder is a file": lambda store: _replace_with_file(_table(store)),
    "store folder is a file": _replace_with_file,
}  # fmt: skip


@pytest.fixture(scope="module")
def clean_store_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], pd.DataFrame]:
    """One clean sweep through the store: its cache folder (the store beside the cache) and its results."""
    from tests.conftest import demo_subset

    root = tmp_path_factory.mktemp("clean-store")
    labelset = demo_subset(root / "set")
    args = [f"labelset.path={labelset}", "run_id=r", "embedder=fake", "chunk_size=[300]", "chunk_overlap=[0]",
            "retriever.index=lancedb"]  # fmt: skip
    done = _sweep(*args, f"cache_path={root}/cache/evalkit.sqlite", f"reports_dir={root}/reports")
    assert done.returncode == 0, done.stderr[-2000:]
    return root / "cache", args, pd.read_parquet(root / "reports" / "r" / "results.parquet")


@pytest.mark.parametrize("corruption", sorted(STORE_CORRUPTIONS))
def test_a_store_that_does_not_read_is_moved_aside_and_rebuilt_with_the_clean_runs_results(
    tmp_path: Path, clean_store_run: tuple[Path, list[str], pd.DataFrame], corruption: str
) -> None:
    clean_cache, args, clean_results = clean_store_run
    cache = tmp_path / "cache"
    shutil.copytree(clean_cache, cache)
    store = cache / "vectorstore"
    STORE_CORRUPTIONS[corruption](store)
    done = _sweep(*args, f"cache_path={cache}/evalkit.sqlite", f"reports_dir={tmp_path}/reports")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    warned = [line for line in done.stderr.splitlines() if "vector store" in line]
    assert len(warned) == 1 and warned[0].startswith("evalkit: warning: "), done.stderr
    moved = [p for p in (store.iterdir() if store.is_dir() else []) if ".corrupt-" in p.name]
    moved += [p for p in cache.iterdir() if ".corrupt-" in p.name]
    assert any(str(p) in warned[0] for p in moved), (warned, moved)  # both paths named, the old one kept
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "reports" / "r" / "results.parquet"), clean_results)
    # Healed for good: the next run reuses the rebuilt table without a word.
    again = _sweep(*args, f"cache_path={cache}/evalkit.sqlite", f"reports_dir={tmp_path}/again")
    assert again.returncode == 0 and "vector store" not in again.stderr, again.stderr[-2000:]
