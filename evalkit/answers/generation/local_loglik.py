"""Scoring a given answer with llama.cpp (xllamacpp): a chat completion forced by a grammar to emit the answer.

llama.cpp's server has no prompt log-probabilities (``echo`` is refused: "Only
no echo is supported"), so the answer is *generated* under a GBNF grammar that
admits exactly its tokens, with ``logprobs`` on. Each returned token carries the
log-softmax of the model's raw logits, computed before the grammar or any
sampler touches them: log p(token | prompt, earlier answer tokens). The prompt
is the request's own chat template up to the assistant turn, exactly where a
generated reply starts, so the sum covers exactly the answer's tokens:

- the grammar names the answer's canonical token ids (the GGUF's own tokenizer,
  :mod:`~evalkit.answers.generation.gguf_vocab`), so one answer has one
  tokenisation under every prompt. A grammar that only spelled the text would
  let the greedy decoder pick odd splits (``b`` + ``urst`` for ``burst``, a lone
  UTF-8 byte for ``每``: measured), which moves the score with the prompt;
- llama.cpp's grammar cannot accept a token that is part of a UTF-8 character
  by id ("Unexpected empty grammar stack"), so a run of such tokens (a rare
  character, written as bytes) is given as its text instead, and the decoder
  picks that run's split;
- the returned tokens' bytes must spell the answer exactly; what follows (the
  end-of-turn token) is not counted. Decoding is greedy (temperature 0) whatever
  the generator's settings.

The forced request reuses the prompt's cached keys and values
(``cache_prompt``), which the generator makes hold exactly this prompt first
(:meth:`~evalkit.answers.generation.local.LlamaCppGenerator.answer_loglik`):
llama.cpp then re-reads only the prompt's last token, so a score costs its
answer's tokens, and it is the same whichever request ran before.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from evalkit.answers.generation.gguf_vocab import GgufTokenizer
from evalkit.answers.generation.loglik import AnswerLoglik
from evalkit.answers.generation.request import GenerationError

__all__ = ["answer_grammar", "forced_payload", "loglik_from_response", "token_groups", "token_logprobs"]


def token_groups(token_ids: Sequence[int], tokenizer: GgufTokenizer) -> list[tuple[list[int], bytes]]:
    """The ids cut into the shortest runs that each spell whole UTF-8 characters, with their bytes."""
    groups: list[tuple[list[int], bytes]] = []
    run: list[int] = []
    spelled = b""
    for token_id in token_ids:
        run.append(token_id)
        spelled += tokenizer.token_bytes(token_id)
        try:
            spelled.decode("utf-8")
        except UnicodeDecodeError:
            continue  # inside a character: the run goes on
        groups.append((run, spelled))
        run, spelled = [], b""
    if run:
        raise GenerationError(f"tokens {run} end inside a UTF-8 character")
    return groups


def answer_grammar(token_ids: Sequence[int], tokenizer: GgufTokenizer) -> str:
    """A GBNF grammar whose only sentence is these tokens (a run inside a character: its text literal)."""
    parts = [
        f"<[{run[0]}]>" if len(run) == 1 else json.dumps(text.decode("utf-8"), ensure_ascii=False)
        for run, text in token_groups(token_ids, tokenizer)
    ]
    return "root ::= " + " ".join(parts)


def forced_payload(chat: Mapping[str, Any], answer: str, tokenizer: GgufTokenizer) -> dict[str, Any]:
    """A chat-completions body (from ``chat_payload``) turned into a forced, greedy, log-probability request."""
    token_ids = tokenizer.encode(answer)
    payload = {key: value for key, value in chat.items() if key != "stop"}  # a stop string could cut the answer
    payload.update(
        grammar=answer_grammar(token_ids, tokenizer),
        logprobs=True,
        top_logprobs=1,  # the chosen token's own logprob comes with any n >= 1; 1 keeps the response small
        temperature=0.0,  # greedy: a byte run's split is deterministic too
        max_tokens=len(answer.encode("utf-8")) + 2,  # every token holds >= 1 byte, plus end of turn
        cache_prompt=True,  # the prompt's keys and values are resident (answer_loglik makes sure): not read again
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
