"""Cost after faults: a reply lost after the provider did the work was billed, so the recorded cost of a run under
faults is never below the clean run's, nor below what the provider billed (issue 26: cache reads recorded instead
of the writes that were paid). Real ``anthropic`` SDK against the loopback server; the faults come after the work."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from evalkit.answers.generation.batches import generate_many
from evalkit.answers.generation.request import GenerationRequest, build_request
from evalkit.cache import Cache
from evalkit.cost.model import call_cost
from evalkit.cost.prices import load_price_table
from evalkit.records import Answer, Usage
from tests.loopback.anthropic_server import LOST_KINDS, AnthropicLoopback, anthropic_generator
from tests.loopback.faults import FaultPlan

pytest.importorskip("anthropic")

PRICE = load_price_table(Path(__file__).resolve().parents[1] / "conf" / "pricing").model("claude-sonnet-5")
SYSTEM = "Answer from the context only. Cite [doc_id]. " * 4
LINES = [f"[d{i}] Service {i} answers on port {8000 + i} and keeps {i} replicas." for i in range(24)]


def requests() -> list[GenerationRequest]:
    """Each question with its own context (as in the position experiment): the prefix is written once per request."""
    return [
        build_request(
            f"Which port does service {i} answer on?",
            "\n".join(LINES[i:] + LINES[:i]),
            model="claude-sonnet-5",
            system=SYSTEM,
            max_tokens=64,
            question_id=f"q{i}",
            cache_prefix=True,
        )
        for i in range(24)
    ]


def run(server: AnthropicLoopback, tmp_path: Path, name: str) -> list[Answer]:
    gen = anthropic_generator(api_key="test-key", base_url=server.url, window=0, max_retries=4, retry_base_delay_s=0.0)
    gen.min_cacheable = 20  # toy tokens: the system prompt (and so every context prefix) is cached
    with Cache(tmp_path / f"{name}.sqlite") as cache:
        return generate_many(gen, requests(), cache)


def usd(usages: list[Usage]) -> float:
    return sum(call_cost(usage, PRICE).usd for usage in usages)


@pytest.fixture
def clean(tmp_path: Path) -> Iterator[tuple[list[Answer], AnthropicLoopback]]:
    with AnthropicLoopback() as server:
        yield run(server, tmp_path, "clean"), server


def test_recorded_cost_under_lost_replies_is_never_below_the_clean_run_or_the_bill(
    clean: tuple[list[Answer], AnthropicLoopback], tmp_path: Path
) -> None:
    clean_answers, clean_server = clean
    plan = FaultPlan(rate=0.3, kinds=tuple(sorted(LOST_KINDS)), seed=26, max_consecutive=3)
    with AnthropicLoopback(faults=plan, lost_replies_processed=True) as flaky_server:
        flaky = run(flaky_server, tmp_path, "flaky")
    assert [a.text for a in flaky] == [a.text for a in clean_answers]
    lost = sum(flaky_server.faults.injected.values())
    assert lost >= 5, dict(flaky_server.faults.injected)

    # The resends found the prefix their lost attempt had written: the provider billed a write AND a read.
    billed = [Usage(**u) for u in flaky_server.billed]
    assert sum(u.cache_read_input_tokens for u in billed) > 0
    assert len(billed) == len(clean_server.billed) + sum(
        n for kind, n in flaky_server.faults.injected.items() if kind in LOST_KINDS
    )
    recorded = usd([a.usage for a in flaky])
    assert recorded >= usd(billed) - 1e-12  # never below what the provider billed
    assert recorded >= usd([a.usage for a in clean_answers]) > 0  # never cheaper than the clean run
    hit = [a for a in flaky if a.usage.cache_read_input_tokens > 0]
    assert hit and all(a.usage.estimated for a in hit)  # an answer carrying a lost attempt is labelled estimated
    for answer in hit:  # the lost attempt is recorded as the write it paid for, beside the read the reply says
        assert answer.usage.cache_creation_input_tokens >= answer.usage.cache_read_input_tokens
    clean_usage = {a.question_id: a.usage for a in clean_answers}
    assert all(call_cost(a.usage, PRICE).usd >= call_cost(clean_usage[a.question_id], PRICE).usd for a in flaky)


def test_a_refused_request_is_not_billed(clean: tuple[list[Answer], AnthropicLoopback], tmp_path: Path) -> None:
    """429 / 5xx / 529 are refusals before any work: nothing is added to the answer."""
    clean_answers, _ = clean
    plan = FaultPlan(rate=0.3, kinds=("429", "500", "529"), seed=26, max_consecutive=3)
    with AnthropicLoopback(faults=plan, lost_replies_processed=True) as flaky_server:
        flaky = run(flaky_server, tmp_path, "refused")
    assert sum(flaky_server.faults.injected.values()) >= 5
    assert [a.usage for a in flaky] == [a.usage for a in clean_answers]
