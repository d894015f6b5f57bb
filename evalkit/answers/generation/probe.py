"""Probing a generator's first-token latency (the work behind ``python -m evalkit.latency probe``).

Requests are sent one at a time, each a fresh prompt (a counter in it: no server-side prompt cache serves a
repeat), never through evalkit's answer cache: a cached answer has no latency of its own.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalkit.answers.generation.request import GenerationRequest
from evalkit.cost.tokens import estimate_tokens


class ProbeError(Exception):
    """The probe cannot run or its endpoint failed; the message is one line."""


def filler(tokens: int, family: str, serial: int) -> str:
    """About ``tokens`` tokens (local estimate) of plain prose, made unique by ``serial``."""
    from evalkit.latency import PROBE_TEXT

    per = max(1, estimate_tokens(PROBE_TEXT, family))
    text = f"Probe {serial}. " + PROBE_TEXT * max(1, round(tokens / per))
    return text


def probe(lengths: Sequence[int], repeats: int, config_dir: str | None, overrides: Sequence[str]) -> dict[str, Any]:
    """Time ``repeats`` requests at each of ``lengths`` prompt tokens; the profile record (not yet written)."""
    from evalkit.answers.generation import make_generator
    from evalkit.answers.generation.latency_profile import profile_record
    from evalkit.answers.generation.request import GenerationError
    from evalkit.overrides import compose_run
    from evalkit.pipeline.sweep import token_family
    from evalkit.project.layers import find_source
    from evalkit.settings import ConfigError
    from evalkit.sweep import plan_from

    argv = [*(["--config-dir", config_dir] if config_dir else []), *overrides]
    source = find_source(argv, Path.cwd())
    try:
        plan, _, _ = plan_from(compose_run(source, source.argv))
    except ConfigError as exc:
        raise ProbeError(str(exc)) from None
    if plan.generator is None:
        raise ProbeError("generator: not set; name the endpoint, e.g. generator=openai generator.base_url=...")
    family = token_family(plan)
    try:
        generator = make_generator(plan.generator)
    except (GenerationError, ConfigError) as exc:
        raise ProbeError(str(exc).splitlines()[0]) from None
    model = str(generator.model or plan.generator.model)
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
                raise ProbeError(f"{plan.generator.name} at {length} tokens: {str(exc).splitlines()[0]}") from None
            if answer.first_token_s is None:
                raise ProbeError(f"generator={plan.generator.name} reports no first-token time (stream: true?)")
            tokens.append(float(estimate_tokens(request.system + context, family)))
            seconds.append(float(answer.first_token_s))
            asked.append(length)
        print(f"evalkit.latency: {length} tokens: {repeats} requests timed", file=sys.stderr)
    meta = {"generator": plan.generator.name, "endpoint_model": model,
            "base_url": getattr(plan.generator, "base_url", None), "token_family": family}  # fmt: skip
    return profile_record(tokens, seconds, meta, groups=asked)
