"""The deterministic fake generator: answers from the prompt by a fixed rule, through the same cache, window
check and config path as the real backends (no model files, no keys)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from evalkit.answers.blocks import ContextItem, render_context
from evalkit.answers.generation import make_generator, prompts_for
from evalkit.answers.generation.batches import generate_many
from evalkit.answers.generation.cached import generate_cached, request_key
from evalkit.answers.generation.fake import FAKE_MODEL_ID, FakeGenerator, fake_answer_text, fake_token_count
from evalkit.answers.generation.request import GenerationError, build_request
from evalkit.answers.generation.tally import GenerationCounter
from evalkit.cache import Cache
from evalkit.records import Usage

CFG = yaml.safe_load((Path(__file__).resolve().parents[1] / "conf" / "generator" / "fake.yaml").read_text("utf-8"))

ITEMS = [
    ContextItem("u1", "guide/rate-limits.md", 0, 60, "The RateLimiter allows a burst of 20 requests per second.", 0.9,
                True, "Rate limits"),
    ContextItem("u2", "ops/logging.md", 0, 40, "Logs are kept for 14 days.", 0.5, False, "Logging"),
]  # fmt: skip


def request_for(question: str, context: str, lang: str = "en", max_tokens: int = 64, qid: str = "q1"):
    return build_request(
        question, context, model=FAKE_MODEL_ID, max_tokens=max_tokens, question_id=qid, **prompts_for(CFG, lang)
    )


def test_answer_is_the_first_blocks_words_and_citation() -> None:
    gen = make_generator(CFG)
    assert isinstance(gen, FakeGenerator) and gen.backend == "fake" and gen.model == FAKE_MODEL_ID
    answer = gen.generate(request_for("What burst?", render_context(ITEMS)))
    assert answer.text == "The RateLimiter allows a burst of 20 requests [guide/rate-limits.md]"
    assert answer.stop_reason == "end_turn" and not answer.truncated and answer.backend == "fake"
    reordered = gen.generate(request_for("What burst?", render_context(ITEMS[::-1])))
    assert reordered.text == "Logs are kept for 14 days. [ops/logging.md]"  # the order of the context decides


def test_chinese_blocks_count_characters_as_words() -> None:
    item = ContextItem("u3", "hr/travel.md", 0, 20, "住宿标准为每晚不超过六百元。", 1.0, True, "差旅")
    answer = make_generator(CFG).generate(request_for("住宿标准？", render_context([item]), "zh"))
    assert answer.text == "住宿标准为每晚不 [hr/travel.md]"  # n_words 8: eight characters


def test_no_context_gets_the_refusal_in_the_questions_language() -> None:
    gen = make_generator(CFG)
    assert gen.generate(request_for("What is the parking allowance?", "")).text == CFG["refusal"]["en"]
    assert gen.generate(request_for("停车补贴是多少？", "", "zh")).text == CFG["refusal"]["zh"]


def test_usage_counts_tokens_by_the_fixed_rule() -> None:
    assert fake_token_count("The burst is 20, 每晚") == 6
    request = request_for("What burst?", render_context(ITEMS))
    answer = make_generator(CFG).generate(request)
    assert answer.usage == Usage(fake_token_count(request.system + "".join(request.messages[0][1])), 9)


def test_max_tokens_cuts_the_answer() -> None:
    answer = make_generator(CFG).generate(request_for("What burst?", render_context(ITEMS), max_tokens=3))
    assert answer.text == "The RateLimiter allows" and answer.stop_reason == "max_tokens" and answer.truncated


def test_overflow_is_refused_before_sending() -> None:
    gen = make_generator(CFG, window=50)
    counter = GenerationCounter()
    with Cache(":memory:") as cache:
        answer = generate_cached(gen, request_for("Why?", "word " * 100), cache, counter)
        assert generate_cached(gen, request_for("Why?", "", max_tokens=1), cache, counter).stop_reason == "overflow"
        fits = make_generator(CFG, window=None)
        assert generate_cached(fits, request_for("Why?", "word " * 100), cache).stop_reason == "end_turn"
    assert answer.stop_reason == "overflow" and answer.text == "" and answer.usage == Usage()
    assert counter.overflows == {FAKE_MODEL_ID: 2}


def test_cached_and_deduplicated_like_a_real_backend(tmp_path: Path) -> None:
    gen = make_generator(CFG)
    requests = [request_for("What burst?", render_context(ITEMS), qid=q) for q in ("a", "b")]
    counter = GenerationCounter()
    with Cache(tmp_path / "c.sqlite") as cache:
        first = generate_many(gen, requests, cache, counter)
        again = generate_cached(gen, requests[0], cache, counter)
    assert [a.question_id for a in first] == ["a", "b"] and first[1].cached and again.cached
    assert counter.total().requests == 1 and again.text == first[0].text
    other = FakeGenerator(n_words=3)
    assert request_key(other, requests[0]) != request_key(gen, requests[0])  # its rule is in the key


def test_same_answer_in_another_process() -> None:
    context = render_context(ITEMS)
    conf = Path(__file__).resolve().parents[1] / "conf" / "generator" / "fake.yaml"
    code = (
        "import sys, yaml; from evalkit.answers.generation import prompts_for;"
        "from evalkit.answers.generation.request import build_request;"
        "from evalkit.answers.generation.fake import fake_answer_text;"
        f"cfg = yaml.safe_load(open({str(conf)!r}, encoding='utf-8'));"
        f"r = build_request('What burst?', {context!r}, model='m', max_tokens=64, **prompts_for(cfg, 'en'));"
        "sys.stdout.write(fake_answer_text(r, cfg['refusal']))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out == fake_answer_text(request_for("What burst?", context), CFG["refusal"])


def test_unknown_generator_names_the_fake() -> None:
    with pytest.raises(GenerationError, match="generator=fake"):
        make_generator({"name": "nope"})


@pytest.mark.parametrize(
    ("option", "kind"), [("fake", FakeGenerator), ("local-1.5b", None), ("local-smollm2", None), ("local", None)]
)
def test_generator_options_compose_with_hydra(option: str, kind: type | None) -> None:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from evalkit.answers.generation.local import LlamaCppGenerator

    with initialize_config_dir(version_base="1.3", config_dir=str(Path(__file__).resolve().parents[1] / "conf")):
        cfg = compose(config_name="config", overrides=["+experiment=position", f"generator={option}"])
    generator = make_generator(OmegaConf.to_container(cfg.generator, resolve=True))  # loads no model
    assert isinstance(generator, kind or LlamaCppGenerator)
    if option == "local-1.5b":
        assert generator.model == "qwen2.5-coder-1.5b-instruct-gguf" and generator.identity == "local:cc324af070c2ecbf"
    if option == "local-smollm2":
        assert generator.model == "smollm2-135m-instruct-gguf" and generator.identity == "local:b179c9523d0e6a0f"
