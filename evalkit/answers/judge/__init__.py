"""Advisory LLM judge: ragas' LLM metrics with Claude as the judge, and the judge's own noise floor.

Advisory only. The judge never replaces evalkit's scoring (exact / contains / F1 / refusal in
:mod:`evalkit.scoring.answers`); its scores belong in their own columns (:func:`judge_column`, e.g.
``judge_answer_correctness``) beside evalkit's, and a judged difference between two configs means little
until it is larger than the judge's :class:`NoiseFloor`: the same judgement repeated ``n`` times.

How it is wired:

- :func:`ragas_llm` wraps the official ``anthropic`` client (``AsyncAnthropic``: ragas' metrics call the
  LLM asynchronously) in ragas' instructor-based ``InstructorLLM`` via ``ragas.llms.llm_factory``.
  ragas is imported there, lazily, after ``RAGAS_DO_NOT_TRACK=true`` (ragas sends telemetry otherwise).
  ``model_args`` is replaced by ``{"max_tokens": N}``: ragas' defaults add ``temperature``/``top_p``,
  which ``messages.create`` in anthropic 2.x does not take (DESIGN §9).
- Metrics (:data:`JUDGE_METRICS`) are ragas' "collections" metrics that need only an LLM, no embeddings.
- Each public call runs its judgements in one ``asyncio.run``; call it from synchronous code. The HTTP
  client keeps no idle connections, so a connection opened under one call's event loop is never reused
  under the next one's (with keep-alive that reuse fails and the request is silently sent twice).
- Caching: evalkit's own cache (:class:`evalkit.cache.Cache`), keyed by provider, model, model args,
  prompt and response schema, when :func:`judge_answers` gets one. ragas' own LLM cache is bypassed (its
  key ignores the model). :func:`noise_floor` is deliberately never cached: repeats must reach the model.

Modules: :mod:`~evalkit.answers.judge.records` (rows, scores, the noise floor),
:mod:`~evalkit.answers.judge.metrics` (the ragas metrics by name),
:mod:`~evalkit.answers.judge.llm` (the LLM wrapper and :class:`JudgeConfig`),
:mod:`~evalkit.answers.judge.run` (running judgements). Every public name is importable from here.
"""

from __future__ import annotations

from evalkit.answers.judge.llm import API_KEY_ENV, INSTRUCTOR_ATTEMPTS, TELEMETRY_ENV, JudgeConfig, ragas_llm
from evalkit.answers.judge.metrics import DEFAULT_METRIC, JUDGE_METRICS, MetricSpec, metric_spec
from evalkit.answers.judge.records import (
    COLUMN_PREFIX,
    JudgeError,
    JudgeRow,
    JudgeScore,
    NoiseFloor,
    judge_column,
    within_noise_floor,
)
from evalkit.answers.judge.run import CACHE_NAMESPACE, judge_answers, noise_floor

__all__ = [
    "API_KEY_ENV",
    "CACHE_NAMESPACE",
    "COLUMN_PREFIX",
    "DEFAULT_METRIC",
    "INSTRUCTOR_ATTEMPTS",
    "JUDGE_METRICS",
    "TELEMETRY_ENV",
    "JudgeConfig",
    "JudgeError",
    "JudgeRow",
    "JudgeScore",
    "MetricSpec",
    "NoiseFloor",
    "judge_answers",
    "judge_column",
    "metric_spec",
    "noise_floor",
    "ragas_llm",
    "within_noise_floor",
]
