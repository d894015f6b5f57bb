"""Flaky APIs: at 30% injected faults of every kind, a sweep finishes in ONE invocation with the results of a
clean run, and no paid request is sent again after it succeeded.

Both providers are real SDKs against loopback servers (:mod:`tests.loopback.faults`): the retrieval sweep with
``reranker=cohere``, and the position experiment with ``generator=anthropic``. Faults are seeded and bounded
(at most three in a row for one request; the backends retry four times), so the test is deterministic.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from evalkit.answers.generation.anthropic import AnthropicGenerator
from evalkit.answers.position.experiment import position_experiment
from evalkit.cache import Cache
from evalkit.labels.read import load_labelset
from tests.loopback.anthropic_server import AnthropicLoopback
from tests.loopback.cohere_server import CohereServer
from tests.loopback.faults import FAULT_KINDS, FaultPlan
from tests.test_position import SUBSET, compose_config, job_of, plain
from tests.test_sweep import run_in_process

pytest.importorskip("anthropic")
pytest.importorskip("cohere")

FAULTS = FaultPlan(rate=0.3, seed=13, max_consecutive=3)
KEY = "dummy-key"
GRID = ["chunk_size=[300,500]", "chunk_overlap=[0]", "top_k=[1,5]", "progress=false", "pool_size=20", "report=false"]
NO_POSITION = ("position=off", "answer_check=off")  # the retrieval sweep alone (the answer side is tested below)


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COHERE_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


def _cohere_sweep(root: Path, labelset: Path, server: CohereServer) -> Path:
    return run_in_process(
        [
            *GRID,
            *NO_POSITION,
            f"labelset.path={labelset}",
            f"reports_dir={root}",  # a cache of its own (cache_path lives under reports_dir)
            "run_id=r",
            "reranker=cohere",
            f"reranker.base_url={server.url}",
            "reranker.retry_base_delay_s=0.001",
            "reranker.max_retries=4",
        ]
    )


def test_cohere_sweep_at_30_percent_faults_finishes_once_with_clean_results(
    tmp_path: Path, small_demo: Path, keys: None
) -> None:
    with CohereServer(api_key=KEY) as clean_server:
        clean = _cohere_sweep(tmp_path / "clean", small_demo, clean_server)
    with CohereServer(api_key=KEY, faults=FAULTS) as flaky_server:
        flaky = _cohere_sweep(tmp_path / "flaky", small_demo, flaky_server)  # one invocation, no SystemExit

    results = pd.read_parquet(flaky / "results.parquet")
    pd.testing.assert_frame_equal(results, pd.read_parquet(clean / "results.parquet"))
    injected = flaky_server.faults.injected
    assert set(injected) == set(FAULT_KINDS), f"every kind was injected: {dict(injected)}"
    answered = [r for r in flaky_server.rerank_requests if r.fault is None]
    assert len(answered) == len(clean_server.rerank_requests)  # each paid request answered once
    assert flaky_server.faults.paid_twice == 0
    assert sum(injected.values()) / len(flaky_server.rerank_requests) > 0.2


class _Experiment:
    """The position experiment against one loopback server, with a cache of its own."""

    def __init__(self, run_dir: Path, cfg: Any, labelset: Path) -> None:
        self.run_dir, self.cfg, self.labelset = run_dir, cfg, load_labelset(labelset)

    def run(self, server: AnthropicLoopback, name: str) -> Path:
        config = plain(self.cfg, arms=["retrieve-5", "stuff"], placements=["shuffle", "gold_at:tail"], repeats=2)
        config["generator"] = {**config["generator"], "base_url": server.url, "max_retries": 4}
        # Fast retries: a backoff ceiling of 1 ms (the bundled config has no retry_base_delay_s key yet).
        generator = AnthropicGenerator.from_config(config["generator"], retry_base_delay_s=0.001)
        with Cache(self.run_dir.parent / f"{name}-cache.sqlite") as cache:
            return position_experiment(
                job_of(config),
                self.labelset,
                cache,
                self.run_dir,
                generator=generator,
                log=lambda _: None,
                out_dir=self.run_dir.parent / name,
            )


@pytest.fixture
def experiment(tmp_path: Path, small_demo: Path, keys: None) -> Iterator[_Experiment]:
    with AnthropicLoopback(api_key=KEY) as planner:
        cfg = compose_config(
            [
                f"labelset.path={small_demo}",
                f"reports_dir={tmp_path}",
                "run_id=faults",
                "retriever=bm25",
                "progress=false",
                "report=false",
                "generator=anthropic",
                f"generator.base_url={planner.url}",
                f"position.subset.size={SUBSET}",
                "position.dry_run=true",  # the sweep only plans; the experiment runs below
                "position.max_tokens=null",  # the loopback model answers at length; smoke caps at 48
            ]
        )
        from evalkit.sweep import sweep

        yield _Experiment(sweep(cfg), cfg, small_demo)


USAGE = ["input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
         "usage_estimated", "cost_usd"]  # fmt: skip


def test_position_experiment_at_30_percent_faults_answers_like_a_clean_run(experiment: _Experiment) -> None:
    with AnthropicLoopback(api_key=KEY) as clean_server:
        clean = experiment.run(clean_server, "clean")
    # Lost replies come after the work, as a real provider's do: billed, and the prompt cache written.
    with AnthropicLoopback(api_key=KEY, faults=FAULTS, lost_replies_processed=True) as flaky_server:
        flaky = experiment.run(flaky_server, "flaky")

    rows = pd.read_parquet(flaky / "rows.parquet")
    clean_rows = pd.read_parquet(clean / "rows.parquet")
    pd.testing.assert_frame_equal(rows.drop(columns=USAGE), clean_rows.drop(columns=USAGE))
    # What the faults cost is recorded (issue 26: never cheaper than the clean run), row by row and in all.
    assert (rows["cost_usd"].fillna(0) >= clean_rows["cost_usd"].fillna(0) - 1e-12).all()
    assert rows["cost_usd"].sum() >= clean_rows["cost_usd"].sum()
    assert rows.loc[rows["cost_usd"] > clean_rows["cost_usd"], "usage_estimated"].all()
    summary, clean_summary = pd.read_parquet(flaky / "summary.parquet"), pd.read_parquet(clean / "summary.parquet")
    spent = [c for c in summary.columns if c.endswith(("_tokens", "_usd", "_estimated"))]
    pd.testing.assert_frame_equal(summary.drop(columns=spent), clean_summary.drop(columns=spent))
    assert rows["sent"].any() and rows.loc[rows["sent"], "stop_reason"].isin({"end_turn", "overflow"}).all()
    injected = flaky_server.faults.injected
    assert set(injected) == set(FAULT_KINDS), f"every kind was injected: {dict(injected)}"
    for endpoint in ("messages", "count_tokens"):
        answered = [e for e in flaky_server.log if e.endpoint == endpoint and e.fault is None]
        assert len(answered) == clean_server.counts[endpoint], endpoint  # each request answered once
    assert flaky_server.faults.paid_twice == 0
