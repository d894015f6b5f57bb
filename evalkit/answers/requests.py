"""How a context becomes a generation request (pure): prompts, the closed-book control, token estimates.

One request builder for every experiment that answers (the answer check and the position experiment): the
same prompts, the same rendering of the context, so an answer cached by one is the other's too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalkit.answers.blocks import ContextItem
from evalkit.answers.context import render_context
from evalkit.answers.generation import prompts_for
from evalkit.answers.generation.request import GenerationRequest, build_request
from evalkit.cost.tokens import estimate_tokens
from evalkit.records import Question

CLOSED_BOOK_SYSTEM = {
    "en": "Answer the question from your own knowledge. Answer briefly: the answer itself, no preamble.",
    "zh": "请根据你自己的知识回答问题。回答要简短：只给出答案本身，不要开场白。",
}
"""System prompt of the closed-book control (the context prompt would tell the model to refuse)."""


@dataclass(frozen=True)
class RequestSpec:
    """How a context becomes a generation request (from the generator config)."""

    model: str
    """Model id sent to the provider."""
    backend: str
    """Generator backend (``local``, ``anthropic``, ...): the planned time is shown for ``local``."""
    generator_cfg: Mapping[str, Any]
    """The ``generator:`` config: prompts and refusal strings per language."""
    max_tokens: int
    """Output cap of every request."""
    stop_sequences: tuple[str, ...] = ()
    cache_prefix: bool = False
    """Mark the system prompt and context as a prompt-cache prefix."""

    @classmethod
    def from_config(cls, generator_cfg: Mapping[str, Any], model: str, backend: str) -> RequestSpec:
        return cls(
            model=model,
            backend=backend,
            generator_cfg=generator_cfg,
            max_tokens=int(generator_cfg.get("max_tokens", 256)),
            stop_sequences=tuple(generator_cfg.get("stop_sequences") or ()),
            cache_prefix=bool(generator_cfg.get("cache_prefix", False)),
        )

    def prompts(self, lang: str) -> dict[str, str]:
        """System prompt and templates for a language (:func:`evalkit.answers.generation.prompts_for`)."""
        return prompts_for(self.generator_cfg, lang)


def fixed_text(prompts: Mapping[str, str], question: Question) -> str:
    """The request text around the context: the context template's frame and the question block."""
    return prompts["context_template"].format(context="") + prompts["question_template"].format(
        question=question.question
    )


def build_context_request(
    spec: RequestSpec, question: Question, items: Sequence[ContextItem], closed_book: bool = False
) -> GenerationRequest:
    """The request of one context; closed-book: the question alone under a prompt that allows own knowledge."""
    prompts = spec.prompts(question.lang)
    system = prompts["system"]
    if closed_book:
        system = CLOSED_BOOK_SYSTEM["zh" if question.lang.lower().startswith("zh") else "en"]
    return build_request(
        question.question,
        render_context(items),
        model=spec.model,
        system=system,
        max_tokens=spec.max_tokens,
        context_template="" if closed_book else prompts["context_template"],
        question_template=prompts["question_template"],
        question_id=question.id,
        stop_sequences=spec.stop_sequences,
        cache_prefix=spec.cache_prefix,
    )


def estimate_request_tokens(request: GenerationRequest, family: str) -> int:
    """Local estimate of a request's prompt tokens: system prompt plus every message block."""
    blocks = [request.system, *(text for _, content in request.messages for text in content)]
    return sum(estimate_tokens(text, family) for text in blocks)
