"""Scoring a given answer with llama.cpp (xllamacpp): a chat completion forced by a grammar to spell the answer.

llama.cpp's server has no prompt log-probabilities (``echo`` is refused: "Only
no echo is supported"), so the answer is *generated* under a GBNF grammar that
admits exactly its text, with ``logprobs`` on. Each returned token carries the
log-softmax of the model's raw logits, computed before the grammar or any
sampler touches them: log p(token | prompt, earlier answer tokens). The prompt
is the request's own chat template up to the assistant turn, exactly where a
generated reply starts, so the sum covers exactly the answer's tokens:

- tokens are accumulated until their bytes spell the answer's UTF-8 bytes (a
  Chinese character may span tokens); what follows must be end-of-turn tokens
  (no bytes), which are not counted;
- decoding is greedy (temperature 0, whatever the generator's settings) among
  the tokens the grammar allows, so the tokenisation is the one the model
  prefers step by step among those that spell the answer; for ordinary text this
  is the tokenizer's own (the tests check the token count against the prompt
  tokenizer, and the sum against a token-by-token recomputation).

The prompt cache stays off, as for answers: a score never depends on which
request ran before it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from evalkit.answering.generation.loglik import AnswerLoglik
from evalkit.answering.generation.request import GenerationError

__all__ = ["answer_grammar", "forced_payload", "loglik_from_response", "token_logprobs"]


def answer_grammar(answer: str) -> str:
    """A GBNF grammar whose only sentence is ``answer`` (a JSON string literal is a valid GBNF literal)."""
    return "root ::= " + json.dumps(answer, ensure_ascii=False)


def forced_payload(chat: Mapping[str, Any], answer: str) -> dict[str, Any]:
    """A chat-completions body (from ``chat_payload``) turned into a forced, greedy, log-probability request."""
    payload = {key: value for key, value in chat.items() if key != "stop"}  # a stop string could cut the answer
    payload.update(
        grammar=answer_grammar(answer),
        logprobs=True,
        top_logprobs=1,  # the chosen token's own logprob comes with any n >= 1; 1 keeps the response small
        temperature=0.0,  # greedy among the grammar's tokens: one deterministic tokenisation
        max_tokens=len(answer.encode("utf-8")) + 2,  # every token holds >= 1 byte, plus end of turn
    )
    return payload


def token_logprobs(response: Mapping[str, Any], answer: str) -> list[float]:
    """The log-probabilities of the tokens that spell ``answer`` in a forced completion (end of turn excluded)."""
    try:
        choice = response["choices"][0]
        content: Sequence[Mapping[str, Any]] = choice["logprobs"]["content"]
    except (KeyError, IndexError, TypeError) as exc:
        raise GenerationError(f"llama.cpp returned no logprobs for a forced answer: {response}") from exc
    target = answer.encode("utf-8")
    spelled = b""
    logprobs: list[float] = []
    for i, token in enumerate(content):
        if spelled == target:
            rest = content[i:]
            if any(t.get("bytes") for t in rest):
                raise GenerationError(f"forced answer {answer!r} went on past its text: {rest}")
            break
        spelled += bytes(token.get("bytes") or [])
        logprobs.append(float(token["logprob"]))
    if spelled != target:
        why = "was cut short (max_tokens)" if choice.get("finish_reason") == "length" else "did not spell the answer"
        raise GenerationError(f"forced answer {answer!r} {why}: got {spelled.decode('utf-8', 'replace')!r}")
    return logprobs


def loglik_from_response(response: Mapping[str, Any], answer: str) -> AnswerLoglik:
    return AnswerLoglik.of(token_logprobs(response, answer))
