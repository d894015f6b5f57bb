"""Probing a generator's first-token latency (the timing loop behind ``python -m evalkit.latency probe``).

Requests are sent one at a time, each a fresh prompt (a counter in it: no server-side prompt cache serves a
repeat), never through evalkit's answer cache: a cached answer has no latency of its own.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from evalkit.answers.generation.base import Generator
from evalkit.answers.generation.latency_profile import profile_record
from evalkit.answers.generation.request import GenerationError, GenerationRequest
from evalkit.cost.tokens import estimate_tokens

PROBE_TEXT = (
    "The committee met on a Tuesday to review the quarterly figures, the hiring plan and the state of the "
    "buildings; each item was read aloud, discussed and recorded in the minutes before the next one began. "
)
"""Filler context: plain prose, so a server's tokenizer sees ordinary text (no repeated-token shortcuts)."""


class ProbeError(Exception):
    """The probe cannot run or its endpoint failed; the message is one line."""


def filler(tokens: int, family: str, serial: int) -> str:
    """About ``tokens`` tokens (local estimate) of plain prose, made unique by ``serial``."""
    per = max(1, estimate_tokens(PROBE_TEXT, family))
    return f"Probe {serial}. " + PROBE_TEXT * max(1, round(tokens / per))


def probe_generator(
    generator: Generator, model: str, lengths: Sequence[int], repeats: int, family: str, meta: dict[str, Any]
) -> dict[str, Any]:
    """Time ``repeats`` requests at each of ``lengths`` prompt tokens, one at a time; the profile record."""
    tokens: list[float] = []
    seconds: list[float] = []
    asked: list[int] = []
    serial = 0
    for length in lengths:
        for _ in range(repeats):
            serial += 1
            context = filler(length, family, serial)
            prompt = f"{context}\n\nQuestion: what did the committee review?"
            request = GenerationRequest(model=model, system="Answer in one word.", max_tokens=4,
                                        messages=(("user", prompt),))  # fmt: skip
            try:
                answer = generator.generate(request)
            except GenerationError as exc:
                raise ProbeError(f"{meta.get('generator')} at {length} tokens: {str(exc).splitlines()[0]}") from None
            if answer.first_token_s is None:
                raise ProbeError(f"generator={meta.get('generator')} reports no first-token time (stream: true?)")
            tokens.append(float(estimate_tokens(request.system + context, family)))
            seconds.append(float(answer.first_token_s))
            asked.append(length)
        print(f"evalkit.latency: {length} tokens: {repeats} requests timed", file=sys.stderr)
    return profile_record(tokens, seconds, meta, groups=asked)
