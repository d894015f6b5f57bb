"""Honest time for hosted models: a plan for an endpoint or for Claude batches states requests and turnaround
(a batch can take up to 24 h; re-plan rounds are sequential batches), never the local model's tokens/s."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from evalkit.answers.generation.turnaround import BATCH_TURNAROUND_H, hosted_time, is_hosted
from tests.conftest import REPO
from tests.loopback.openai_server import OpenAILoopback


def test_which_backends_are_timed_here() -> None:
    assert not is_hosted("local") and not is_hosted("fake")
    assert is_hosted("openai") and is_hosted("anthropic") and is_hosted("a-plugin")


def test_batches_take_up_to_a_day_each_and_rounds_add_up() -> None:
    one = hosted_time("anthropic", {"batch": True}, 120)
    assert f"up to {BATCH_TURNAROUND_H} h" in one and "120 requests" in one and "not timed with any tokens/s" in one
    rounds = hosted_time("anthropic", {"batch": True}, 120, rounds=4)
    assert (
        "the pilot's 120 requests in a Message Batch" in rounds
        and "each of up to 3 re-plan rounds is another batch" in rounds
    )
    assert "up to 96 h in all" in rounds


def test_an_endpoint_is_not_timed_with_tokens_per_second() -> None:
    line = hosted_time("openai", {"concurrency": 8}, 50)
    assert "50 requests to the openai endpoint, 8 at a time" in line and "not the local model's tokens/s" in line
    assert " min" not in line
    rounds = hosted_time("anthropic", {"batch": False}, 50, rounds=3)
    assert "the pilot's 50 requests to the anthropic endpoint, then up to 2 re-plan rounds, one after another" in rounds


def dry_run(tmp_path: Path, labelset: Path, *generator: str) -> str:
    command = [
        sys.executable, "-m", "evalkit.sweep", f"labelset.path={labelset}", f"reports_dir={tmp_path}",
        f"cache_path={tmp_path / 'cache.sqlite'}", "retriever=bm25", "progress=false", "report=false",
        "chunk_size=[512]", "chunk_overlap=[64]", "top_k=[5]", "threshold=[0.0]", "position=powered",
        "position.pilot_questions=4", "dry_run=true", *generator,
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout + done.stderr


def test_dry_runs_of_hosted_generators_state_turnaround(tmp_path: Path, small_demo: Path) -> None:
    with OpenAILoopback() as endpoint:  # never called: a dry run sends nothing (and needs no key)
        text = dry_run(tmp_path / "openai", small_demo, "generator=openai", f"generator.base_url={endpoint.base_url}")
        assert sum(endpoint.counts.values()) == 0
    assert "requests to the openai endpoint, 4 at a time" in text and "not the local model's tokens/s" in text
    assert "min at the planning speeds" not in text and "prompt tok/s and" not in text
    batched = dry_run(tmp_path / "claude", small_demo, "generator=anthropic", "generator.batch=true")
    assert "in Message Batches" in batched and f"up to {BATCH_TURNAROUND_H} h" in batched
    assert "re-plan rounds is another batch" in batched and "min at the planning speeds" not in batched
