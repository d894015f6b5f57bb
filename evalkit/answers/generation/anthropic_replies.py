"""Replies from the Anthropic API that cannot be right: parsed fine, but no usable answer (a retry may fix them).

Each check returns why, or None; the backend retries on a reason as on a lost reply.
"""

from __future__ import annotations

from typing import Any

KNOWN_STOPS = frozenset(
    {"end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal", "model_context_window_exceeded"}
)
EMPTY_STOPS = frozenset({"max_tokens", "stop_sequence", "refusal", "model_context_window_exceeded"})
"""Stop reasons that explain a message with no text (anything else without a text block is a broken reply)."""


def message_problem(message: Any) -> str | None:
    """Why a parsed Messages reply cannot be right, or None."""
    content = getattr(message, "content", None)
    stop = getattr(message, "stop_reason", None)
    usage = getattr(message, "usage", None)
    if not isinstance(content, list):
        return "no content list"
    if stop not in KNOWN_STOPS:
        return f"stop_reason {stop!r}"
    if not isinstance(getattr(usage, "input_tokens", None), int) or not isinstance(
        getattr(usage, "output_tokens", None), int
    ):
        return "no token usage"
    if stop not in EMPTY_STOPS and not any(getattr(block, "type", None) == "text" for block in content):
        return f"a message with stop_reason {stop} and no text block"
    return None


def results_problem(lines: list[Any]) -> str | None:
    if not lines:
        return "an ended batch with no results"  # a batch holds at least one request
    for line in lines:
        if not isinstance(getattr(line, "custom_id", None), str) or not getattr(line, "result", None):
            return f"a results line without custom_id or result: {str(line)[:80]}"
        if getattr(line.result, "type", None) == "succeeded" and message_problem(line.result.message) is not None:
            return f"item {line.custom_id}: {message_problem(line.result.message)}"
    return None


def count_problem(counted: Any) -> str | None:
    tokens = getattr(counted, "input_tokens", None)
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
        return f"input_tokens {tokens!r}"
    return None
