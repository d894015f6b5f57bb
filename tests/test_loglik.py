"""The log-likelihood of a given answer: the record, the cache (real SQLite), the fake's documented rule, a backend
that cannot score, and the real 0.5B model through xllamacpp (a default dependency: these tests never skip)."""

from __future__ import annotations

import gc
import itertools
import math
from pathlib import Path

import pytest

from evalkit.answers.generation import make_generator, prompts_for
from evalkit.answers.generation.fake import FAKE_LOGPROB_SEEN, FAKE_LOGPROB_UNSEEN, FakeGenerator
from evalkit.answers.generation.local import LlamaCppGenerator, LocalModelError, chat_payload
from evalkit.answers.generation.local_loglik import forced_payload, token_logprobs
from evalkit.answers.generation.loglik import AnswerLoglik, answer_logliks, loglik_key, loglik_namespace
from evalkit.answers.generation.request import build_request
from evalkit.cache import Cache
from evalkit.labels.read import load_labelset
from tests.loopback.anthropic_server import anthropic_generator
from tests.test_generation_local import CFG

REPO = Path(__file__).resolve().parents[1]


def _request(context: str, question: str = "What burst does the RateLimiter allow?", **kw: object):
    return build_request(question, context, model="m", system="Answer briefly.", max_tokens=16, **kw)


CONTEXT = "[guide/rate-limits.md] Rate limits\nThe RateLimiter allows a burst of 20 requests per second by default."

# --------------------------------------------------------------------------- the record and the key


def test_record_is_total_over_tokens_and_rejects_impossible_values() -> None:
    value = AnswerLoglik.of([-0.5, -1.5, -1.0])
    assert value == AnswerLoglik(total=-3.0, mean=-1.0, n_tokens=3)
    with pytest.raises(ValueError, match="n_tokens"):
        AnswerLoglik(total=0.0, mean=0.0, n_tokens=0)
    with pytest.raises(ValueError, match="<= 0"):
        AnswerLoglik(total=0.5, mean=0.5, n_tokens=1)
    with pytest.raises(ValueError, match="mean"):
        AnswerLoglik(total=-2.0, mean=-2.0, n_tokens=2)


def test_key_holds_identity_parameters_request_and_answer_but_not_metadata() -> None:
    gen = LlamaCppGenerator()
    request = _request(CONTEXT)
    same = _request(CONTEXT, question_id="q9", metadata={"custom_id": "x"})
    assert loglik_key(gen, request, "20") == loglik_key(gen, same, "20")
    keys = {
        loglik_key(gen, request, "20"),
        loglik_key(gen, request, "20 requests"),
        loglik_key(gen, _request(CONTEXT + " Really."), "20"),
        loglik_key(LlamaCppGenerator(n_threads=2), request, "20"),
        loglik_key(LlamaCppGenerator(n_threads_batch=1), request, "20"),
        loglik_key(LlamaCppGenerator(n_ubatch=256), request, "20"),
        loglik_key(LlamaCppGenerator("qwen2.5-coder-1.5b-instruct-gguf"), request, "20"),
    }
    assert len(keys) == 7
    assert loglik_namespace(gen) == f"loglik:{gen.identity}" != loglik_namespace(FakeGenerator())


# --------------------------------------------------------------------------- the fake; a backend without logprobs


def test_fake_scores_by_its_documented_rule_and_is_cached(tmp_path: Path) -> None:
    gen = FakeGenerator()
    pairs = [(_request(CONTEXT), "20 requests"), (_request(CONTEXT), "35 requests"), (_request("[x] nothing"), "20")]
    with Cache(tmp_path / "c.sqlite") as cache:
        first = answer_logliks(gen, pairs + pairs[:1], cache)  # the repeated pair is scored once
        assert gen.loglik_calls == 3 and cache.count(loglik_namespace(gen)) == 3
        again = answer_logliks(FakeGenerator(), pairs, cache)
    assert first[:3] == again and first[3] == first[0]
    assert first[0] == AnswerLoglik.of([FAKE_LOGPROB_SEEN, FAKE_LOGPROB_SEEN])
    assert first[1] == AnswerLoglik.of([FAKE_LOGPROB_UNSEEN, FAKE_LOGPROB_SEEN])
    assert first[2] == AnswerLoglik.of([FAKE_LOGPROB_UNSEEN])


def test_fake_window_overflow_is_none_and_not_stored(tmp_path: Path) -> None:
    gen = FakeGenerator(window=10)
    with Cache(tmp_path / "c.sqlite") as cache:
        assert answer_logliks(gen, [(_request(CONTEXT), "20")], cache) == [None]
        assert cache.count(loglik_namespace(gen)) == 0


def test_a_backend_without_logprobs_gives_none_and_sends_nothing(tmp_path: Path) -> None:
    gen = anthropic_generator(api_key="sk-test", base_url="http://127.0.0.1:9")  # nothing listens
    assert not gen.supports_loglik
    with Cache(tmp_path / "c.sqlite") as cache:
        assert answer_logliks(gen, [(_request(CONTEXT), "20"), (_request(CONTEXT), "21")], cache) == [None, None]
        assert cache.count() == 0
    with pytest.raises(NotImplementedError, match="anthropic"):
        gen.answer_loglik(_request(CONTEXT), "20")


def test_a_local_model_whose_tokenizer_is_not_rebuilt_gives_none_and_loads_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from evalkit.answers.generation.models import MODELS, locate_parts

    smol = MODELS["smollm2-135m-instruct-gguf"]
    try:
        locate_parts(smol.distributions, smol.install, smol.part_glob)
    except LocalModelError:
        pytest.skip(f"optional model not installed: {smol.install}")
    gen = LlamaCppGenerator(smol.model_id, cache_dir=tmp_path / "models")
    with caplog.at_level("WARNING"):
        assert not gen.supports_loglik and not gen.supports_loglik  # asked twice, said once
    assert [r.getMessage() for r in caplog.records].count(
        "no answer log-likelihood with smollm2-135m-instruct-gguf: cannot score answers with "
        f"{smol.file_name}: GGUF pre-tokenizer 'smollm' is not one of ['qwen2']"
    ) == 1
    with Cache(tmp_path / "c.sqlite") as cache:
        assert answer_logliks(gen, [(_request(CONTEXT), "20")], cache) == [None]
        assert cache.count() == 0
    assert gen._server is None  # the GGUF's metadata was read; the model never loaded


def test_a_missing_local_model_is_still_an_error_when_asked_for_scores(tmp_path: Path) -> None:
    gen = LlamaCppGenerator(model_path=tmp_path / "absent.gguf")
    with pytest.raises(LocalModelError, match=r"absent\.gguf"):
        gen.supports_loglik  # noqa: B018 (the property is what is tested)


@pytest.mark.parametrize("answer", ["", "   \n"])
def test_an_empty_answer_is_a_one_line_error_before_anything_runs(tmp_path: Path, answer: str) -> None:
    gen = LlamaCppGenerator(cache_dir=tmp_path / "models")
    with Cache(tmp_path / "c.sqlite") as cache, pytest.raises(ValueError, match="empty") as err:
        answer_logliks(gen, [(_request(CONTEXT), "20"), (_request(CONTEXT, question_id="q7"), answer)], cache)
    assert "\n" not in str(err.value) and "q7" in str(err.value)
    assert gen._server is None and gen.loglik_calls == 0  # refused before the model loaded
    with pytest.raises(ValueError, match="empty"):
        FakeGenerator().answer_loglik(_request(CONTEXT), answer)


# --------------------------------------------------------------------------- the real 0.5B model


def demo_cases(n: int) -> list[tuple[str, str, str, str]]:
    """(question, context holding the answer, context without it, gold answer) for the first n English demo
    questions; the context without it is the next question's source passage, checked not to hold the gold."""
    labelset = load_labelset(REPO / "labelsets" / "demo")
    docs = {doc.doc_id: doc for doc in labelset.documents}
    usable = [q for q in labelset.questions if q.answerable and q.lang == "en" and q.source_passage]

    def passage(q) -> str:
        span = q.source_passage[0]
        return f"[{span.doc_id}] {docs[span.doc_id].title}\n{docs[span.doc_id].text[span.start : span.end]}"

    cases = []
    for q, other in itertools.pairwise(usable):
        gold, with_it, without = q.answers[0], passage(q), passage(other)
        if gold in with_it and gold.lower() not in without.lower():
            cases.append((q.question, with_it, without, gold))
        if len(cases) == n:
            break
    return cases


@pytest.fixture(scope="module")
def local() -> LlamaCppGenerator:
    gen = make_generator(CFG, n_ctx=2048)
    yield gen
    del gen
    gc.collect()


def _real_request(gen: LlamaCppGenerator, question: str, context: str, lang: str = "en"):
    return build_request(question, context, model=gen.model, max_tokens=32, **prompts_for(CFG, lang))


def test_gold_answer_is_likelier_when_the_prompt_holds_it(local: LlamaCppGenerator) -> None:
    cases = demo_cases(4)
    assert len(cases) == 4
    pairs = []
    for question, with_it, without, gold in cases:
        pairs += [(_real_request(local, question, with_it), gold), (_real_request(local, question, without), gold)]
    with Cache(":memory:") as cache:
        scores = answer_logliks(local, pairs, cache)
    for (question, *_), held, missing in zip(cases, scores[0::2], scores[1::2], strict=True):
        assert held is not None and missing is not None
        assert held.n_tokens == missing.n_tokens or abs(held.n_tokens - missing.n_tokens) <= 2
        assert held.total > missing.total, question


def test_a_second_call_is_served_from_the_cache_without_the_model(local: LlamaCppGenerator, tmp_path: Path) -> None:
    pairs = [(_real_request(local, "How many requests?", CONTEXT), "20 requests per second")]
    with Cache(tmp_path / "c.sqlite") as cache:
        before = local.loglik_calls
        first = answer_logliks(local, pairs, cache)
        assert local.loglik_calls == before + 1
        assert answer_logliks(local, pairs, cache) == first and local.loglik_calls == before + 1
        fresh = make_generator(CFG, n_ctx=2048)
        assert answer_logliks(fresh, pairs, cache) == first
    assert fresh._server is None and fresh.loglik_calls == 0  # served without loading a model
    assert first[0] is not None and first[0].n_tokens == 5 and -10 < first[0].total < 0


def test_a_multi_token_chinese_answer_is_spelled_and_scored(local: LlamaCppGenerator) -> None:
    context = "[guide/rate-limits.md] 限流\n限流器默认允许每秒二十个请求的突发。"
    request = _real_request(local, "限流器默认允许多大的突发？", context, "zh")
    with Cache(":memory:") as cache:
        held, missing = answer_logliks(local, [(request, "每秒二十个请求"), (request, "每秒五十个请求")], cache)
    assert held is not None and missing is not None and held.n_tokens >= 3
    assert math.isclose(held.mean, held.total / held.n_tokens) and held.total > missing.total


def test_the_sum_equals_a_token_by_token_recomputation(local: LlamaCppGenerator) -> None:
    """The forced completion's sum against one fresh completion per answer token (the prompt templated by hand,
    each token forced by id): equal up to llama.cpp's batch-shape rounding, so the sum covers exactly the
    answer's tokens, starting where a reply starts."""
    request = build_request("How many requests?", CONTEXT, model=local.model, system="Answer briefly.", max_tokens=8)
    answer = "burst of 20"  # a grammar spelling only the text made the model start with "b" + "urst"
    server, tokenizer = local.load(), local.tokenizer()
    fresh = forced_payload(chat_payload(request, local.settings), answer, tokenizer) | {"cache_prompt": False}
    forced = server.handle_chat_completions(fresh)
    logprobs = token_logprobs(forced, answer)
    ids = [token["id"] for token in forced["choices"][0]["logprobs"]["content"][: len(logprobs)]]
    assert ids == tokenizer.encode(answer) and len(ids) == 5  # canonical: "burst", " of", " ", "2", "0"
    user = "".join(request.messages[0][1])
    turns = f"<|im_start|>system\n{request.system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
    text = turns + "<|im_start|>assistant\n"  # Qwen2.5's chat template, as the GGUF applies it
    steps = []
    for i, token_id in enumerate(ids):
        body = {"prompt": [text, *ids[:i]], "n_predict": 1, "n_probs": 1, "temperature": 0.0, "cache_prompt": False}
        step = server.handle_completions(body | {"grammar": f"root ::= <[{token_id}]>"})
        assert step["usage"]["prompt_tokens"] == forced["usage"]["prompt_tokens"] + i  # the same prompt, by hand
        (token,) = step["choices"][0]["logprobs"]["content"]
        assert token["id"] == token_id
        steps.append(token["logprob"])
    assert math.isclose(math.fsum(steps), math.fsum(logprobs), abs_tol=0.02 * len(ids))


def test_a_score_reuses_its_generation_read_and_is_the_same_in_any_order(local: LlamaCppGenerator) -> None:
    """Scored right after its own generation, a forced answer reads no prompt again; scored after another
    prompt, it reads its prompt once more first, and the two scores are equal to the bit. Against a forced
    answer whose prompt is read whole (cache off) it differs only by llama.cpp's batch-shape rounding."""
    request = _real_request(local, "How many requests?", CONTEXT)
    other = _real_request(local, "What is limited?", CONTEXT.replace("20", "30"))
    answer = "20 requests per second"
    local.generate(request)
    reads = local.loglik_prompt_reads
    after_own = local.answer_loglik(request, answer)
    assert local.loglik_prompt_reads == reads
    local.generate(other)
    primed = local.answer_loglik(request, answer)
    assert local.loglik_prompt_reads == reads + 1
    assert after_own == primed and after_own is not None
    assert local.answer_loglik(request, answer) == primed and local.loglik_prompt_reads == reads + 1
    body = forced_payload(chat_payload(request, local.settings), answer, local.tokenizer()) | {"cache_prompt": False}
    whole = token_logprobs(local.load().handle_chat_completions(body), answer)
    assert math.isclose(math.fsum(whole), after_own.total, abs_tol=0.02 * after_own.n_tokens)


def test_canonical_tokens_match_llama_cpp_counts_on_the_demo_answers(local: LlamaCppGenerator) -> None:
    """The rebuilt tokenizer against llama.cpp's own: the token counts of ~60 of the demo set's distinct gold answers
    (spread: English and Chinese, digits, currency, punctuation) and of a few rare characters written as bytes."""
    labelset = load_labelset(REPO / "labelsets" / "demo")
    answers = sorted({a for q in labelset.questions for a in q.answers})
    texts = [*answers[:: max(1, len(answers) // 60)], "龘𠀀 burst", "é ü ß", "需要64GiB内存"]
    server, tokenizer = local.load(), local.tokenizer()
    mismatched = []
    for text in texts:
        body = {"prompt": text, "n_predict": 1, "temperature": 0.0, "cache_prompt": False}
        counted = server.handle_completions(body)["usage"]["prompt_tokens"]
        ids = tokenizer.encode(text)
        if counted != len(ids) or b"".join(tokenizer.token_bytes(i) for i in ids) != text.encode("utf-8"):
            mismatched.append((text, counted, ids))
    assert len(texts) > 50 and any("\u4e00" <= c <= "\u9fff" for t in texts for c in t) and not mismatched


def test_an_answer_with_byte_tokens_is_scored(local: LlamaCppGenerator) -> None:
    """A rare character is canonically several byte tokens, which llama.cpp's grammar takes only as text: still
    scored, in the split the decoder picks (here fewer tokens than the canonical 5: the vocabulary holds whole
    tokens for these characters that BPE merges never produce)."""
    request = _real_request(local, "Which characters?", "[chars.md] Characters\nThe rare characters are 龘𠀀.")
    with Cache(":memory:") as cache:
        (score,) = answer_logliks(local, [(request, "龘𠀀")], cache)
    assert score is not None and 1 <= score.n_tokens <= 5 and score.total < 0
