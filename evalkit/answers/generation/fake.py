"""A deterministic fake generator for wiring tests that must run without model files or keys.

``generator=fake`` (``conf/generator/fake.yaml``) answers from the prompt
alone: the first few words of the first context block followed by that
block's citation, ``[doc_id]``; the configured refusal (in the question's
language) when the prompt holds no context block. It counts tokens with a
fixed rule (one per whitespace-separated word, one per CJK character), so the
window check, overflows and usage take the same paths as with a real model.
The same request always gets the same answer, in any process, on any machine.

It also scores a given answer (:meth:`FakeGenerator.answer_loglik`), by a rule a
test can compute by hand: each of the answer's tokens (the same rule) costs
:data:`FAKE_LOGPROB_SEEN` when the prompt holds that token and
:data:`FAKE_LOGPROB_UNSEEN` when it does not; None when prompt plus answer
exceed the window.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from evalkit.answers.generation.base import Generator
from evalkit.answers.generation.loglik import AnswerLoglik, check_answer
from evalkit.answers.generation.request import GenerationRequest
from evalkit.records import Answer, Usage

__all__ = [
    "FAKE_LOGPROB_SEEN",
    "FAKE_LOGPROB_UNSEEN",
    "FAKE_MODEL_ID",
    "FakeGenerator",
    "fake_answer_loglik",
    "fake_answer_text",
    "fake_token_count",
]

FAKE_MODEL_ID = "fake-echo"
"""Model id recorded on fake answers."""

FAKE_LOGPROB_SEEN = math.log(0.5)
"""The fake's log-probability of an answer token the prompt holds."""
FAKE_LOGPROB_UNSEEN = math.log(0.01)
"""The fake's log-probability of an answer token the prompt does not hold."""

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN = re.compile(rf"[{_CJK}]|[^\s{_CJK}]+")
_HEADER = re.compile(r"^\[([^\[\]\n]+)\][^\n]*\n?", re.MULTILINE)  # a context block's "[doc_id] title" line
_DEFAULT_REFUSALS = {"en": "I don't have that information", "zh": "我没有这方面的信息"}


def fake_token_count(text: str) -> int:
    """Tokens by the fake's rule: each CJK character, and each other whitespace-separated run."""
    return len(_TOKEN.findall(text))


def _first_words(text: str, n_words: int) -> str:
    """The first ``n_words`` tokens of ``text`` (CJK characters count one each), spaced as in the text."""
    tokens = list(_TOKEN.finditer(text))[:n_words]
    return text[tokens[0].start() : tokens[-1].end()].replace("\n", " ") if tokens else ""


def fake_answer_text(request: GenerationRequest, refusals: Mapping[str, str], n_words: int = 8) -> str:
    """The fake's answer to ``request``: first words and citation of the first context block, else a refusal."""
    user = "\n".join("".join(blocks) for role, blocks in request.messages if role == "user")
    header = _HEADER.search(user)
    if header is None:
        question = request.messages[-1][1][-1] if request.messages else ""
        lang = "zh" if re.search(f"[{_CJK}]", question) else "en"
        return str(refusals.get(lang) or refusals.get("en") or _DEFAULT_REFUSALS[lang])
    body = user[header.end() :].split("\n\n", 1)[0]
    words = _first_words(body, n_words)
    return f"{words} [{header.group(1)}]".strip()


def _prompt_text(request: GenerationRequest) -> str:
    return request.system + "".join("".join(blocks) for _, blocks in request.messages)


def fake_answer_loglik(request: GenerationRequest, answer: str) -> AnswerLoglik:
    """The fake's score of ``answer``: per token, SEEN if the prompt holds it, else UNSEEN (exact-case match)."""
    check_answer(answer, request)
    seen = set(_TOKEN.findall(_prompt_text(request)))
    return AnswerLoglik.of([FAKE_LOGPROB_SEEN if t in seen else FAKE_LOGPROB_UNSEEN for t in _TOKEN.findall(answer)])


class FakeGenerator(Generator):
    """Answers from the prompt by a fixed rule; no model, no network, no randomness."""

    backend = "fake"

    def __init__(
        self,
        model: str = FAKE_MODEL_ID,
        *,
        refusals: Mapping[str, str] | None = None,
        window: int | None = 8192,
        headroom: int = 0,
        n_words: int = 8,
    ) -> None:
        self.model = model
        self.refusals = dict(refusals or _DEFAULT_REFUSALS)
        self.window = window
        self.headroom = headroom
        self.n_words = n_words
        self.precount = window is not None  # the window check runs through count_tokens, as for Claude
        self.loglik_calls = 0
        """Answers scored (a cached score is not)."""

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], **overrides: Any) -> FakeGenerator:
        """Build from ``conf/generator/fake.yaml`` (a mapping, read strictly, or its typed settings);
        keyword overrides win."""
        from evalkit.answers.generation.settings import FakeSettings, read_generator_settings

        settings = read_generator_settings(cfg, default_name="fake")
        if not isinstance(settings, FakeSettings):
            raise ValueError(f"generator.name: {settings.name!r} is not generator=fake")
        args: dict[str, Any] = {
            "model": settings.model,
            "refusals": dict(settings.refusal),
            "window": settings.window,
            "headroom": settings.headroom,
            "n_words": settings.n_words,
        }
        args.update(overrides)
        return cls(**args)

    def key_params(self) -> Mapping[str, Any]:
        return {"n_words": self.n_words, "refusals": dict(sorted(self.refusals.items()))}

    def count_tokens(self, request: GenerationRequest) -> int:
        return fake_token_count(_prompt_text(request))

    @property
    def supports_loglik(self) -> bool:
        return True

    def answer_loglik(self, request: GenerationRequest, answer: str) -> AnswerLoglik | None:
        score = fake_answer_loglik(request, answer)
        if self.window is not None and self.count_tokens(request) + score.n_tokens > self.window:
            return None
        self.loglik_calls += 1
        return score

    def generate(self, request: GenerationRequest) -> Answer:
        text = fake_answer_text(request, self.refusals, self.n_words)
        output = fake_token_count(text)
        stop = "end_turn"
        if output > request.max_tokens:  # cut like a real model at max_tokens
            text, output, stop = _first_words(text, request.max_tokens), request.max_tokens, "max_tokens"
        return Answer(
            question_id=request.question_id,
            text=text,
            backend=self.backend,
            model=request.model,
            usage=Usage(input_tokens=self.count_tokens(request), output_tokens=output),
            stop_reason=stop,
            truncated=stop == "max_tokens",
        )
