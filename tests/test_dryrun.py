"""dry_run=true prices the sweep and the position experiment before a cent is spent (Anthropic loopback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.loopback.anthropic_server import AnthropicLoopback
from tests.test_sweep import run_in_process

KEY = "test-key"


def dry_run(tmp_path: Path, small_demo: Path, server: AnthropicLoopback, *extra: str) -> None:
    run_in_process(
        [
            "+experiment=position",
            "generator=anthropic",
            f"generator.base_url={server.url}",
            "dry_run=true",
            "position.subset.size=4",
            "position.repeats=2",
            f"labelset.path={small_demo}",
            f"reports_dir={tmp_path}",
            "progress=false",
            *extra,
        ]
    )


def test_without_a_key_the_plan_is_printed_and_nothing_is_sent(
    tmp_path: Path, small_demo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with AnthropicLoopback(api_key=KEY) as server:
        dry_run(tmp_path, small_demo, server)
        assert sum(server.counts.values()) == 0
    out = capsys.readouterr()
    text = out.out + out.err
    assert "evalkit dry run: nothing below has been sent" in text
    assert "planned: 4 questions x 4 arms" in text and "prompt tokens (estimated" in text
    assert not list(tmp_path.glob("*/position/rows.parquet")), "a dry run generates no answer"


def test_with_a_key_only_count_tokens_requests_are_sent(
    tmp_path: Path, small_demo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with AnthropicLoopback(api_key=KEY) as server:
        dry_run(tmp_path, small_demo, server, "position.count_with_model=true")
        assert server.counts, "the model's own counter was asked"
        assert set(server.counts) == {"count_tokens"}, server.counts
    out = capsys.readouterr()
    assert "prompt tokens (counted by the model" in out.out + out.err
