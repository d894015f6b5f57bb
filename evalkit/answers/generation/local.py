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
built (once, into the cache folder; :mod:`~evalkit.answers.generation.models`)
and loaded on the first uncached request, so a sweep whose answers are all
cached never loads a model.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from evalkit.answers.generation.base import Generator
from evalkit.answers.generation.cached import overflow_answer
from evalkit.answers.generation.gguf_vocab import GgufTokenizer, UnknownTokenizer
from evalkit.answers.generation.llama_settings import DEFAULT_N_THREADS, DEFAULT_N_THREADS_BATCH, LocalSettings
from evalkit.answers.generation.llamacpp_wire import (
    chat_payload,
    completion_to_answer,
    is_overflow,
    prompt_identity,
    timings_seconds,
)
from evalkit.answers.generation.local_loglik import forced_payload, loglik_from_response
from evalkit.answers.generation.loglik import AnswerLoglik, check_answer
from evalkit.answers.generation.models import (
    DEFAULT_MODEL_ID,
    LocalModelError,
    model_cache_dir,
    model_file,
    parts_model,
)
from evalkit.answers.generation.request import GenerationError, GenerationRequest
from evalkit.records import Answer

__all__ = [
    "BINDING",
    "DEFAULT_MODEL_ID",
    "DEFAULT_N_THREADS",
    "DEFAULT_N_THREADS_BATCH",
    "LlamaCppGenerator",
    "LocalModelError",
    "LocalSettings",
    "chat_payload",
    "completion_to_answer",
    "is_overflow",
    "model_cache_dir",
    "prompt_identity",
    "timings_seconds",
]

log = logging.getLogger(__name__)

BINDING = "xllamacpp"
"""The distribution that runs the model; its version is part of the cache key."""
INSTALL_HINT = "pip install xllamacpp==2026.10.11549 (a default dependency of evalkit: pip install -e .)"


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
    params.cpuparams.n_threads = settings.n_threads  # decoding
    params.cpuparams_batch.n_threads = settings.n_threads_batch  # prompt processing
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
        self._tokenizer: GgufTokenizer | None = None
        self._no_loglik: str | None = None
        """Why this model's answers cannot be scored ("" when they can); None until first asked."""
        self._resident: str | None = None
        """The prompt whose key/value cache the server's slot holds (:func:`prompt_identity`), None: unknown."""
        self.loglik_calls = 0
        """Forced-answer completions this generator ran (observable: a cached score runs none)."""
        self.loglik_prompt_reads = 0
        """Prompts read only to score them (observable: a score right after its own generation reads none)."""

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], **overrides: Any) -> LlamaCppGenerator:
        """Build from ``conf/generator/local.yaml`` or ``local-1.5b.yaml``, read strictly (keyword overrides win)."""
        from evalkit.answers.generation.settings import LocalGeneratorSettings, read_generator_settings

        settings = read_generator_settings(cfg, default_name="local")
        if not isinstance(settings, LocalGeneratorSettings):
            raise GenerationError(f"generator.name: {settings.name!r} is not a local generator")
        fields = {item.name for item in dataclasses.fields(LocalSettings)}
        args: dict[str, Any] = {
            "model": settings.model,
            "model_path": settings.model_path,
            "cache_dir": settings.cache_dir,
            "headroom": settings.headroom,
        }
        args.update({k: v for k, v in overrides.items() if k not in fields})
        llama = dataclasses.replace(settings.llama(), **{k: v for k, v in overrides.items() if k in fields})
        return cls(settings=llama, **args)

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
        payload = chat_payload(request, self.settings)
        with self._lock:
            response = server.handle_chat_completions(payload)
            self._resident = None if "error" in response else prompt_identity(payload)
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
        answer = completion_to_answer(response, request.question_id, request.model, self.backend)
        return dataclasses.replace(answer, **timings_seconds(timings))

    @property
    def supports_loglik(self) -> bool:
        """True when this GGUF's tokenizer can be rebuilt (:mod:`.gguf_vocab`: byte-level BPE with a known split,
        as the Qwen models); otherwise the gold log-likelihood is not scored (NaN, as on Claude) and the reason
        is logged once, e.g. SmolLM2's ``smollm`` pre-tokenizer. A missing model is still an error."""
        if self._no_loglik is None:
            try:
                self.tokenizer()
                self._no_loglik = ""
            except LocalModelError:
                raise
            except GenerationError as exc:
                self._no_loglik = str(exc)
                log.warning("no answer log-likelihood with %s: %s", self.model, exc)
        return not self._no_loglik

    def tokenizer(self) -> GgufTokenizer:
        """The model's tokenizer, rebuilt from the GGUF's metadata on first use (xllamacpp has no tokenize call)."""
        with self._lock:
            if self._tokenizer is None:
                path = self.model_file()
                try:
                    self._tokenizer = GgufTokenizer.from_gguf(path)
                except UnknownTokenizer as exc:
                    raise GenerationError(f"cannot score answers with {path.name}: {exc}") from exc
            return self._tokenizer

    def answer_loglik(self, request: GenerationRequest, answer: str) -> AnswerLoglik | None:
        """The answer's canonical tokens forced by a grammar as the reply, logprobs summed (:mod:`.local_loglik`).

        The forced reply reuses the prompt's key/value cache: right after the request's own generation the
        slot holds it, else a one-token read of the same prompt (cache off, as for answers) puts it there. The
        score is the same either way, to the bit (measured), so it never depends on which request ran before;
        reusing the generation's read makes scoring cost 0.1-0.5 s instead of a second read of the prompt
        (:data:`~evalkit.answers.position.sizing.FORCED_ANSWER_SECONDS`).
        """
        check_answer(answer, request)
        chat = chat_payload(request, self.settings)
        payload = forced_payload(chat, answer, self.tokenizer())
        server = self.load()
        with self._lock:
            if self._resident != prompt_identity(chat):
                primed = server.handle_chat_completions({**chat, "max_tokens": 1})
                self.loglik_prompt_reads += 1
                if is_overflow(primed):
                    self._resident = None
                    return None
                if "error" in primed:
                    self._resident = None
                    raise GenerationError(f"llama.cpp rejected a prompt read: {primed['error']}")
                self._resident = prompt_identity(chat)
            response = server.handle_chat_completions(payload)
            self.loglik_calls += 1
        if is_overflow(response):
            return None
        if "error" in response:
            raise GenerationError(f"llama.cpp rejected a forced answer: {response['error']}")
        return loglik_from_response(response, answer)
