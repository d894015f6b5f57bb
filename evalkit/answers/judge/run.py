"""Running judgements: each row's calls counted, cached in evalkit's cache, fatal errors raised once.

Each public call runs its judgements in one ``asyncio.run``; call it from synchronous code.
:func:`noise_floor` is deliberately never cached: repeats must reach the model.
"""

from __future__ import annotations

import asyncio
import copy
import math
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalkit.answers.judge.llm import INSTRUCTOR_ATTEMPTS
from evalkit.answers.judge.metrics import DEFAULT_METRIC, MetricSpec, metric_spec
from evalkit.answers.judge.records import JudgeError, JudgeRow, JudgeScore, NoiseFloor
from evalkit.cache import Cache, cache_key, decode_json, encode_json
from evalkit.http_call import http_error_in

if TYPE_CHECKING:
    from ragas.llms.base import InstructorBaseRagasLLM

CACHE_NAMESPACE = "judge"
_FATAL_STATUS = frozenset({401, 403, 404})
"""API statuses that fail every row alike (bad key, no access, unknown model): raised, never a NaN per row."""


@dataclass
class _Tally:
    """Judge calls of one row (one asyncio task); the context variable keeps concurrent rows apart."""

    calls: int = 0
    hits: int = 0
    errors: list[str] = field(default_factory=list)


_TALLY: ContextVar[_Tally | None] = ContextVar("evalkit_judge_tally", default=None)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    rule = http_error_in(exc)  # the SDK says "Connection error."; the HTTP rule's reason says which limit
    if rule is not None and rule is not exc:
        text = f"{text} ({rule.reason})"
    return f"{type(exc).__name__}: {text}"[:300]


def _is_fatal(exc: BaseException) -> bool:
    """A configuration error that would fail every row: raise it instead of recording NaNs."""
    return getattr(exc, "status_code", None) in _FATAL_STATUS or isinstance(exc, TypeError)


def _instrumented(llm: Any, cache: Cache | None, fatal: list[BaseException]) -> Any:
    """A copy of ``llm`` whose calls are counted per row, cached in evalkit's cache if given, checked for
    fatal errors. The caller's ``llm`` is not changed. ragas' own per-instance cache wrapper is bypassed."""
    run_llm = copy.copy(llm)
    send: Callable[[str, Any], Awaitable[Any]] = type(llm).agenerate.__get__(llm)
    namespace = f"{CACHE_NAMESPACE}:{getattr(llm, 'provider', 'unknown')}"

    async def agenerate(prompt: str, response_model: Any) -> Any:
        tally = _TALLY.get() or _Tally()
        key = ""
        if cache is not None:
            key = cache_key(
                "judge",
                getattr(llm, "provider", ""),
                llm.model,
                {k: v for k, v in llm.model_args.items() if k != INSTRUCTOR_ATTEMPTS},
                getattr(llm, "system_prompt", None),
                prompt,
                response_model.__name__,
                response_model.model_json_schema(),
            )
            stored = cache.get_decoded(namespace, [key], lambda blob: response_model.model_validate(decode_json(blob)))
            if key in stored:
                tally.hits += 1
                return stored[key]
        tally.calls += 1
        try:
            result = await send(prompt, response_model)
        except Exception as exc:
            tally.errors.append(_one_line(exc))
            if _is_fatal(exc):
                fatal.append(exc)
            raise
        if cache is not None:
            cache.put(namespace, key, encode_json(result.model_dump(mode="json")))
        return result

    run_llm.agenerate = agenerate
    return run_llm


async def _judge_one(
    metric: Any,
    spec: MetricSpec,
    row: JudgeRow,
    model: str,
    metric_name: str,
    gate: asyncio.Semaphore,
    fatal: list[BaseException],
) -> JudgeScore:
    def result(score: float, tally: _Tally, note: str = "") -> JudgeScore:
        cached = tally.calls == 0 and tally.hits > 0
        return JudgeScore(row.key, metric_name, model, score, tally.calls, cached, note)

    tally = _Tally()
    if not row.reference.strip():
        return result(math.nan, tally, "no reference answer (unanswerable question): not judged")
    if not row.answer.strip():
        return result(math.nan, tally, "empty answer: not judged")
    async with gate:
        if fatal:
            return result(math.nan, tally, "not judged: the judge failed on another row")
        _TALLY.set(tally)  # this task's own context: concurrent rows keep separate tallies
        kwargs = {"response": row.answer, "reference": row.reference}
        if spec.uses_question:
            kwargs["user_input"] = row.question
        try:
            value = float((await metric.ascore(**kwargs)).value)
        except Exception as exc:
            return result(math.nan, tally, f"judge error: {_one_line(exc)}")
    if math.isnan(value):
        reason = tally.errors[0] if tally.errors else "the judge's reply was out of range"
        return result(value, tally, f"judge error: {reason}")
    return result(value, tally)


async def _judge_rows(
    rows: Sequence[JudgeRow], llm: Any, metric_name: str, cache: Cache | None, max_concurrency: int
) -> list[JudgeScore]:
    spec = metric_spec(metric_name)
    fatal: list[BaseException] = []
    metric = spec.build(_instrumented(llm, cache, fatal))
    gate = asyncio.Semaphore(max(1, max_concurrency))
    scores = await asyncio.gather(*(_judge_one(metric, spec, row, llm.model, metric_name, gate, fatal) for row in rows))
    if fatal:
        raise JudgeError(f"the judge ({llm.model}) failed: {_one_line(fatal[0])}") from fatal[0]
    return list(scores)


def judge_answers(
    rows: Sequence[JudgeRow],
    llm: InstructorBaseRagasLLM,
    metric: str = DEFAULT_METRIC,
    *,
    cache: Cache | None = None,
    max_concurrency: int = 4,
) -> list[JudgeScore]:
    """The judge's score for each row, in row order (advisory: for the ``judge_<metric>`` column).

    A row without a reference or with an empty answer, or whose judgement fails (a 400, a reply that is
    not the requested JSON, retries exhausted), scores NaN with a ``note``; a bad key, a forbidden or
    unknown model raises :class:`JudgeError`. With ``cache``, judge replies are reused across runs.
    """
    return asyncio.run(_judge_rows(list(rows), llm, metric, cache, max_concurrency))


def noise_floor(
    row: JudgeRow,
    llm: InstructorBaseRagasLLM,
    n: int = 5,
    metric: str = DEFAULT_METRIC,
    *,
    max_concurrency: int = 4,
) -> NoiseFloor:
    """The same judgement of ``row`` repeated ``n`` times, never cached, and its spread.

    Every repeat sends its own requests (``n`` times the metric's calls per row); the repeats run
    concurrently, so which reply a repeat got is not ordered, but the statistics are.
    """
    if n < 2:
        raise ValueError(f"a noise floor needs n >= 2 repeats, got {n}")
    scores = asyncio.run(_judge_rows([row] * n, llm, metric, None, max_concurrency))
    values = [s.score for s in scores]
    try:
        return NoiseFloor.from_scores(values, key=row.key, metric=metric, model=llm.model)
    except JudgeError as exc:
        notes = sorted({s.note for s in scores if s.note})
        raise JudgeError(f"{exc}; {notes[0] if notes else ''}".rstrip("; ")) from None
