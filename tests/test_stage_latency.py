"""The retrieval stage's per-query latency: every stage timed one query at a time, per chunking."""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_sweep import SMALL, run_in_process


def test_each_stage_is_timed_per_query_for_every_chunking(tmp_path: Path, small_demo: Path) -> None:
    # Wiring: the deterministic embedder and reranker, so each of the three stages runs without a model file.
    run_dir = run_in_process([*SMALL, f"labelset.path={small_demo}", f"reports_dir={tmp_path}",
                              "retriever=dense", "embedder=fake", "reranker=fake"])  # fmt: skip
    timed = json.loads((run_dir / "retrieval_latency.json").read_text(encoding="utf-8"))
    assert timed["warm_up"] == 1 and timed["embed"]["n"] == timed["sample"] > 0
    assert set(timed["chunkings"]) == {"recursive-s256-o0", "recursive-s512-o0"}
    for stages in timed["chunkings"].values():
        assert set(stages) == {"search", "rerank"}
        for stage in stages.values():
            assert stage["n"] == timed["sample"] and 0 < stage["p50"] <= stage["p95"]


def test_a_config_adds_its_stages_and_an_unmeasured_chunking_has_none() -> None:
    from evalkit.pipeline.answers import retrieval_seconds

    assert retrieval_seconds({"chunkings": {}, "why": "retriever=external: production searches"}, "x") is None
    measured = {"embed": {"p50": 0.01, "p95": 0.02, "n": 12}, "chunkings": {"c": {"search": {"p50": 0.001,
                "p95": 0.004, "n": 12}}}}  # fmt: skip
    both = retrieval_seconds(measured, "c")
    assert both is not None and both["p50"] == 0.011 and both["p95"] == 0.024 and both["n"] == 12


def test_the_sweeps_own_index_is_timed_and_a_reused_pool_loads_the_stored_one(tmp_path: Path, small_demo: Path) -> None:
    args = [*SMALL, f"labelset.path={small_demo}", f"reports_dir={tmp_path}", "retriever=bm25"]
    first = run_in_process([*args, "run_id=a"])
    stats = json.loads((first / "run_stats.json").read_text(encoding="utf-8"))
    # The latency pass read no chunking back from the unit store: it timed the index each pool was searched with.
    assert stats["stages_run"]["retrieve"] == 2 and stats["stages_reused"]["chunk"] == 0
    assert stats["stages_run"]["index"] == 2 and stats["stages_reused"]["index"] == 0
    # Same plan, new run: every unit comes from the store, nothing was searched here, so the pass times each
    # chunking on the index the first run stored (built once, not again).
    second = run_in_process([*args, "run_id=b"])
    stats = json.loads((second / "run_stats.json").read_text(encoding="utf-8"))
    assert stats["stages_run"]["retrieve"] == 0 and stats["stages_reused"]["chunk"] == 2
    assert stats["stages_run"]["index"] == 0 and stats["stages_reused"]["index"] == 2
    for run_dir in (first, second):
        timed = json.loads((run_dir / "retrieval_latency.json").read_text(encoding="utf-8"))
        assert set(timed["chunkings"]) == {"recursive-s256-o0", "recursive-s512-o0"}
        for stages in timed["chunkings"].values():
            assert set(stages) == {"search"} and stages["search"]["n"] == timed["sample"] > 0
