"""The rerank stage inside the sweep: local reranker with calibration, and Cohere (real SDK, loopback
server) with a budget cap, a failure mid-sweep, and resumption to identical results."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from tests.loopback.cohere_server import CohereServer
from tests.test_sweep import run_in_process

KEY = "loopback-key"
GRID = ["chunk_size=[300,500]", "chunk_overlap=[0]", "top_k=[1,5]", "progress=false", "pool_size=20", "report=false"]


@pytest.fixture
def cohere(monkeypatch: pytest.MonkeyPatch) -> Iterator[CohereServer]:
    monkeypatch.setenv("COHERE_API_KEY", KEY)
    with CohereServer(api_key=KEY) as server:
        yield server  # type: ignore[misc]


def test_local_reranker_sweep_records_thresholds_zero_hit_and_calibration(tmp_path: Path, small_demo: Path) -> None:
    run = run_in_process([*GRID, f"labelset.path={small_demo}", f"reports_dir={tmp_path}", "reranker=local"])
    summary = pd.read_csv(run / "summary.csv")
    assert set(summary["reranker"]) == {"local"}
    assert sorted(summary["threshold"].unique()) == [0.0, 0.5, 0.65, 0.8, 0.9]
    assert {"zero_hit_answerable", "zero_hit_unanswerable", "hit", "context_precision"} <= set(summary.columns)
    # Zero-hit can only grow with the threshold (same chunking, same k): no fallback to the top-1 chunk.
    for _, group in summary.groupby(["chunking", "top_k"]):
        zero = group.sort_values("threshold")["zero_hit"].to_numpy()
        assert (zero[1:] >= zero[:-1]).all()
    calibration = pd.read_csv(run / "calibration.csv")
    assert {"all", "en", "zh-Hans"} <= set(calibration["question_class"])
    assert set(calibration["stage"]) == {"rerank"}
    edges = calibration[["overlap_low", "overlap_high", "recommended_threshold"]]
    assert edges.notna().all().all()


def test_cohere_budget_cap_stops_then_resumes_to_the_same_results(
    tmp_path: Path, small_demo: Path, cohere: CohereServer
) -> None:
    base = [*GRID, f"labelset.path={small_demo}", "reranker=cohere", f"reranker.base_url={cohere.url}"]
    capped = [*base, f"reports_dir={tmp_path / 'capped'}", "run_id=r"]
    # One request per question (20 documents = 1 search unit = $0.002): a cap of $0.05 stops after 25.
    with pytest.raises(SystemExit) as stopped:
        run_in_process([*capped, "budget_usd=0.05"])
    assert stopped.value.code == 3
    assert len(cohere.rerank_requests) == 25
    assert not (tmp_path / "capped" / "r" / "results.parquet").exists()
    run_in_process([*capped, "budget_usd=10"])
    paid = len(cohere.rerank_requests)

    cohere.reset()
    clean = run_in_process([*base, f"reports_dir={tmp_path / 'clean'}", "run_id=r"])
    assert len(cohere.rerank_requests) == paid, "the capped run and its resumption paid for each pair once"
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "capped" / "r" / "results.parquet"), pd.read_parquet(clean / "results.parquet")
    )


def test_cohere_error_mid_sweep_keeps_what_is_done(tmp_path: Path, small_demo: Path, cohere: CohereServer) -> None:
    args = [*GRID, f"labelset.path={small_demo}", "reranker=cohere", f"reranker.base_url={cohere.url}"]
    args += [f"reports_dir={tmp_path}", "run_id=r", "reranker.max_retries=0"]
    n_questions = len(pd.read_json(small_demo / "questions.jsonl", lines=True))
    rerank = cohere.routes[("POST", "/v2/rerank")]
    served = []

    def fails_in_the_second_chunking(body: object) -> tuple[int, object]:
        served.append(1)
        if len(served) > n_questions + 3:  # a few questions into the second chunking
            return 400, {"message": "invalid request: scripted failure"}
        return rerank(body)

    cohere.route("POST", "/v2/rerank", fails_in_the_second_chunking)
    with pytest.raises(SystemExit) as failed:
        run_in_process(args)
    assert failed.value.code == 2
    assert len(list((tmp_path / "r" / "chunkings").glob("*.json"))) == 1, "the first chunking was written"

    cohere.route("POST", "/v2/rerank", rerank)
    cohere.reset()
    run_in_process(args)
    assert len(list((tmp_path / "r" / "chunkings").glob("*.json"))) == 2
    # Only the second chunking's questions not already scored were sent again.
    assert len(cohere.rerank_requests) == n_questions - 3


def test_the_budget_caps_the_run_across_invocations(tmp_path: Path, small_demo: Path, cohere: CohereServer) -> None:
    """Three invocations at budget_usd=0.05 spend $0.05 in all, not $0.15: the spend is kept in the run folder."""
    import json

    capped = [*GRID, f"labelset.path={small_demo}", "reranker=cohere", f"reranker.base_url={cohere.url}",
              f"reports_dir={tmp_path}", "run_id=r", "budget_usd=0.05"]  # fmt: skip
    for _ in range(3):
        with pytest.raises(SystemExit) as stopped:
            run_in_process(capped)
        assert stopped.value.code == 3
    assert len(cohere.rerank_requests) == 25  # $0.002 each: the first invocation used the budget, the others none
    ledger = json.loads((tmp_path / "r" / "spend.json").read_text(encoding="utf-8"))
    assert 0 < ledger["spent_usd"] <= 0.05 + 1e-12
    with pytest.raises(SystemExit):
        run_in_process([*capped[:-1], "budget_usd=nan"])
