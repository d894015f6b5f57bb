"""llama.cpp's chat wire format (pure): the request payload evalkit sends, and an Answer from its reply.

Kept apart from :mod:`evalkit.answers.generation.local` (the in-process server's lifecycle) so both the
in-process backend and tests read one definition of the format and of llama.cpp's timings.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evalkit.answers.generation.request import TRUNCATING_STOPS, GenerationRequest
from evalkit.records import Answer, Usage

if TYPE_CHECKING:
    from evalkit.answers.generation.llama_settings import LocalSettings


OVERFLOW_ERROR = "exceed_context_size_error"
"""The error type llama.cpp's server returns for a prompt longer than the context."""


def chat_payload(request: GenerationRequest, settings: LocalSettings) -> dict[str, Any]:
    """The chat-completions body: the request's turns plus every sampling setting, sent explicitly."""
    messages = [{"role": "system", "content": request.system}] if request.system else []
    messages += [{"role": role, "content": "".join(blocks)} for role, blocks in request.messages]
    payload: dict[str, Any] = {
        "messages": messages,
        "max_tokens": request.max_tokens,
        "temperature": settings.temperature,
        "top_k": settings.top_k,
        "top_p": settings.top_p,
        "min_p": settings.min_p,
        "repeat_penalty": settings.repeat_penalty,
        "seed": settings.seed,
        "cache_prompt": False,
        "stream": False,
    }
    if request.stop_sequences:
        payload["stop"] = list(request.stop_sequences)
    return payload


def prompt_identity(payload: Mapping[str, Any]) -> str:
    """What fixes the tokens of a chat body's prompt (its turns; the chat template is the model's own)."""
    return json.dumps(payload["messages"], ensure_ascii=False, sort_keys=True)


def is_overflow(response: Mapping[str, Any]) -> bool:
    """True for llama.cpp's "prompt longer than the context" error object."""
    error = response.get("error")
    return isinstance(error, Mapping) and error.get("type") == OVERFLOW_ERROR


def completion_to_answer(response: Mapping[str, Any], question_id: str, model: str, backend: str = "local") -> Answer:
    """An Answer from a llama.cpp chat completion (OpenAI-shaped: choices, finish_reason, usage)."""
    choice = response["choices"][0]
    finish = choice.get("finish_reason") or "stop"
    stop = {"stop": "end_turn", "length": "max_tokens"}.get(finish, finish)
    usage = response.get("usage") or {}
    return Answer(
        question_id=question_id,
        text=(choice.get("message", {}).get("content") or "").strip(),
        backend=backend,
        model=model,
        usage=Usage(
            input_tokens=int(usage.get("prompt_tokens") or 0),
            output_tokens=int(usage.get("completion_tokens") or 0),
        ),
        stop_reason=stop,
        truncated=stop in TRUNCATING_STOPS,
    )


def timings_seconds(timings: Mapping[str, Any]) -> dict[str, float | None]:
    """``first_token_s`` (prompt processing plus the first decoded token) and ``total_s`` from llama.cpp's own
    ``timings``; None for what it did not report. The model's clock, not a wall clock around the call."""
    prompt_ms, predicted_ms, predicted_n = (timings.get(k) for k in ("prompt_ms", "predicted_ms", "predicted_n"))
    if not isinstance(prompt_ms, int | float) or not isinstance(predicted_ms, int | float):
        return {"first_token_s": None, "total_s": None}
    per_token = predicted_ms / predicted_n if isinstance(predicted_n, int) and predicted_n > 0 else 0.0
    return {"first_token_s": (prompt_ms + per_token) / 1000.0, "total_s": (prompt_ms + predicted_ms) / 1000.0}
