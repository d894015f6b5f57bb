"""dry_run=true prices the sweep and the position experiment before a cent is spent (Anthropic loopback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalkit.labels.read import load_labelset
from evalkit.pipeline.dryrun import PLANNING_RHO, detectable_line
from evalkit.scoring.clusters import question_clusters
from evalkit.scoring.stats import paired_binary_mde
from evalkit.scoring.stats.cluster_intervals import planning_design_effect
from tests.conftest import shared_set
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


def test_the_dry_run_states_the_gates_reach_at_the_sets_effective_size() -> None:
    """squad2-en's documents hold ~15 questions each: the reach is stated at n / design effect, worse than if
    questions were independent and better than if every document moved as one; by question it is the plain one."""
    questions = load_labelset(shared_set("squad2-en")).questions
    answerable = [q for q in questions if q.answerable]
    sizes = question_clusters(answerable)["cluster"].value_counts().to_numpy()
    effect = planning_design_effect(sizes, PLANNING_RHO)
    line = detectable_line(questions)
    assert f"{len(answerable)} answerable questions in {len(sizes)} clusters (document)" in line
    assert f"design effect {effect:.2f}" in line and effect > 3
    clustered = 100 * paired_binary_mde(int(len(answerable) / effect), 0.1)
    independent = 100 * paired_binary_mde(len(answerable), 0.1)
    assert f"{clustered:.1f} points when 10% of questions differ" in line
    assert f"{independent:.1f} points if questions were independent" in line and independent < clustered
    flat = detectable_line(questions, "question")
    assert f"{independent:.1f} points when 10% of questions differ" in flat and "design effect" not in flat
