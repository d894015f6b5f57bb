"""generator=openai against a real llama.cpp server on 127.0.0.1 (xllamacpp's own HTTP server, the bundled 0.5B
GGUF), behind a loopback proxy that counts the requests reaching it: the same prompts answered as by the
in-process local backend, first-token times, and a position run killed mid-way that resumes without asking an
answered request again. The servers listen on 127.0.0.1 only and stop with the module (or the process)."""

from __future__ import annotations

import gc
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalkit.answers.generation import make_generator, prompts_for
from evalkit.answers.generation.local import LlamaCppGenerator, LocalSettings, server_params
from evalkit.answers.generation.models import DEFAULT_MODEL_ID, model_file, parts_model
from evalkit.answers.generation.request import build_request
from tests.conftest import REPO
from tests.loopback.openai_server import OpenAILoopback

CONF = REPO / "conf" / "generator"
N_CTX = 2048
GREEDY_EXTRAS = {"top_k": 40, "top_p": 0.95, "min_p": 0.05, "repeat_penalty": 1.0, "cache_prompt": False}
"""What the in-process backend sends besides temperature and seed (generator=local's payload), sent here too."""
PROMPTS = [
    ("Who founded Acme?", "[d1] Acme was founded in 1921 by Maria Lopez in Lyon, France."),
    ("What colour is the sky on Mars by day?", "[d2] The Martian sky is butterscotch by day and blue at sunset."),
    ("What is the capital of Peru?", "[d3] Bananas are yellow and grow in bunches."),
    ("How many moons does Mars have?", "[d4] Mars has two small moons, Phobos and Deimos."),
    ("When did the bridge open?", "[d5] The Lune bridge opened to traffic in May 1907 after six years of work."),
    ("Which river flows through Lyon?", "[d6] Lyon lies where the Rhône meets the Saône."),
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def openai_conf(base_url: str, **changes: Any) -> dict[str, Any]:
    cfg = yaml.safe_load((CONF / "openai.yaml").read_text(encoding="utf-8"))
    return {
        **cfg,
        "base_url": base_url,
        "api_key_env": None,
        "model": DEFAULT_MODEL_ID,
        "extra_body": GREEDY_EXTRAS,
        "concurrency": 1,
        **changes,
    }


@pytest.fixture(scope="module")
def llama() -> Iterator[str]:
    """llama.cpp's HTTP server in this process on a free loopback port: the bundled model, the local defaults."""
    xllamacpp = pytest.importorskip("xllamacpp")
    params = server_params(xllamacpp, model_file(parts_model(DEFAULT_MODEL_ID)), LocalSettings(n_ctx=N_CTX))
    params.hostnames = ["127.0.0.1"]
    params.port = free_port()
    server = xllamacpp.Server(params)
    yield f"http://127.0.0.1:{params.port}"
    del server
    gc.collect()


@pytest.fixture
def proxy(llama: str) -> Iterator[OpenAILoopback]:
    with OpenAILoopback(upstream=llama) as srv:
        yield srv


def test_server_answers_as_the_in_process_backend(proxy: OpenAILoopback) -> None:
    """Same weights, threads, context and greedy settings: the endpoint's answers equal the in-process ones."""
    remote = make_generator(openai_conf(proxy.base_url, max_tokens=48))
    local = make_generator({**yaml.safe_load((CONF / "local.yaml").read_text(encoding="utf-8")), "n_ctx": N_CTX})
    assert isinstance(local, LlamaCppGenerator)
    texts = prompts_for(openai_conf(proxy.base_url), "en")
    pairs = []
    for question, context in PROMPTS:
        request = build_request(question, context, model=DEFAULT_MODEL_ID, max_tokens=48, **texts)
        pairs.append((remote.generate(request), local.generate(request)))
    assert proxy.counts["/v1/chat/completions"] == len(PROMPTS)
    for served, own in pairs:
        assert served.text == own.text and served.stop_reason == own.stop_reason
        assert served.usage.input_tokens == own.usage.input_tokens
        assert served.usage.output_tokens == own.usage.output_tokens
        # Streamed: the wall clock to the first content token; in-process: llama.cpp's own timings.
        assert served.first_token_s is not None and served.total_s is not None
        assert 0 < served.first_token_s <= served.total_s
        assert own.first_token_s is not None and own.total_s is not None and 0 < own.first_token_s <= own.total_s
    assert any("1921" in served.text for served, _ in pairs)


def position_command(root: Path, labelset: Path, base_url: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "evalkit.sweep",
        "position=smoke",
        f"labelset.path={labelset}",
        f"reports_dir={root}",
        f"cache_path={root / 'cache.sqlite'}",
        "run_id=openai-position",
        "retriever=bm25",
        "progress=false",
        "report=false",
        "chunk_size=[512]",
        "chunk_overlap=[64]",
        "top_k=[5]",
        "threshold=[0.0]",
        "position.subset.size=3",
        "position.time_budget_s=null",
        "position.max_tokens=24",
        "generator=openai",
        f"generator.base_url={base_url}",
        "generator.api_key_env=null",
        f"generator.model={DEFAULT_MODEL_ID}",
        "generator.concurrency=1",
        f"generator.window={N_CTX}",
    ]


@pytest.mark.slow
def test_position_run_killed_mid_way_resumes_without_asking_again(
    tmp_path: Path, small_demo: Path, proxy: OpenAILoopback
) -> None:
    """The smoke run end to end through the endpoint; killed after 3 requests, the re-run asks only the rest."""
    command = position_command(tmp_path, small_demo, proxy.base_url)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    first = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 600
    while proxy.counts["/v1/chat/completions"] < 3 and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    first.send_signal(signal.SIGKILL)
    first.wait()
    asked_before = proxy.counts["/v1/chat/completions"]
    assert asked_before >= 3, "the run ended before it was killed"

    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    bodies = [json.dumps(b, sort_keys=True) for b in proxy.bodies]
    repeats = len(bodies) - len(set(bodies))
    assert repeats <= 1, "only the request in flight at the kill may be asked again (concurrency 1)"
    position = next(tmp_path.rglob("position/status.json")).parent
    status = json.loads((position / "status.json").read_text(encoding="utf-8"))
    assert status["state"] == "ran" and status["smoke"].startswith("position: SMOKE RUN"), status
    assert len(set(bodies)) >= asked_before
