"""Provider prompt caching, honestly: mark a prefix only where the model caches it, bill lost replies in full.

Pure functions; the Anthropic backend supplies the model's token counter.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from evalkit.answers.generation.request import GenerationRequest
from evalkit.records import Answer, Usage

log = logging.getLogger(__name__)

MIN_CACHEABLE_TOKENS: Mapping[str, int] = {
    "claude-sonnet-5": 2_048,
    "claude-haiku-4-5": 4_096,
}
"""The shortest prefix (tokens, up to a ``cache_control`` mark) each model caches; a shorter one is sent unmarked.

The one place for it. Anthropic's prompt-caching page: 4,096 for Haiku 4.5 (and Opus 4.5/4.6), 2,048 for
Sonnet 4.6, 1,024 for Sonnet 4.5 and earlier Sonnet/Opus, 2,048 for Haiku 3/3.5; claude-sonnet-5 is taken
as its newest documented Sonnet (2,048). Unknown models: :data:`DEFAULT_MIN_CACHEABLE` (the largest)."""
DEFAULT_MIN_CACHEABLE = 4_096


def min_cacheable_tokens(model: str) -> int:
    """The model's minimum cacheable prefix (:data:`MIN_CACHEABLE_TOKENS`, else the largest known)."""
    return MIN_CACHEABLE_TOKENS.get(model, DEFAULT_MIN_CACHEABLE)


def cache_marks(request: GenerationRequest, minimum: int, count: Callable[[dict[str, Any]], int]) -> tuple[bool, bool]:
    """(mark the system prompt, mark the context block): each only when the prefix up to it has ``minimum`` tokens.

    ``count`` is the model's counter on a prefix-only body (the system prompt, then one user message holding
    the context block, or a one-character placeholder when only the system prompt is measured). The frame of
    that message adds a few tokens, so a prefix a handful of tokens short may be marked: the API then simply
    does not cache it, and nothing is billed for the mark.
    """
    system = [{"type": "text", "text": request.system}] if request.system else []
    role, blocks = request.messages[0]
    has_context = role == "user" and len(blocks) > 1

    def prefix(first: str) -> int:
        body: dict[str, Any] = {"model": request.model, "messages": [{"role": "user", "content": first}]}
        if system:
            body["system"] = system
        return count(body)

    mark_system = bool(system) and prefix(".") >= minimum
    mark_context = has_context and (mark_system or prefix(blocks[0]) >= minimum)
    return mark_system, mark_context


def with_lost_attempts(answer: Answer, lost: int) -> Answer:
    """The answer with ``lost`` earlier attempts billed as the provider bills them (estimated from this reply).

    Each lost attempt read the same prompt and wrote the same kind of answer; the part this reply read from
    the prompt cache is billed as a cache *write* for the lost attempt (it found the cache cold, or wrote
    it: the resend then reads what the lost attempt paid to write). Never cheaper than what was billed.
    """
    if lost <= 0:
        return answer
    u = answer.usage
    prefix = u.cache_creation_input_tokens + u.cache_read_input_tokens
    usage = Usage(
        input_tokens=u.input_tokens * (1 + lost),
        output_tokens=u.output_tokens * (1 + lost),
        cache_creation_input_tokens=u.cache_creation_input_tokens + prefix * lost,
        cache_read_input_tokens=u.cache_read_input_tokens,
        estimated=True,
    )
    log.info("%d lost repl%s billed to %s", lost, "y" if lost == 1 else "ies", answer.question_id or "a request")
    return replace(answer, usage=usage)
