"""How long answers from a hosted model take, said honestly (pure): a plan never times an endpoint with the
local model's tokens per second.

The rule: a backend that runs here (its registration says so: ``local``, and the instant ``fake``) is timed
by its planning speeds; any other backend is hosted. A hosted endpoint's time is its own queue and speed,
which nothing here has measured before a run, so a plan states the number of requests and how they are sent
instead of minutes. With Message Batches (a backend registered with ``batches``, ``generator=anthropic``,
with ``batch: true``) a batch can take up to :data:`BATCH_TURNAROUND_H` hours, and rounds that wait on each
other's results (a powered pilot, then each re-plan) are sequential batches: up to that many hours each.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalkit.answers.generation.settings import generator_backend

BATCH_TURNAROUND_H = 24
"""Hours a Message Batch may take to end (Anthropic's stated limit; most end far sooner)."""


def is_hosted(backend: str) -> bool:
    """True for a backend whose time is an endpoint's, not this machine's tokens per second (its table entry
    says whether it runs here; an installed plugin is an endpoint as far as evalkit knows)."""
    return not generator_backend(backend).runs_here


def timed_by_planning_speeds(backend: str) -> bool:
    """True for a backend a plan times at this machine's planning speeds (the local model; not the instant fake)."""
    return generator_backend(backend).planned_speed


def uses_batches(backend: str, generator_cfg: Mapping[str, Any]) -> bool:
    return generator_backend(backend).batches and bool(generator_cfg.get("batch"))


def hosted_time(backend: str, generator_cfg: Mapping[str, Any], requests: int, rounds: int = 1) -> str:
    """One line on how long ``requests`` take on a hosted backend.

    ``rounds`` > 1: ``requests`` are the first round's (a powered pilot), and up to ``rounds - 1`` re-plan rounds
    follow, each sent only when the one before has ended.
    """
    later = rounds - 1
    if uses_batches(backend, generator_cfg):
        if later:
            return (
                f"time: the pilot's {requests} requests in a Message Batch, which can take up to "
                f"{BATCH_TURNAROUND_H} h; each of up to {later} re-plan rounds is another batch, sent when the one "
                f"before has ended: up to {BATCH_TURNAROUND_H * rounds} h in all (not timed with any tokens/s)"
            )
        return (
            f"time: {requests} requests in Message Batches: up to {BATCH_TURNAROUND_H} h for the batch to end "
            "(most end sooner; not timed with any tokens/s)"
        )
    at_once = generator_cfg.get("concurrency")
    pace = f", {at_once} at a time" if isinstance(at_once, int) else ""
    what = f"the pilot's {requests} requests" if later else f"{requests} requests"
    then = f", then up to {later} re-plan rounds, one after another" if later else ""
    return (
        f"time: {what} to the {backend} endpoint{pace}{then}: its queue and speed decide, not the local model's "
        "tokens/s (a run records each request's first-token and total seconds)"
    )
