"""The time a position run still needs: at the planning speeds, and at the folder's own measured pace."""

from __future__ import annotations

import pytest

from evalkit.answers.position.notes import MIN_PACE_SECONDS, measured_pace


def test_pace_is_measured_over_planned_seconds_of_what_was_sent() -> None:
    assert measured_pace({"seconds": 900.0, "planned_seconds_pending": 600.0}) == pytest.approx(1.5)


@pytest.mark.parametrize(
    "stats",
    [
        {},
        {"seconds": 30.0, "planned_seconds_pending": MIN_PACE_SECONDS - 1},  # too little sent to say
        {"seconds": 0.0, "planned_seconds_pending": 600.0},  # everything came from the cache
        {"seconds": 5.0, "planned_seconds_pending": 0.0},
    ],
)
def test_no_pace_without_enough_answers_sent(stats: dict) -> None:
    assert measured_pace(stats) is None
