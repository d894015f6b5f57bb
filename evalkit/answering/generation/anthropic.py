"""Claude through the official ``anthropic`` SDK: single Messages calls, token counts and Message Batches.

Retries: the SDK's own (``max_retries``), not a second layer here. It retries
408/409/429/5xx including 529 (OverloadedError), honours ``retry-after-ms`` /
``retry-after`` / ``x-should-retry`` and backs off exponentially otherwise, so
the number of attempts is exactly ``1 + max_retries`` and configurable; a
wrapper loop would multiply the attempts and ignore the server's hints.

Note: ``messages.create`` in anthropic 2.x takes no ``temperature``/``top_p``,
so answers are not sampled with a fixed seed: evalkit's cache is what makes a
re-run reproducible.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evalkit.answering.generation.base import (
    TRUNCATING_STOPS,
    GenerationError,
    GenerationRequest,
    Generator,
    overflow_answer,
)
from evalkit.records import Answer, Usage

if TYPE_CHECKING:
    from anthropic import Anthropic
    from anthropic.types import Message

log = logging.getLogger(__name__)

API_KEY_ENV = "ANTHROPIC_API_KEY"
_EPHEMERAL = {"type": "ephemeral"}
_TOO_LONG = "prompt is too long"  # the 400 message: "prompt is too long: N tokens > M maximum"

DEFAULT_WINDOWS: Mapping[str, int] = {
    "claude-sonnet-5": 1_000_000,
    "claude-haiku-4-5": 200_000,
}
"""Context windows by model id (conf/pricing/anthropic.yaml); a config's ``window`` or ``windows`` overrides."""


def _sdk() -> Any:
    """The ``anthropic`` package, imported on first use so evalkit imports without it."""
    try:
        import anthropic
    except ImportError as exc:  # pragma: no cover - the SDK is installed wherever this backend is used
        raise GenerationError(
            "generator=anthropic needs the package 'anthropic' (pip install anthropic==2.14.0); "
            "offline alternative: generator=local"
        ) from exc
    return anthropic


class AnthropicGenerator(Generator):
    """Claude Messages API; with ``batch`` the sweep's uncached requests go through Message Batches."""

    backend = "anthropic"
    batch_backend = "anthropic-batch"
    """Backend name on answers that came from a batch (billed at the batch multiplier)."""
    supports_batch = True

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 4,
        timeout_s: float = 120.0,
        window: int | None = None,
        headroom: int = 0,
        precount: bool = True,
        batch: bool = False,
        poll_interval_s: float = 60.0,
        batch_timeout_s: float = 24 * 3600.0,
        max_batch_requests: int = 10_000,
    ) -> None:
        key = api_key or os.environ.get(API_KEY_ENV, "")
        if not key:
            raise GenerationError(
                f"{API_KEY_ENV} is not set: export it to use generator=anthropic, or run offline with generator=local"
            )
        self.model = model
        self.window = window if window is not None else DEFAULT_WINDOWS.get(model)
        self.headroom = headroom
        self.precount = precount
        self.batch_enabled = batch
        self.poll_interval_s = poll_interval_s
        self.batch_timeout_s = batch_timeout_s
        self.max_batch_requests = max_batch_requests
        self.max_retries = max_retries
        self._sdk = _sdk()
        # The key is passed explicitly so the SDK never falls back to profiles or other credentials on disk.
        self._client: Anthropic = self._sdk.Anthropic(
            api_key=key, base_url=base_url, max_retries=max_retries, timeout=timeout_s
        )

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], **overrides: Any) -> AnthropicGenerator:
        """Build from ``conf/generator/anthropic.yaml`` (keyword overrides win, e.g. ``api_key``, ``base_url``)."""
        model = str(overrides.pop("model", cfg["model"]))
        windows = {**DEFAULT_WINDOWS, **dict(cfg.get("windows") or {})}
        args: dict[str, Any] = {
            "base_url": cfg.get("base_url"),
            "max_retries": int(cfg.get("max_retries", 4)),
            "timeout_s": float(cfg.get("timeout_s", 120.0)),
            "window": cfg.get("window") or windows.get(model),
            "headroom": int(cfg.get("headroom", 0)),
            "precount": bool(cfg.get("precount", True)),
            "batch": bool(cfg.get("batch", False)),
            "poll_interval_s": float(cfg.get("poll_interval_s", 60.0)),
            "batch_timeout_s": float(cfg.get("batch_timeout_s", 24 * 3600.0)),
            "max_batch_requests": int(cfg.get("max_batch_requests", 10_000)),
        }
        args.update(overrides)
        return cls(model, **args)

    # ----------------------------------------------------------------------- wire format

    def params(self, request: GenerationRequest, *, for_count: bool = False) -> dict[str, Any]:
        """Request body for ``messages.create`` (or ``count_tokens`` when ``for_count``).

        With ``cache_prefix``, ``cache_control: ephemeral`` marks the system block and the first block of the
        first user turn when that turn has more blocks after it (the shared context before the question).
        """
        mark = {"cache_control": dict(_EPHEMERAL)} if request.cache_prefix else {}
        messages: list[dict[str, Any]] = []
        marked_context = False
        for role, blocks in request.messages:
            content: list[dict[str, Any]] = []
            for i, text in enumerate(blocks):
                block: dict[str, Any] = {"type": "text", "text": text}
                if mark and not marked_context and role == "user" and i == 0 and len(blocks) > 1:
                    block.update(mark)
                    marked_context = True
                content.append(block)
            messages.append({"role": role, "content": content})
        body: dict[str, Any] = {"model": request.model, "messages": messages}
        if request.system:
            body["system"] = [{"type": "text", "text": request.system, **mark}]
        if not for_count:
            body["max_tokens"] = request.max_tokens
            if request.stop_sequences:
                body["stop_sequences"] = list(request.stop_sequences)
        return body

    def to_answer(self, message: Message, question_id: str, *, backend: str | None = None) -> Answer:
        """An Answer from a Messages response (usage fields that come back null count as 0)."""
        usage = message.usage
        text = "".join(getattr(block, "text", "") for block in message.content if block.type == "text")
        stop = message.stop_reason or "end_turn"  # always set outside streaming; guard anyway
        return Answer(
            question_id=question_id,
            text=text,
            backend=backend or self.backend,
            model=message.model,
            usage=Usage(
                input_tokens=usage.input_tokens or 0,
                output_tokens=usage.output_tokens or 0,
                cache_creation_input_tokens=usage.cache_creation_input_tokens or 0,
                cache_read_input_tokens=usage.cache_read_input_tokens or 0,
            ),
            stop_reason=stop,
            truncated=stop in TRUNCATING_STOPS,
        )

    # ----------------------------------------------------------------------- single calls

    def generate(self, request: GenerationRequest) -> Answer:
        sdk = self._sdk
        try:
            message = self._client.messages.create(**self.params(request))
        except sdk.BadRequestError as err:
            reason = _api_message(err)
            if _TOO_LONG in reason.lower():
                return overflow_answer(self, request, why=reason)
            raise GenerationError(f"anthropic rejected the request ({request.model}): {reason}") from err
        except sdk.APIStatusError as err:
            if err.status_code == 413:  # request body over the size limit: also "does not fit"
                return overflow_answer(self, request, why=_api_message(err))
            raise GenerationError(
                f"anthropic HTTP {err.status_code} for {request.model} after {self.max_retries} retries: "
                f"{_api_message(err)}"
            ) from err
        except sdk.APIConnectionError as err:
            raise GenerationError(f"anthropic unreachable after {self.max_retries} retries: {err}") from err
        return self.to_answer(message, request.question_id)

    def count_tokens(self, request: GenerationRequest) -> int | None:
        """Input tokens by the model's own counter (``POST /v1/messages/count_tokens``)."""
        sdk = self._sdk
        try:
            return int(self._client.messages.count_tokens(**self.params(request, for_count=True)).input_tokens)
        except sdk.BadRequestError as err:
            if _TOO_LONG in _api_message(err).lower():
                return None  # let the real call decide; it comes back as an overflow answer
            raise GenerationError(f"anthropic count_tokens rejected the request: {_api_message(err)}") from err
        except sdk.APIStatusError as err:
            raise GenerationError(
                f"anthropic count_tokens HTTP {err.status_code} after {self.max_retries} retries: {_api_message(err)}"
            ) from err
        except sdk.APIConnectionError as err:
            raise GenerationError(f"anthropic unreachable after {self.max_retries} retries: {err}") from err

    # ----------------------------------------------------------------------- message batches

    def submit_batch(self, requests: Mapping[str, GenerationRequest]) -> str:
        batch = self._client.messages.batches.create(
            requests=[{"custom_id": cid, "params": self.params(request)} for cid, request in requests.items()]
        )
        return str(batch.id)

    def batch_status(self, batch_id: str) -> str:
        return str(self._client.messages.batches.retrieve(batch_id).processing_status)

    def batch_results(self, batch_id: str) -> dict[str, Answer]:
        """Answers by custom_id; errored, canceled and expired items become stop_reason ``error`` answers."""
        answers: dict[str, Answer] = {}
        for line in self._client.messages.batches.results(batch_id):
            result = line.result
            if result.type == "succeeded":
                answers[line.custom_id] = self.to_answer(result.message, "", backend=self.batch_backend)
                continue
            reason = result.type
            if result.type == "errored":
                error = result.error.error
                reason = f"errored: {getattr(error, 'type', '')}: {getattr(error, 'message', '')}"
            answers[line.custom_id] = self._failed_item(reason)
            log.warning("batch %s item %s %s", batch_id, line.custom_id, reason)
        return answers

    def _failed_item(self, reason: str) -> Answer:
        stop = "overflow" if _TOO_LONG in reason.lower() else "error"
        return Answer(
            question_id="",
            text="",
            backend=self.batch_backend,
            model="",  # filled in from the request by the caller
            usage=Usage(),
            stop_reason=stop,
        )


def _api_message(err: Any) -> str:
    """The provider's ``error.message`` when present, else the SDK's text."""
    return str(getattr(err, "api_message", None) or getattr(err, "message", None) or err)
