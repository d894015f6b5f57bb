"""``embedder=cohere`` through the real ``cohere`` SDK against a loopback server speaking Cohere's v2 embed format.

What is checked: input_type per kind, batches of at most 96, the vectors the server sent (unit-normed),
the cache (nothing paid twice), every fault kind retried to the same vectors, errors a retry cannot fix
as one line, the budget charged before each request and again for each resend after a lost reply,
and whole sweeps: a clean one and one under 30% injected faults give the same results.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalkit.cache import Cache
from evalkit.cost.budget import BudgetExceeded, SpendGuard
from evalkit.retrieval.embedding.base import EmbedCounter, EmbeddingError, embed_texts
from evalkit.retrieval.embedding.cohere import CohereEmbedder
from evalkit.retrieval.embedding.settings import EmbedderSettings
from tests.conftest import REPO
from tests.loopback.cohere_server import CohereServer, hashed_words
from tests.loopback.faults import FAULT_KINDS, FaultPlan

API_KEY = "test-key"
PRICING = REPO / "conf" / "pricing"
TEXTS = [f"passage number {i} about topic {i % 7} and city {i % 5}" for i in range(200)]


@pytest.fixture
def server() -> Iterator[CohereServer]:
    with CohereServer(api_key=API_KEY) as running:
        yield running  # type: ignore[misc]


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COHERE_API_KEY", API_KEY)


def make(server: CohereServer, waits: list[float] | None = None, **settings: object) -> CohereEmbedder:
    options = {"name": "cohere", "base_url": server.url, "timeout_s": 5.0, "retry_base_delay_s": 0.001} | settings
    return CohereEmbedder(EmbedderSettings(**options), PRICING, sleep=(waits if waits is not None else []).append)  # type: ignore[arg-type]


def unit(vectors: list[list[float]]) -> np.ndarray:
    matrix = np.asarray(vectors, dtype=np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def test_passages_and_queries_go_as_search_document_and_search_query_in_batches_of_96(
    server: CohereServer, tmp_path: Path
) -> None:
    embedder = make(server)
    with Cache(tmp_path / "cache.sqlite") as cache:
        counter = EmbedCounter()
        passages = embed_texts(embedder, TEXTS, "passage", cache, counter)
        queries = embed_texts(embedder, TEXTS[:3], "query", cache, counter)
    sent = server.embed_requests
    assert [len(r.body["texts"]) for r in sent] == [96, 96, 8, 3]
    assert [r.body["input_type"] for r in sent] == ["search_document"] * 3 + ["search_query"]
    assert all(r.body["model"] == "embed-v4.0" and r.body["embedding_types"] == ["float"] for r in sent)
    np.testing.assert_allclose(passages, unit([hashed_words(t, 1536) for t in TEXTS]), rtol=1e-6)
    np.testing.assert_allclose(queries, unit([hashed_words(t, 1536) for t in TEXTS[:3]]), rtol=1e-6)
    assert counter.texts_sent == {"embed-v4.0@embed-v4.0": 203}
    assert counter.tokens_billed["embed-v4.0@embed-v4.0"] == sum(len(t.split()) for t in [*TEXTS, *TEXTS[:3]])


def test_the_cache_serves_a_second_run_and_keeps_the_kinds_apart(server: CohereServer, tmp_path: Path) -> None:
    embedder = make(server)
    with Cache(tmp_path / "cache.sqlite") as cache:
        first = embed_texts(embedder, TEXTS[:10], "passage", cache)
        server.reset()
        again = embed_texts(make(server), TEXTS[:10], "passage", cache)
        assert server.embed_requests == []
        embed_texts(embedder, TEXTS[:10], "query", cache)  # asymmetric: a query is another embedding
    np.testing.assert_array_equal(first, again)
    assert len(server.embed_requests) == 1


def test_output_dimension_is_sent_and_is_part_of_the_identity(server: CohereServer, tmp_path: Path) -> None:
    small, full = make(server, output_dimension=256), make(server)
    assert small.dim == 256 and small.identity != full.identity
    with Cache(tmp_path / "cache.sqlite") as cache:
        vectors = embed_texts(small, TEXTS[:4], "passage", cache)
    assert vectors.shape == (4, 256) and server.embed_requests[0].body["output_dimension"] == 256


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_every_fault_kind_is_retried_to_the_same_vectors(kind: str, tmp_path: Path) -> None:
    plan = FaultPlan(rate=1.0, kinds=(kind,), max_consecutive=2)
    with CohereServer(api_key=API_KEY, faults=plan) as server, Cache(tmp_path / "cache.sqlite") as cache:
        vectors = embed_texts(make(server, max_retries=3), TEXTS[:5], "passage", cache)
    assert [r.fault for r in server.embed_requests] == [kind, kind, None]
    np.testing.assert_allclose(vectors, unit([hashed_words(t, 1536) for t in TEXTS[:5]]), rtol=1e-6)


def test_a_status_a_retry_cannot_fix_is_one_line_at_once(server: CohereServer, tmp_path: Path) -> None:
    server.fail_next(401, message="invalid api token")
    with Cache(tmp_path / "cache.sqlite") as cache, pytest.raises(EmbeddingError) as failed:
        embed_texts(make(server), TEXTS[:2], "passage", cache)
    assert str(failed.value) == ("Cohere embed (embed-v4.0) failed: HTTP 401: invalid api token (check COHERE_API_KEY)")
    assert len(server.embed_requests) == 1


def test_a_missing_key_names_the_variable_and_the_offline_embedders(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COHERE_API_KEY")
    monkeypatch.delenv("CO_API_KEY", raising=False)
    with pytest.raises(EmbeddingError, match=r"embedder=cohere needs an API key: set COHERE_API_KEY .*embedder=e5"):
        CohereEmbedder(EmbedderSettings(name="cohere"), PRICING)


def test_the_budget_is_charged_before_each_request_and_for_each_resend_after_a_lost_reply(tmp_path: Path) -> None:
    texts = TEXTS[:96]
    with CohereServer(api_key=API_KEY) as clean, Cache(tmp_path / "a.sqlite") as cache:
        paid = SpendGuard()
        embed_texts(make(clean), texts, "passage", cache, guard=paid)
        one_request = make(clean).request_cost_usd(texts)
    assert paid.spent_usd == pytest.approx(one_request) and one_request > 0
    # A reply cut short after the server did the work: the resend is charged too (the first may be billed).
    lost = FaultPlan(rate=1.0, kinds=("truncated",), max_consecutive=1)
    with CohereServer(api_key=API_KEY, faults=lost) as flaky, Cache(tmp_path / "b.sqlite") as cache:
        guard = SpendGuard()
        embed_texts(make(flaky), texts, "passage", cache, guard=guard)
    assert guard.spent_usd == pytest.approx(2 * one_request)
    assert set(guard.by_item) == {"embed"}
    with CohereServer(api_key=API_KEY) as server, Cache(tmp_path / "c.sqlite") as cache:
        with pytest.raises(BudgetExceeded):
            embed_texts(make(server), texts, "passage", cache, guard=SpendGuard(limit_usd=one_request / 2))
        assert server.embed_requests == []  # refused before anything was sent


def sweep(tmp_path: Path, server: CohereServer, run_id: str, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable, "-m", "evalkit.sweep", "embedder=cohere", f"embedder.base_url={server.url}",
        "embedder.retry_base_delay_s=0.001", "retriever=dense", "sweep=quick", "position=off",
            "answer_check=off", "report=false",
        "progress=false", f"reports_dir={tmp_path / run_id}", f"cache_path={tmp_path / run_id}.sqlite",
        f"run_id={run_id}", *extra,
    ]  # fmt: skip
    env = {**os.environ, "COHERE_API_KEY": API_KEY}
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)


def test_a_sweep_under_30_percent_faults_equals_a_clean_one_and_records_no_less_spend(tmp_path: Path) -> None:
    with CohereServer(api_key=API_KEY) as server:
        clean = sweep(tmp_path, server, "clean")
    assert clean.returncode == 0, clean.stderr
    with CohereServer(api_key=API_KEY, faults=FaultPlan(rate=0.3, seed=7)) as server:
        flaky = sweep(tmp_path, server, "flaky", "embedder.max_retries=8")
        faults = [r.fault for r in server.embed_requests if r.fault]
    assert flaky.returncode == 0, flaky.stderr
    assert faults, "the plan injected faults"
    # Each run has a reports_dir (and so a unit store) and a cache of its own: the second pays for everything again.
    frames = [pd.read_parquet(tmp_path / run / run / "results.parquet") for run in ("clean", "flaky")]
    pd.testing.assert_frame_equal(*frames)
    stats = [json.loads((tmp_path / run / run / "run_stats.json").read_text()) for run in ("clean", "flaky")]
    assert stats[0]["spent_usd"] > 0 and stats[1]["spent_usd"] >= stats[0]["spent_usd"]
    assert stats[0]["embed_tokens_billed"] == stats[1]["embed_tokens_billed"]
    # Each question's price carries its query embedding (Cohere is paid; a local embedder is not).
    assert (frames[0]["cost_per_query_usd"] > 0).all()


def test_an_unpriced_cohere_model_stops_before_any_request(tmp_path: Path, server: CohereServer) -> None:
    done = sweep(tmp_path, server, "unpriced", "embedder.model=embed-unknown-v9", "embedder.output_dimension=64")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("evalkit: error: embedder.model: unknown embedding model")
    assert server.embed_requests == []
