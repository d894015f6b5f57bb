"""LLM generation: the contract (``base``), Claude (``anthropic``), any OpenAI-compatible endpoint
(``openai_compat``), a local GGUF model (``local``, on
``xllamacpp``; packaged weights in ``models``) and a deterministic fake for wiring tests (``fake``).

Backends are imported only when chosen, so importing evalkit imports neither the
``anthropic`` or ``openai`` SDK nor ``xllamacpp``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalkit.answers.generation.base import Generator
from evalkit.answers.generation.request import GenerationError
from evalkit.answers.generation.settings import (
    GENERATOR_NAMES,
    GENERATORS,
    USE_ONE_OF,
    GeneratorSettings,
    read_generator_settings,
)
from evalkit.plugins import PluginError
from evalkit.usercode import guard_methods

__all__ = ["GENERATORS", "make_generator", "prompts_for", "refusal_for"]


def _lang_key(cfg: Mapping[str, Any], section: str, lang: str) -> str:
    """'zh' for any Chinese tag (zh, zh-Hans, zh-CN), else 'en' when the section lacks the exact tag."""
    options = cfg.get(section) or {}
    if lang in options:
        return lang
    return "zh" if lang.lower().startswith("zh") and "zh" in options else "en"


def refusal_for(cfg: Mapping[str, Any], lang: str) -> str:
    """The exact refusal string the model is told to answer with, for a question's language tag."""
    return str(cfg["refusal"][_lang_key(cfg, "refusal", lang)])


def prompts_for(cfg: Mapping[str, Any], lang: str) -> dict[str, str]:
    """System prompt and user templates for a language, with the refusal string filled in.

    Returns ``{"system", "context_template", "question_template"}``, ready for :func:`build_request`.
    """
    prompts = cfg["prompts"][_lang_key(cfg, "prompts", lang)]
    refusal = refusal_for(cfg, lang)
    return {
        "system": str(prompts["system"]).format(refusal=refusal),
        "context_template": str(prompts["context_template"]),
        "question_template": str(prompts["question_template"]),
    }


def make_generator(cfg: Mapping[str, Any] | GeneratorSettings, **overrides: Any) -> Generator:
    """The generator a ``conf/generator/*.yaml`` names (``anthropic``, ``openai``, ``local``, ``fake``, a plugin's).

    ``cfg`` is the typed settings the plan read once, or a mapping, read strictly here
    (:func:`~evalkit.answers.generation.settings.read_generator_settings`).
    """
    if isinstance(cfg, Mapping) and cfg.get("name") not in GENERATOR_NAMES:
        raise GenerationError(f"unknown generator {cfg.get('name')!r}: {USE_ONE_OF}")
    settings = read_generator_settings(cfg)
    backend = GENERATORS.implementation(settings.name)  # a built-in's class, or a plugin's entry point
    generator = backend.from_config(settings, **overrides)  # type: ignore[attr-defined]
    if not isinstance(generator, Generator):
        raise PluginError(f"generator={settings.name} built {type(generator).__name__}, not a Generator")
    where = GENERATORS.where(settings.name)
    return generator if where is None else guard_methods(where, generator, ("generate",))
