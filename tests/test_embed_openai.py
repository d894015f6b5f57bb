"""``embedder=openai`` through the real ``openai`` SDK: against llama.cpp's own embeddings endpoint (xllamacpp's
HTTP server on 127.0.0.1 with the bundled 0.5B GGUF, mean pooling) behind a counting proxy, a dense retrieval
sweep on a tiny set through it, and a loopback stand-in for faults."""

from __future__ import annotations

import gc
import json
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from evalkit.answers.generation.local import LocalSettings, server_params
from evalkit.answers.generation.models import DEFAULT_MODEL_ID, model_file, parts_model
from evalkit.cache import Cache
from evalkit.retrieval.embedding.base import EmbedCounter, EmbeddingError, embed_texts
from evalkit.retrieval.embedding.registry import make_embedder
from evalkit.retrieval.embedding.settings import EmbedderSettings
from tests.conftest import REPO
from tests.loopback.openai_server import OpenAILoopback, unit_vector

QWEN_DIM = 896
"""The 0.5B model's hidden size: the length of its pooled embeddings."""
TEXTS = [
    "The cat sat on the mat.",
    "Rate limits allow a burst of 20.",
    "住宿标准为每晚六百元。",
    "The cat sat on the mat.",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def llama_embeddings() -> Iterator[str]:
    """llama.cpp's server in embeddings mode on a free loopback port (the bundled model, mean pooling)."""
    xllamacpp = pytest.importorskip("xllamacpp")
    params = server_params(xllamacpp, model_file(parts_model(DEFAULT_MODEL_ID)), LocalSettings(n_ctx=512))
    params.n_batch = params.n_ubatch = 512  # an embedding is one pass over the whole text
    params.hostnames = ["127.0.0.1"]
    params.port = free_port()
    params.embedding = True
    params.pooling_type = xllamacpp.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
    server = xllamacpp.Server(params)
    yield f"http://127.0.0.1:{params.port}"
    del server
    gc.collect()


def settings(base_url: str, **changes: Any) -> EmbedderSettings:
    values: dict[str, Any] = {
        "name": "openai",
        "model": "qwen-0.5b-mean",
        "dimension": QWEN_DIM,
        "api_key_env": None,
        "base_url": base_url,
        "retry_base_delay_s": 0.0,
        **changes,
    }
    return EmbedderSettings(**values)


def test_real_server_vectors_batches_and_cache(llama_embeddings: str, tmp_path: Path) -> None:
    with OpenAILoopback(upstream=llama_embeddings) as proxy, Cache(tmp_path / "c.sqlite") as cache:
        embedder = make_embedder(settings(proxy.base_url, batch_size=2), REPO / "conf" / "pricing")
        counter = EmbedCounter()
        vectors = embed_texts(embedder, TEXTS, "passage", cache, counter)
        assert vectors.shape == (4, QWEN_DIM) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        assert proxy.counts["/v1/embeddings"] == 2  # 3 distinct texts, 2 per request
        assert [body["input"] for body in proxy.bodies] == [TEXTS[:2], TEXTS[2:3]]
        assert np.array_equal(vectors[0], vectors[3])
        # The same vectors as llama.cpp's own reply (the real shape: data[i].embedding), unit-normed.
        raw = urllib.request.Request(
            f"{llama_embeddings}/v1/embeddings",
            data=json.dumps({"model": "x", "input": [TEXTS[1]], "encoding_format": "float"}).encode(),
            headers={"Content-Type": "application/json"},
        )
        direct = np.asarray(json.loads(urllib.request.urlopen(raw, timeout=120).read())["data"][0]["embedding"])
        assert np.allclose(vectors[1], direct / np.linalg.norm(direct), atol=1e-4)
        # A query of the same text is the same vector, from the cache (the endpoint has no input type).
        again = embed_texts(embedder, [TEXTS[0]], "query", cache)
        assert np.array_equal(again[0], vectors[0]) and proxy.counts["/v1/embeddings"] == 2
        assert counter.tokens_billed == {}  # not priced: nothing billed is recorded as paid


@pytest.mark.slow
def test_dense_sweep_through_the_endpoint(llama_embeddings: str, tmp_path: Path, tiny_set: Path) -> None:
    with OpenAILoopback(upstream=llama_embeddings) as proxy:
        command = [
            sys.executable, "-m", "evalkit.sweep", f"labelset.path={tiny_set}", "retriever=dense",
            "embedder=openai", f"embedder.base_url={proxy.base_url}", "embedder.api_key_env=null",
            "embedder.model=qwen-0.5b-mean", f"embedder.dimension={QWEN_DIM}", "sweep=quick", "position=off",
            "answer_check=off",
            "report=false", "progress=false", f"reports_dir={tmp_path}", f"cache_path={tmp_path / 'c.sqlite'}",
            "run_id=openai-dense",
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=900, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        sent = proxy.counts["/v1/embeddings"]
        assert sent >= 1
        again = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=900, check=False)
        assert again.returncode == 0 and proxy.counts["/v1/embeddings"] == sent  # the re-run embeds nothing
    run = tmp_path / "openai-dense"
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["embedder"] == {"identity": "qwen-0.5b-mean@qwen-0.5b-mean", "dim": QWEN_DIM}
    results = pd.read_parquet(run / "results.parquet")
    assert results["question_id"].nunique() == 3 and results.loc[results["answerable"], "recall"].notna().all()
    assert results.loc[results["answerable"], "recall"].max() > 0  # the endpoint's vectors find gold units


# --------------------------------------------------------------------------- the stand-in: faults and settings


@pytest.fixture
def stand_in() -> Iterator[OpenAILoopback]:
    with OpenAILoopback(dim=8) as srv:
        yield srv


@pytest.mark.parametrize("faults", [["429"], ["500", "503"], ["reset"]])
def test_transient_faults_are_retried(stand_in: OpenAILoopback, tmp_path: Path, faults: list[str]) -> None:
    stand_in.script.extend(faults)
    embedder = make_embedder(settings(stand_in.base_url, dimension=8))
    with Cache(tmp_path / "c.sqlite") as cache:
        vectors = embed_texts(embedder, ["a b", "c d"], "passage", cache)
    assert np.allclose(vectors[0], unit_vector("a b", 8), atol=1e-6)
    assert stand_in.counts["/v1/embeddings"] == len(faults) + 1


@pytest.mark.parametrize(("fault", "says"), [("401", "refused the key in"), ("404", "not found, or no /embeddings")])
def test_client_errors_are_one_line(stand_in: OpenAILoopback, fault: str, says: str) -> None:
    stand_in.script.append(fault)
    embedder = make_embedder(settings(stand_in.base_url, dimension=8))
    with pytest.raises(EmbeddingError, match=says):
        embedder.embed_batch(["a"], "passage")
    assert stand_in.counts["/v1/embeddings"] == 1


def test_wrong_or_unknown_dimension_is_a_setting_to_fix(stand_in: OpenAILoopback) -> None:
    with pytest.raises(EmbeddingError, match=r"set embedder\.dimension=8"):
        make_embedder(settings(stand_in.base_url, dimension=16)).embed_batch(["a"], "passage")
    assert stand_in.counts["/v1/embeddings"] == 1
    with pytest.raises(EmbeddingError, match=r"^embedder\.dimension: the size of qwen-0\.5b-mean's vectors"):
        make_embedder(settings(stand_in.base_url, dimension=None))


def test_priced_model_charges_and_shortens(stand_in: OpenAILoopback) -> None:
    embedder = make_embedder(
        settings(stand_in.base_url, model="text-embedding-3-small", dimension=None, output_dimension=8),
        REPO / "conf" / "pricing",
    )
    assert (
        embedder.priced
        and embedder.dim == 8
        and embedder.identity == "text-embedding-3-small@text-embedding-3-small/d8"
    )
    assert embedder.request_cost_usd(["one two three four"]) > 0
    embedder.embed_batch(["a"], "passage")
    assert stand_in.bodies[-1] == {
        "model": "text-embedding-3-small",
        "input": ["a"],
        "encoding_format": "float",
        "dimensions": 8,
    }


def test_a_sweep_through_the_endpoint_prints_no_line_per_request(stand_in: OpenAILoopback, tmp_path: Path) -> None:
    """The HTTP client logs each request at INFO; Hydra's console handler showed one "[HYDRA] HTTP Request" line
    per embedding batch. The sweep's log is evalkit's own lines."""
    from tests.conftest import demo_subset

    labelset = demo_subset(tmp_path / "set", n_docs=4)
    command = [sys.executable, "-m", "evalkit.sweep", "retriever=dense", "embedder=openai",
               f"embedder.base_url={stand_in.base_url}", "embedder.api_key_env=null", "embedder.dimension=8",
               "embedder.model=stand-in", "embedder.batch_size=4", "sweep=quick", "top_k=[3]", "position=off",
               "answer_check=off", "report=false", "progress=false", f"labelset.path={labelset}",
               f"reports_dir={tmp_path / 'reports'}"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(stand_in.bodies) >= 2, "the texts went to the endpoint in several requests"
    assert "HTTP Request" not in done.stdout + done.stderr, done.stderr[-2000:]
