"""The one retry policy every API backend uses (evalkit/retry.py): statuses, waits, deadline, the loop."""

from __future__ import annotations

import random

import pytest

from evalkit.retry import RetriesExhausted, RetryPolicy, Transient, call_with_retries


@pytest.mark.parametrize(
    ("status", "headers", "expected"),
    [
        (429, None, True),
        (529, None, True),
        (503, None, True),
        (409, None, True),
        (501, None, False),  # not implemented: the same request gets the same answer
        (400, None, False),
        (401, None, False),
        (200, None, True),  # a 2xx here means its body could not be read
        (None, None, True),  # no status: the reply never arrived whole
        (503, {"x-should-retry": "false"}, False),  # the server's word wins
        (400, {"X-Should-Retry": "true"}, True),
    ],
)
def test_retryable_statuses(status: int | None, headers: dict[str, str] | None, expected: bool) -> None:
    assert RetryPolicy().retryable(status, headers) is expected


def test_the_hint_header_is_a_parameter_of_the_one_policy() -> None:
    """Claude's x-should-retry is the default hint; a backend can name another header, or none (statuses only)."""
    told_no = {"x-should-retry": "false"}
    assert RetryPolicy().retryable(503, told_no) is False
    assert RetryPolicy(hint_header=None).retryable(503, told_no) is True
    assert RetryPolicy(hint_header=None).retryable(400, {"x-should-retry": "true"}) is False
    assert RetryPolicy(hint_header="x-retry-ok").retryable(400, {"X-Retry-OK": "true"}) is True
    assert RetryPolicy(hint_header="x-retry-ok").retryable(503, told_no) is True


def test_backoff_without_jitter_is_the_doubling_ceiling_capped() -> None:
    policy = RetryPolicy(max_retries=6, base_delay_s=0.5, max_delay_s=3.0)
    assert [policy.delay(r) for r in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_seeded_jitter_is_reproducible_and_under_the_ceiling() -> None:
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=100.0)
    first = [policy.delay(r, jitter=random.Random(7)) for r in range(6)]
    again = [policy.delay(r, jitter=random.Random(7)) for r in range(6)]
    assert first == again
    assert all(0.0 <= wait <= 2.0**r for r, wait in enumerate(first))
    assert len(set(first)) == len(first)  # jittered, not the ceilings


def test_server_wait_wins_and_is_capped() -> None:
    policy = RetryPolicy(max_delay_s=5.0)
    assert policy.delay(0, {"retry-after": "2"}) == 2.0
    assert policy.delay(0, {"retry-after": "7"}) == 5.0
    assert policy.delay(3, {"retry-after-ms": "250", "Retry-After": "3"}) == 0.25


def test_loop_tries_exactly_one_plus_max_retries() -> None:
    calls, waits = [], []

    def attempt() -> str:
        calls.append(1)
        raise Transient("HTTP 529: overloaded")

    with pytest.raises(RetriesExhausted, match=r"failed after 3 attempts: HTTP 529: overloaded") as err:
        call_with_retries(attempt, RetryPolicy(max_retries=2, base_delay_s=1.0), sleep=waits.append)
    assert (len(calls), err.value.attempts, waits) == (3, 3, [1.0, 2.0])


def test_deadline_stops_before_a_wait_that_would_pass_it() -> None:
    now = [0.0]
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += seconds

    def attempt() -> str:
        now[0] += 0.5  # each request takes half a second on this clock
        raise Transient("reset")

    policy = RetryPolicy(max_retries=10, base_delay_s=1.0, max_delay_s=100.0, deadline_s=6.0)
    with pytest.raises(RetriesExhausted, match=r"failed after 3 attempts \(deadline 6 s\): reset"):
        call_with_retries(attempt, policy, sleep=sleep, clock=lambda: now[0])
    assert waits == [1.0, 2.0]  # then 4 s would end at 8 s > 6 s


def test_other_errors_pass_through_and_success_returns() -> None:
    tries = iter([Transient("x"), "done"])

    def attempt() -> str:
        item = next(tries)
        if isinstance(item, Exception):
            raise item
        return item

    seen: list[str] = []
    assert (
        call_with_retries(attempt, RetryPolicy(), sleep=lambda _: None, on_retry=lambda f: seen.append(f.reason))
        == "done"
    )
    assert seen == ["x"]
    with pytest.raises(KeyError):
        call_with_retries(lambda: {}["k"], RetryPolicy(), sleep=lambda _: None)


def test_bad_policies_are_refused() -> None:
    with pytest.raises(ValueError, match="max_retries"):
        RetryPolicy(max_retries=-1)
    with pytest.raises(ValueError, match="deadline_s"):
        RetryPolicy(deadline_s=0.0)
