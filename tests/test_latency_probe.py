"""``python -m evalkit.latency probe`` measures a served model's first-token latency and writes a profile the
answer check reads: against a loopback OpenAI-compatible server whose first token comes after a delay that
grows with the prompt (0.2 s per 1,000 characters), with HTTP/1.0-style closing replies."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalkit.answers.generation.latency_profile import read_profile
from tests.loopback.openai_server import OpenAILoopback


@pytest.fixture
def server() -> Iterator[OpenAILoopback]:
    loop = OpenAILoopback()
    loop.prefill_s_per_kchar = 0.2
    loop.start()
    try:
        yield loop
    finally:
        loop.stop()


def _probe(tmp_path: Path, base_url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalkit.latency", "probe", "--lengths", "100,1500", "--repeats", "3", "--out",
         str(tmp_path / "profile.json"), "generator=openai", f"generator.base_url={base_url}",
         "generator.model=served-model", "generator.api_key_env=null", "generator.max_retries=0", *extra],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )  # fmt: skip


def test_a_probe_writes_a_profile_whose_line_grows_with_the_prompt(tmp_path: Path, server: OpenAILoopback) -> None:
    done = _probe(tmp_path, server.base_url)
    assert done.returncode == 0, done.stderr[-2000:]
    record = json.loads((tmp_path / "profile.json").read_text(encoding="utf-8"))
    lengths = {row["prompt_tokens"]: row for row in record["lengths"]}
    assert set(lengths) == {100, 1500} and all(row["n"] == 3 for row in lengths.values())
    assert lengths[1500]["p50"] > lengths[100]["p50"] + 0.5, lengths  # ~6,000 more characters: ~1.2 s more
    model = read_profile(tmp_path / "profile.json")
    assert model.n == 6 and model.slope > 0
    assert server.counts["/v1/chat/completions"] == 6, "one request per timing: nothing cached, nothing retried"


def test_an_endpoint_that_is_down_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = _probe(tmp_path, "http://127.0.0.1:9/v1")
    assert done.returncode == 2 and done.stderr.count("\n") <= 3, done.stderr
    assert "evalkit.latency: error:" in done.stderr and "Traceback" not in done.stderr
