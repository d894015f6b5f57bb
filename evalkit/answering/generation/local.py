"""A local GGUF chat model through ``xllamacpp`` (prebuilt llama.cpp bindings, a default dependency).

``xllamacpp.Server(CommonParams).handle_chat_completions({...})`` runs
llama.cpp's own server loop in-process: it applies the chat template inside
the GGUF and returns an OpenAI-shaped dict (``choices``, ``finish_reason``,
``usage``, ``timings``). A prompt longer than the context comes back as an
``exceed_context_size_error`` object, not an exception; there is no tokenize
call, so the window is checked by llama.cpp itself and recorded as an overflow.

Determinism: greedy decoding with a fixed seed gives identical answers across
repeats and processes *at a fixed thread count*. A different thread count
changed 2 of 8 greedy answers when measured, and a reused prompt cache changed
1 of 8, so the thread count and every sampling and context setting are set
explicitly (never the library's defaults), go into the answer cache key
(:meth:`LlamaCppGenerator.key_params`), and the prompt cache stays off.

Nothing is loaded or assembled at import or construction: the model file is
built (once, into the cache folder; :mod:`~evalkit.answering.generation.models`)
and loaded on the first uncached request, so a sweep whose answers are all
cached never loads a model.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
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
from evalkit.answering.generation.local_loglik import forced_payload, loglik_from_response
from evalkit.answering.generation.loglik import AnswerLoglik, check_answer
from evalkit.answering.generation.models import (
    DEFAULT_MODEL_ID,
    LocalModelError,
    model_cache_dir,
    model_file,
    parts_model,
)
from evalkit.records import Answer, Usage

__all__ = [
    "BINDING",
    "DEFAULT_MODEL_ID",
    "DEFAULT_N_THREADS",
    "LlamaCppGenerator",
    "LocalModelError",
    "LocalSettings",
    "chat_payload",
    "completion_to_answer",
    "is_overflow",
    "model_cache_dir",
]

log = logging.getLogger(__name__)

BINDING = "xllamacpp"
"""The distribution that runs the model; its version is part of the cache key."""
DEFAULT_N_THREADS = 2
"""Threads when the config says nothing: fixed, because the thread count changes greedy answers."""
INSTALL_HINT = "pip install xllamacpp==2026.10.11549 (a default dependency of evalkit: pip install -e .)"
OVERFLOW_ERROR = "exceed_context_size_error"
"""The error type llama.cpp's server returns for a prompt longer than the context."""


@dataclass(frozen=True)
class LocalSettings:
    """Everything besides the request that changes a local answer; all of it goes into the cache key."""

    n_ctx: int = 8192
    """llama.cpp context in tokens (prompt + answer); the real window. The models are trained to 32768."""
    n_threads: int = DEFAULT_N_THREADS
    """Threads for prompt processing and generation (both); changes greedy output, so it is keyed."""
    n_batch: int = 2048
    """Logical batch of prompt tokens."""
    n_ubatch: int = 512
    """Physical batch of prompt tokens (how the prompt is split across matrix calls)."""
    flash_attn: bool = True
    """llama.cpp's flash attention (what its ``auto`` picks on CPU), set explicitly."""
    seed: int = 0
    """Sampler seed."""
    temperature: float = 0.0
    """0: greedy decoding."""
    top_k: int = 40
    top_p: float = 0.95
    min_p: float = 0.05
    repeat_penalty: float = 1.0
    """1.0: no repetition penalty."""

    def __post_init__(self) -> None:
        if self.n_ctx <= 0:
            raise ValueError(f"generator.n_ctx must be positive (0 would mean the model's full context): {self.n_ctx}")
        if self.n_threads <= 0:
            raise ValueError(f"generator.n_threads must be a positive thread count, got {self.n_threads}")

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> LocalSettings:
        """The settings a ``conf/generator/local*.yaml`` names; absent or null keys take the defaults above."""
        defaults = cls()
        values: dict[str, Any] = {}
        for item in dataclasses.fields(cls):
            raw = cfg.get(item.name)
            default = getattr(defaults, item.name)
            values[item.name] = default if raw is None else type(default)(raw)
        return cls(**values)

    def as_key(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def binding_version() -> str:
    """``xllamacpp==<version>`` as installed (read from metadata: nothing is imported), for the cache key."""
    try:
        return f"{BINDING}=={metadata.version(BINDING)}"
    except metadata.PackageNotFoundError:
        return f"{BINDING} (not installed)"


def _xllamacpp() -> Any:
    try:
        import xllamacpp
    except ImportError as exc:
        raise LocalModelError(f"generator=local needs xllamacpp: {INSTALL_HINT}") from exc
    return xllamacpp


def server_params(xllamacpp: Any, path: Path, settings: LocalSettings) -> Any:
    """``CommonParams`` with every setting that matters written explicitly (the library defaults are not)."""
    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.n_ctx = settings.n_ctx
    params.n_batch = settings.n_batch
    params.n_ubatch = settings.n_ubatch
    params.n_parallel = 1  # one slot: the whole n_ctx is one request's window
    params.cpuparams.n_threads = settings.n_threads
    params.cpuparams_batch.n_threads = settings.n_threads
    flash = xllamacpp.llama_flash_attn_type
    params.flash_attn_type = (
        flash.LLAMA_FLASH_ATTN_TYPE_ENABLED if settings.flash_attn else flash.LLAMA_FLASH_ATTN_TYPE_DISABLED
    )
    params.cache_prompt = False  # a reused prompt prefix changed answers when measured
    params.cache_ram_mib = 0
    params.ctx_shift = False  # never drop the start of a prompt to make room
    params.warmup = False
    params.verbosity = -1
    sampling = params.sampling
    sampling.seed = settings.seed
    sampling.temp = settings.temperature
    sampling.top_k = settings.top_k
    sampling.top_p = settings.top_p
    sampling.min_p = settings.min_p
    sampling.penalty_repeat = settings.repeat_penalty
    return params


def chat_payload(request: GenerationRequest, settings: LocalSettings) -> dict[str, Any]:
    """The chat-completions body: the request's turns plus every sampling setting, sent explicitly."""
    messages = [{"role": "system", "content": request.system}] if request.system else []
    messages += [{"role": role, "content": "".join(blocks)} for role, blocks in request.messages]
    payload: dict[str, Any] = {
        "messages": messages,
        "max_tokens": request.max_tokens,
        "temperature": settings.temperature,
        "top_k": settings.top_k,
        "top_p": settings.top_p,
        "min_p": settings.min_p,
        "repeat_penalty": settings.repeat_penalty,
        "seed": settings.seed,
        "cache_prompt": False,
        "stream": False,
    }
    if request.stop_sequences:
        payload["stop"] = list(request.stop_sequences)
    return payload


def is_overflow(response: Mapping[str, Any]) -> bool:
    """True for llama.cpp's "prompt longer than the context" error object."""
    error = response.get("error")
    return isinstance(error, Mapping) and error.get("type") == OVERFLOW_ERROR


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
    """A GGUF chat model run by llama.cpp (xllamacpp) on this machine; greedy decoding with a fixed seed."""

    backend = "local"

    def __init__(
        self,
        model: str = DEFAULT_MODEL_ID,
        *,
        model_path: str | Path | None = None,
        settings: LocalSettings | None = None,
        cache_dir: str | Path | None = None,
        headroom: int = 0,
        **overrides: Any,
    ) -> None:
        """``overrides`` are :class:`LocalSettings` fields (``n_ctx=4096``, ``n_threads=1``, ``seed=1``, ...)."""
        self.model = model
        self.model_path = Path(model_path).expanduser() if model_path else None
        if self.model_path is None:
            parts_model(model)  # an unknown packaged model is an error now, not at the first uncached request
        self.settings = dataclasses.replace(settings or LocalSettings(), **overrides)
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir else None
        self.window = self.settings.n_ctx
        self.headroom = headroom
        self.precount = False  # xllamacpp has no tokenize call; llama.cpp's own overflow error is recorded
        self._server: Any = None
        self._lock = threading.Lock()  # one llama.cpp server slot: requests run one at a time
        self.loglik_calls = 0
        """Forced-answer completions this generator ran (observable: a cached score runs none)."""

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], **overrides: Any) -> LlamaCppGenerator:
        """Build from ``conf/generator/local.yaml`` or ``local-1.5b.yaml`` (keyword overrides win)."""
        fields = {item.name for item in dataclasses.fields(LocalSettings)}
        setting_overrides = {k: v for k, v in overrides.items() if k in fields}
        args: dict[str, Any] = {
            "model": cfg.get("model") or DEFAULT_MODEL_ID,
            "model_path": cfg.get("model_path"),
            "cache_dir": cfg.get("cache_dir"),
            "headroom": int(cfg.get("headroom") or 0),
        }
        args.update({k: v for k, v in overrides.items() if k not in fields})
        settings = dataclasses.replace(LocalSettings.from_config(cfg), **setting_overrides)
        return cls(settings=settings, **args)

    @property
    def n_ctx(self) -> int:
        return self.settings.n_ctx

    @property
    def n_threads(self) -> int:
        return self.settings.n_threads

    @property
    def identity(self) -> str:
        """``local:`` plus the weights' version: the pinned hash, or a custom file's name and size."""
        if self.model_path is None:
            return f"local:{parts_model(self.model).sha256[:16]}"
        size = self.model_path.stat().st_size if self.model_path.is_file() else 0
        return f"local:{self.model_path.name}:{size}"

    def key_params(self) -> Mapping[str, Any]:
        # Threads, batch sizes and flash attention change greedy output as surely as the seed does.
        return {"binding": binding_version(), **self.settings.as_key()}

    def model_file(self) -> Path:
        """The GGUF to load: ``model_path``, else the packaged model assembled into the cache folder."""
        if self.model_path is not None:
            if not self.model_path.is_file():
                raise LocalModelError(f"generator.model_path {self.model_path} is not a file (any GGUF chat model)")
            return self.model_path
        return model_file(parts_model(self.model), self.cache_dir)

    def load(self) -> Any:
        """The xllamacpp server, assembled and loaded on first use."""
        with self._lock:
            if self._server is None:
                xllamacpp = _xllamacpp()
                self._server = xllamacpp.Server(server_params(xllamacpp, self.model_file(), self.settings))
            return self._server

    def generate(self, request: GenerationRequest) -> Answer:
        server = self.load()
        with self._lock:
            response = server.handle_chat_completions(chat_payload(request, self.settings))
        if is_overflow(response):
            return overflow_answer(self, request, why=str(response["error"].get("message", "")))
        if "error" in response or not response.get("choices"):
            raise GenerationError(f"llama.cpp rejected the request: {response.get('error', response)}")
        timings = response.get("timings") or {}
        log.debug(
            "local answer: %s prompt tokens at %.0f/s, %s generated at %.1f/s",
            timings.get("prompt_n"),
            timings.get("prompt_per_second") or 0.0,
            timings.get("predicted_n"),
            timings.get("predicted_per_second") or 0.0,
        )
        return completion_to_answer(response, request.question_id, request.model, self.backend)

    @property
    def supports_loglik(self) -> bool:
        return True

    def answer_loglik(self, request: GenerationRequest, answer: str) -> AnswerLoglik | None:
        """The answer forced by a grammar as the reply, its tokens' logprobs summed (:mod:`.local_loglik`)."""
        check_answer(answer, request)
        server = self.load()
        with self._lock:
            response = server.handle_chat_completions(forced_payload(chat_payload(request, self.settings), answer))
            self.loglik_calls += 1
        if is_overflow(response):
            return None
        if "error" in response:
            raise GenerationError(f"llama.cpp rejected a forced answer: {response['error']}")
        return loglik_from_response(response, answer)
