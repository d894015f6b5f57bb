"""The generator group (``conf/generator/*.yaml``), typed: one frozen settings record per backend.

:func:`read_generator_settings` picks the record by the section's ``name``
(``anthropic``, ``openai``, ``local``, ``fake``) and reads it with the strict reader
(:func:`evalkit.settings.parse_settings`): unknown keys, wrong types and values out of
range are one-line :class:`~evalkit.settings.ConfigError`s naming the key, never
coerced (``max_tokens=1.5`` is not 1, ``precount=yes`` is not true). The sweep reads
it once, when the plan is built; :func:`~evalkit.answers.generation.make_generator`
builds a backend from it. :meth:`GeneratorCommon.as_config` gives the validated values
back as a read-only mapping for code that reads prompts and refusals by key.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from evalkit.answers.generation.llama_settings import LocalSettings
from evalkit.answers.generation.models import DEFAULT_MODEL_ID
from evalkit.plugins import Choices, Registry
from evalkit.settings import ConfigError, parse_settings, suggest

DEFAULT_REFUSALS: Mapping[str, str] = MappingProxyType(
    {"en": "I don't have that information", "zh": "我没有这方面的信息"}
)
PROMPT_KEYS = ("system", "context_template", "question_template")
"""The texts each language of ``prompts`` must have (see :func:`~evalkit.answers.generation.prompts_for`)."""


@dataclass(frozen=True)
class GeneratorCommon:
    """Keys every backend shares: what a request looks like, whatever answers it."""

    name: str = ""
    """The backend (``anthropic``, ``local``, ``fake``); set by :func:`read_generator_settings`."""
    model: str = field(default="", metadata={"allow_empty": False})
    max_tokens: int = field(default=256, metadata={"min": 1})
    """Output cap of every request."""
    headroom: int = field(default=0, metadata={"min": 0})
    """Tokens kept free beyond ``max_tokens`` when checking the window."""
    cache_prefix: bool = False
    """Mark the system prompt and the context as a provider prompt-cache prefix."""
    stop_sequences: tuple[str, ...] = field(default=(), metadata={"allow_empty": True})
    batch: bool = False
    """Send uncached requests through the provider's batch API (Anthropic only)."""
    refusal: Mapping[str, Any] = field(default_factory=lambda: DEFAULT_REFUSALS)
    """The exact refusal string per language tag."""
    prompts: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    """Per language: ``system``, ``context_template``, ``question_template``."""

    def as_config(self) -> Mapping[str, Any]:
        """The validated values by key (read-only), as the YAML names them."""
        return MappingProxyType({f.name: getattr(self, f.name) for f in dataclasses.fields(self)})


@dataclass(frozen=True)
class AnthropicSettings(GeneratorCommon):
    """``generator=anthropic``: Claude through the Messages API."""

    model: str = field(default="claude-sonnet-5", metadata={"allow_empty": False})
    window: int | None = field(default=None, metadata={"min": 1})
    """Context window in tokens; None: from ``windows`` by model id."""
    windows: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    """Context windows by model id (whole numbers)."""
    precount: bool = True
    """Count tokens before sending; refuse to send what cannot fit."""
    poll_interval_s: float = field(default=60.0, metadata={"above": 0.0})
    batch_timeout_s: float = field(default=24 * 3600.0, metadata={"above": 0.0})
    max_batch_requests: int = field(default=10_000, metadata={"min": 1, "max": 100_000})
    max_retries: int = field(default=4, metadata={"min": 0, "max": 100})
    retry_base_delay_s: float = field(default=0.5, metadata={"min": 0.0})
    retry_max_delay_s: float = field(default=60.0, metadata={"min": 0.0})
    retry_deadline_s: float | None = field(default=None, metadata={"above": 0.0})
    """Give up rather than wait past this many seconds since a request's first attempt; None: no deadline."""
    timeout_s: float = field(default=120.0, metadata={"above": 0.0})
    max_reply_mb: float = field(default=64.0, metadata={"above": 0.0})
    """A larger reply (a message, a count, a batch's results) is refused (one line), never held whole."""
    base_url: str | None = None


@dataclass(frozen=True)
class OpenAISettings(GeneratorCommon):
    """``generator=openai``: any OpenAI-compatible chat endpoint (OpenAI, Azure, vLLM, TGI, Ollama, llama.cpp)."""

    model: str = field(default="gpt-4o-mini", metadata={"allow_empty": False})
    """Sent as the request's ``model`` (Azure: the deployment name); also the price lookup's id."""
    base_url: str = field(default="https://api.openai.com/v1", metadata={"allow_empty": False})
    """The API root that ``/chat/completions`` is appended to (``http://127.0.0.1:8000/v1`` for vLLM)."""
    api_key_env: str | None = field(default="OPENAI_API_KEY", metadata={"allow_empty": False})
    """Environment variable holding the key (read at construction, never printed or cached); null: no key."""
    window: int | None = field(default=None, metadata={"min": 1})
    """Context window in tokens, recorded only (the server refuses what does not fit: an overflow answer)."""
    temperature: float = field(default=0.0, metadata={"min": 0.0})
    """0: greedy (as generator=local)."""
    seed: int | None = field(default=0, metadata={"min": 0})
    """Sampler seed sent with every request; null: none sent."""
    extra_body: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    """More body fields for a server that takes them (``top_k`` for vLLM or llama.cpp); part of the cache key."""
    stream: bool = True
    """Stream the reply (``stream: true``) and record the time to the first content token."""
    concurrency: int = field(default=4, metadata={"min": 1, "max": 256})
    """Requests in flight at once."""
    timeout_s: float = field(default=120.0, metadata={"above": 0.0})
    """Whole-request deadline, from connect to the last byte (not per socket read)."""
    max_reply_mb: float = field(default=8.0, metadata={"above": 0.0})
    """A larger reply is refused (one line), never held whole (a 4k-token answer streams about 1 MB)."""
    max_retries: int = field(default=4, metadata={"min": 0, "max": 100})
    retry_base_delay_s: float = field(default=0.5, metadata={"min": 0.0})
    retry_max_delay_s: float = field(default=60.0, metadata={"min": 0.0})
    retry_deadline_s: float | None = field(default=None, metadata={"above": 0.0})


@dataclass(frozen=True)
class LocalGeneratorSettings(GeneratorCommon, LocalSettings):
    """``generator=local`` (and ``local-1.5b``, ``local-smollm2``): a GGUF model through llama.cpp; the sampling
    keys are :class:`~evalkit.answers.generation.llama_settings.LocalSettings`' (flat in the YAML, as there)."""

    model: str = field(default=DEFAULT_MODEL_ID, metadata={"allow_empty": False})
    model_path: str | None = None
    """Any GGUF chat model file; None: the packaged ``model``."""
    cache_dir: str | None = None

    def llama(self) -> LocalSettings:
        """The settings that change a local answer (the cache key's)."""
        return LocalSettings(**{f.name: getattr(self, f.name) for f in dataclasses.fields(LocalSettings)})


@dataclass(frozen=True)
class FakeSettings(GeneratorCommon):
    """``generator=fake``: the deterministic wiring-test generator."""

    model: str = field(default="fake-echo", metadata={"allow_empty": False})
    window: int | None = field(default=8192, metadata={"min": 1})
    """Prompts over ``window - max_tokens - headroom`` are overflows; None: no window."""
    n_words: int = field(default=8, metadata={"min": 1})
    """Words of the first context block in the answer."""


@dataclass(frozen=True)
class PluginGeneratorSettings(GeneratorCommon):
    """An installed generator plugin's keys: the shared ones and a window (its prompts from its yaml)."""

    window: int | None = field(default=None, metadata={"min": 1})


GeneratorSettings = AnthropicSettings | OpenAISettings | LocalGeneratorSettings | FakeSettings | PluginGeneratorSettings
"""A generator's settings, by backend."""


@dataclass(frozen=True)
class GeneratorBackend:
    """A built-in generator as a plugin's is registered: its settings, its class, what it needs to run."""

    settings: type[GeneratorCommon]
    target: str
    """``module:Class`` whose ``from_config(settings, **overrides)`` builds it (the generator entry-point
    contract), imported when a config names it: this table imports none of its backends."""
    runs_here: bool = False
    """Runs on this machine (its speed is measured here); a remote API would be sent a request."""
    planned_speed: bool = False
    """A plan times it at the planning speeds (tokens per second on this machine); ``fake`` answers at once."""
    batches: bool = False
    """Sends through a batch API (up to a day's turnaround) when its settings say ``batch: true``."""
    api_key_env: str | None = None
    """The environment variable holding its API key (None: it needs none)."""
    also: str = ""
    """How the one-line refusal of an unknown name mentions its other conf options."""


_HERE = "evalkit.answers.generation"
ANTHROPIC_API_KEY_ENV = "ANTHROPIC_API_KEY"
PLUGIN_BACKEND = GeneratorBackend(PluginGeneratorSettings, "")
"""An installed generator's traits: its own settings record, remote as far as evalkit knows, no key it checks."""

GENERATORS: Registry[GeneratorBackend] = Registry(
    "generator",
    {
        "anthropic": GeneratorBackend(
            AnthropicSettings,
            f"{_HERE}.anthropic:AnthropicGenerator",
            api_key_env=ANTHROPIC_API_KEY_ENV,
            batches=True,
        ),
        # The key's variable is the endpoint's own setting (generator.api_key_env; null for a local server).
        "openai": GeneratorBackend(OpenAISettings, f"{_HERE}.openai_compat:OpenAICompatGenerator"),
        "local": GeneratorBackend(
            LocalGeneratorSettings,
            f"{_HERE}.local:LlamaCppGenerator",
            runs_here=True,
            planned_speed=True,
            also=" (or local-1.5b, local-smollm2)",
        ),
        "fake": GeneratorBackend(FakeSettings, f"{_HERE}.fake:FakeGenerator", runs_here=True),
    },
)
"""The registration table: ``generator=<name>`` to its backend. An installed plugin's entry point (group
``evalkit.generators``) names its class itself, and reads :class:`PluginGeneratorSettings`."""

GENERATOR_NAMES = Choices("generator", GENERATORS.builtin_names())
BACKENDS: Mapping[str, type[GeneratorCommon]] = MappingProxyType(
    {name: GENERATORS[name].settings for name in GENERATORS.builtin_names()}
)
"""evalkit's own backends' settings; an installed plugin reads :class:`PluginGeneratorSettings`."""
_OPTIONS = [f"generator={name}{GENERATORS[name].also}" for name in GENERATORS.builtin_names()]
USE_ONE_OF = f"use {', '.join(_OPTIONS[:-1])} or {_OPTIONS[-1]}"


def generator_backend(name: str) -> GeneratorBackend:
    """What ``generator.name`` needs to run: evalkit's own backend's traits, or a plugin's."""
    return GENERATORS[name] if GENERATORS.builtin(name) else PLUGIN_BACKEND


def read_generator_settings(
    raw: Mapping[str, Any] | GeneratorCommon, where: str = "generator", default_name: str | None = None
) -> GeneratorSettings:
    """The typed settings of a generator section, chosen by its ``name``; one-line ConfigError if anything is off."""
    if isinstance(raw, GeneratorCommon):
        return raw  # type: ignore[return-value]
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected a section of keys, got {raw!r}")
    name = raw.get("name", default_name)
    if not isinstance(name, str) or name not in GENERATOR_NAMES:
        raise ConfigError(
            f"{where}.name: unknown generator {name!r}; {suggest(str(name), GENERATOR_NAMES)} ({USE_ONE_OF})"
        )
    settings = parse_settings(BACKENDS.get(name, PluginGeneratorSettings), {**raw, "name": name}, where)
    _check_texts(settings.refusal, f"{where}.refusal")
    for lang, texts in settings.prompts.items():
        if not isinstance(texts, Mapping):
            raise ConfigError(f"{where}.prompts.{lang}: expected a section of keys ({', '.join(PROMPT_KEYS)})")
        missing = [key for key in PROMPT_KEYS if key not in texts]
        if missing:
            raise ConfigError(f"{where}.prompts.{lang}.{missing[0]}: missing")
        _check_texts(texts, f"{where}.prompts.{lang}")
    if isinstance(settings, AnthropicSettings):
        for model, window in settings.windows.items():
            if isinstance(window, bool) or not isinstance(window, int) or window < 1:
                raise ConfigError(f"{where}.windows.{model}: {window!r} is not a positive whole number of tokens")
    return settings  # type: ignore[return-value]


def _check_texts(texts: Mapping[str, Any], where: str) -> None:
    for key, text in texts.items():
        if not isinstance(text, str):
            raise ConfigError(f"{where}.{key}: {text!r} is not a string")


def endpoint_problem(settings: GeneratorSettings, *, need_key: bool = True) -> str | None:
    """Why a remote generator cannot be called (a base_url that is not http/https, a key's variable unset),
    or None: checked before any work, so it is one line at once, not after the retrieval sweep."""
    from evalkit.http_call import url_problem

    base_url = getattr(settings, "base_url", None)
    if isinstance(base_url, str):
        problem = url_problem(base_url)
        if problem is not None:
            return f"generator.base_url: {problem}"
    env = generator_backend(settings.name).api_key_env or getattr(settings, "api_key_env", None)
    if need_key and env and not os.environ.get(env, "").strip():
        return f"{env} is not set: export it to use generator={settings.name} (or pick another generator)"
    return None
