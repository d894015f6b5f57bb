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
"""

from __future__ import annotations

import asyncio
import copy
import math
import os
import statistics
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalkit.cache import Cache, cache_key, decode_json, encode_json

if TYPE_CHECKING:
    from ragas.llms.base import InstructorBaseRagasLLM

API_KEY_ENV = "ANTHROPIC_API_KEY"
TELEMETRY_ENV = "RAGAS_DO_NOT_TRACK"
"""ragas reports usage to its developers unless this is the string ``true``."""
COLUMN_PREFIX = "judge_"
"""Judge scores live in their own columns, ``judge_<metric>``; evalkit's own scores keep theirs."""
DEFAULT_METRIC = "answer_correctness"
CACHE_NAMESPACE = "judge"
INSTRUCTOR_ATTEMPTS = "max_retries"
"""instructor's attempts per call (1: no re-ask), carried in ``model_args``; instructor consumes it."""
_FATAL_STATUS = frozenset({401, 403, 404})
"""API statuses that fail every row alike (bad key, no access, unknown model): raised, never a NaN per row."""


class JudgeError(RuntimeError):
    """The judge cannot run (no key, ragas missing, the API refuses the key or the model)."""


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class JudgeRow:
    """One answer to judge against its gold answer."""

    key: str
    """The row's id in the results (a question id, or a result row's key); copied onto its score."""
    question: str
    answer: str
    """The model's answer, as scored by evalkit."""
    reference: str
    """The gold answer. Empty for an unanswerable question: such a row is not judged."""


@dataclass(frozen=True)
class JudgeScore:
    """The judge's verdict on one row, in ``[0, 1]``; advisory, kept beside evalkit's own scores."""

    key: str
    metric: str
    model: str
    score: float
    """NaN when the row was not judged (see ``note``)."""
    calls: int
    """Judge calls sent to the model for this row (cache hits excluded; the SDK's retries not counted)."""
    cached: bool
    """Every judge call of this row came from evalkit's cache."""
    note: str = ""
    """Why ``score`` is NaN (no reference, empty answer, the judge's error), else empty."""

    @property
    def column(self) -> str:
        """The results column this score goes into."""
        return judge_column(self.metric)


@dataclass(frozen=True)
class NoiseFloor:
    """One judgement repeated ``n`` times (uncached): how much the judge disagrees with itself."""

    key: str
    metric: str
    model: str
    n: int
    """Repeats asked for."""
    scores: tuple[float, ...]
    """The judged repeats (a repeat that failed is left out and counted in ``failed``)."""
    failed: int
    mean: float
    std: float
    """Sample standard deviation (n - 1 in the denominator) of ``scores``."""
    min: float
    max: float
    spread: float
    """``max - min``: the floor a difference between two configs' judge means must clear."""

    @classmethod
    def from_scores(cls, scores: Sequence[float], *, key: str = "", metric: str = "", model: str = "") -> NoiseFloor:
        """Statistics of repeated judgements; NaN repeats count as failed. Needs two judged repeats."""
        judged = tuple(float(s) for s in scores if not math.isnan(s))
        if len(judged) < 2:
            raise JudgeError(f"a noise floor needs at least 2 judged repeats, got {len(judged)} of {len(scores)}")
        low, high = min(judged), max(judged)
        return cls(
            key=key,
            metric=metric,
            model=model,
            n=len(scores),
            scores=judged,
            failed=len(scores) - len(judged),
            mean=statistics.fmean(judged),
            std=statistics.stdev(judged),
            min=low,
            max=high,
            spread=high - low,
        )

    def within(self, mean_a: float, mean_b: float) -> bool:
        """Whether two configs' judge means differ by no more than this floor's spread (i.e. within noise)."""
        return within_noise_floor(mean_a, mean_b, self)


def within_noise_floor(mean_a: float, mean_b: float, floor: NoiseFloor) -> bool:
    """Whether ``|mean_a - mean_b|`` is within the judge's spread on one repeated judgement.

    Conservative on purpose: a difference the judge can produce by disagreeing with itself on a single
    question is not evidence that one config is better. NaN means are never "within".
    """
    delta = abs(mean_a - mean_b)
    return not math.isnan(delta) and delta <= floor.spread


def judge_column(metric: str) -> str:
    """``judge_<metric>``: the column a judge metric's scores go into."""
    return f"{COLUMN_PREFIX}{metric}"


# --------------------------------------------------------------------------- metrics


@dataclass(frozen=True)
class _MetricSpec:
    build: Callable[[Any], Any]
    uses_question: bool
    calls_per_row: int
    """Judge calls one row costs when every call succeeds (for dry runs and tests)."""


def _answer_correctness(llm: Any) -> Any:
    from ragas.metrics.collections import AnswerCorrectness

    # Factuality only: statement-level TP/FP/FN F1. The similarity half needs embeddings.
    return AnswerCorrectness(llm=llm, weights=[1.0, 0.0])


def _answer_accuracy(llm: Any) -> Any:
    from ragas.metrics.collections import AnswerAccuracy

    # One attempt per judge: ragas' retries would re-send silently and hide the cost.
    return AnswerAccuracy(llm=llm, max_retries=1)


def _factual_correctness(llm: Any) -> Any:
    from ragas.metrics.collections import FactualCorrectness

    return FactualCorrectness(llm=llm, mode="f1")


JUDGE_METRICS: Mapping[str, _MetricSpec] = {
    "answer_correctness": _MetricSpec(_answer_correctness, uses_question=True, calls_per_row=3),
    "answer_accuracy": _MetricSpec(_answer_accuracy, uses_question=True, calls_per_row=2),
    "factual_correctness": _MetricSpec(_factual_correctness, uses_question=False, calls_per_row=4),
}
"""ragas LLM metrics that need no embeddings, by name.

- ``answer_correctness``: ragas ``AnswerCorrectness`` with weights ``[1, 0]``: statements of answer and
  reference, classified TP/FP/FN; F1. 3 calls per row.
- ``answer_accuracy``: ragas ``AnswerAccuracy`` (NVIDIA's two judges rate 0/2/4, averaged, /4). 2 calls.
- ``factual_correctness``: ragas ``FactualCorrectness`` (claims checked by NLI both ways; F1, 2 decimals).
  4 calls.
"""


def _spec(metric: str) -> _MetricSpec:
    try:
        return JUDGE_METRICS[metric]
    except KeyError:
        raise ValueError(f"unknown judge metric {metric!r}; known: {', '.join(sorted(JUDGE_METRICS))}") from None


# --------------------------------------------------------------------------- the LLM


def ragas_llm(
    model: str,
    base_url: str | None = None,
    api_key: str | None = None,
    max_tokens: int = 1024,
    *,
    max_retries: int = 2,
    timeout_s: float = 120.0,
    max_connections: int = 16,
) -> InstructorBaseRagasLLM:
    """ragas' LLM wrapper (``InstructorLLM``) around ``anthropic.AsyncAnthropic``, for the judge metrics.

    ``api_key`` defaults to ``$ANTHROPIC_API_KEY``; ``base_url`` points the SDK elsewhere (tests use a
    loopback server). ``max_retries`` is the SDK's own (408/409/429/5xx/529). Sets ``RAGAS_DO_NOT_TRACK``
    to ``true`` unless the caller set it, before ragas is imported.
    """
    os.environ.setdefault(TELEMETRY_ENV, "true")
    key = api_key or os.environ.get(API_KEY_ENV, "")
    if not key:
        raise JudgeError(f"{API_KEY_ENV} is not set: export it to use the advisory Claude judge, or leave it off")
    try:
        import anthropic
        import httpx2  # the HTTP package of anthropic 2.x
        from ragas import _analytics
        from ragas.llms import llm_factory
    except Exception as exc:  # ImportError, or ragas failing inside its own imports
        raise JudgeError(
            f"the judge needs ragas==0.4.3 with langchain-community==0.4.1 and anthropic==2.14.0: {exc}"
        ) from exc
    # ragas reads the variable once and caches it: re-read in case something asked before it was set.
    _analytics.do_not_track.cache_clear()
    http_client = anthropic.DefaultAsyncHttpxClient(
        limits=httpx2.Limits(max_connections=max_connections, max_keepalive_connections=0)
    )
    client = anthropic.AsyncAnthropic(
        api_key=key, base_url=base_url, max_retries=max_retries, timeout=timeout_s, http_client=http_client
    )
    llm = llm_factory(model, provider="anthropic", client=client)
    # Not ragas' temperature/top_p defaults (DESIGN §9). ``max_retries`` is instructor's, consumed by it and
    # never sent: its default (3) re-sends on *any* exception, API errors included, on top of the SDK's.
    llm.model_args = {"max_tokens": int(max_tokens), INSTRUCTOR_ATTEMPTS: 1}
    return llm


@dataclass(frozen=True)
class JudgeConfig:
    """``conf/judge/*.yaml``."""

    model: str
    max_tokens: int = 1024
    metric: str = DEFAULT_METRIC
    n_noise_repeats: int = 5
    max_concurrency: int = 4
    max_retries: int = 2
    timeout_s: float = 120.0
    base_url: str | None = None

    @classmethod
    def from_mapping(cls, cfg: Mapping[str, Any]) -> JudgeConfig:
        """Read a config mapping (unknown keys such as ``name`` are ignored); the metric must be known."""
        config = cls(
            model=str(cfg["model"]),
            max_tokens=int(cfg.get("max_tokens", 1024)),
            metric=str(cfg.get("metric", DEFAULT_METRIC)),
            n_noise_repeats=int(cfg.get("n_noise_repeats", 5)),
            max_concurrency=int(cfg.get("max_concurrency", 4)),
            max_retries=int(cfg.get("max_retries", 2)),
            timeout_s=float(cfg.get("timeout_s", 120.0)),
            base_url=cfg.get("base_url"),
        )
        _spec(config.metric)
        return config

    def llm(self, api_key: str | None = None, base_url: str | None = None) -> InstructorBaseRagasLLM:
        """:func:`ragas_llm` with these settings (``base_url`` overrides the config's)."""
        return ragas_llm(
            self.model,
            base_url or self.base_url,
            api_key,
            self.max_tokens,
            max_retries=self.max_retries,
            timeout_s=self.timeout_s,
        )


# --------------------------------------------------------------------------- running judgements


@dataclass
class _Tally:
    """Judge calls of one row (one asyncio task); the context variable keeps concurrent rows apart."""

    calls: int = 0
    hits: int = 0
    errors: list[str] = field(default_factory=list)


_TALLY: ContextVar[_Tally | None] = ContextVar("evalkit_judge_tally", default=None)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
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
            blob = cache.get(namespace, key)
            if blob is not None:
                tally.hits += 1
                return response_model.model_validate(decode_json(blob))
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
    spec: _MetricSpec,
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
    spec = _spec(metric_name)
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
