"""Running the plan: answers through the shared cache, scored and written as they finish."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from evalkit.answers.answer_rows import score_columns, sent_columns
from evalkit.answers.generation.base import Generator
from evalkit.answers.generation.batches import generate_many
from evalkit.answers.generation.cached import request_key
from evalkit.answers.generation.loglik import AnswerLoglik, answer_logliks
from evalkit.answers.generation.request import GenerationRequest
from evalkit.answers.generation.tally import GenerationCounter
from evalkit.answers.position.notes import planned_seconds_of
from evalkit.cost.budget import SpendGuard
from evalkit.records import Answer, Question
from evalkit.run.files import BATCHES_JSON
from evalkit.run.folder import write_json, write_table
from evalkit.run.progress import bar as progress_bar
from evalkit.scoring.answers import DEFAULT_REFUSALS
from evalkit.scoring.clusters import QUESTION, cluster_map, question_clusters

if TYPE_CHECKING:
    from evalkit.cache import Cache

from evalkit.answers.position.plan import PlannedAnswer, PositionPlan, request_for
from evalkit.answers.position.settings import EFFECTS_JSON, SUMMARY, SUMMARY_BLOCKS
from evalkit.scoring.position import summarise_position
from evalkit.scoring.position_effects import position_effects

ROW_COLUMNS = (
    "question_id", "lang", "answerable", "arm", "placement", "repeat", "seed", "gold_bucket", "gold_offset",
    "gold_block", "gold_block_bucket", "context_chars", "n_offered", "n_items", "unit_ids", "gold_unit_id", "n_dropped",
    "prompt_tokens",
    "prompt_tokens_estimated", "tokens_needed", "sent",
    "answer", "correct", "exact", "contains", "f1", "refused", "citations_valid", "quotes_valid", "stop_reason",
    "truncated", "overflow", "cached", "input_tokens", "output_tokens", "cache_creation_input_tokens",
    "cache_read_input_tokens", "usage_estimated", "cost_usd", "model", "backend", "chunking", "request_key",
    "row_key", "gold_loglik", "gold_loglik_mean", "gold_loglik_tokens",
)  # fmt: skip
"""Columns of ``position/rows.parquet``, in order. ``sent``: False for a context that cannot fit (``stop_reason``
``does not fit`` / ``prompt too long``); ``overflow``: the prompt did not fit, unsent or refused by the model's window
(``stop_reason`` ``overflow``); ``correct`` and the other scores are NA when no answer was scored; ``cost_usd``: what
the answer cost when generated, NaN when the model is unpriced; ``request_key``: the response cache key.
``gold_bucket`` is by the gold block's character midpoint, ``gold_block_bucket`` by its index ``gold_block`` among the
``n_items`` blocks (``only``: a single block); under ``gold_at:*`` they record where the gold actually ended up.
``tokens_needed``: the prompt's estimated tokens (what a ``does not fit`` context would have needed).
``unit_ids``: the pool units (or whole documents) in the context, in placed order; ``gold_unit_id``: the gold
among them ('' when none): with the pool they let anyone check that the placement was clean. ``gold_loglik``: with
``position.loglik``, the natural-log likelihood of the question's first gold answer under the row's prompt (NaN: not
scored: unanswerable, unsent, or a generator without log-probabilities); ``gold_loglik_mean`` per answer token."""

_BOOL_COLUMNS = ("correct", "exact", "contains", "refused", "citations_valid", "quotes_valid")


def _base_row(plan: PositionPlan, entry: PlannedAnswer) -> dict[str, Any]:
    return {
        "question_id": entry.question_id,
        "lang": entry.lang,
        "answerable": entry.answerable,
        "arm": entry.arm,
        "placement": entry.placement,
        "repeat": entry.repeat,
        "seed": entry.seed,
        "gold_bucket": entry.gold_bucket,
        "gold_offset": entry.gold_offset,
        "gold_block": entry.gold_block,
        "gold_block_bucket": entry.gold_block_bucket,
        "tokens_needed": entry.tokens_needed,
        "context_chars": entry.context_chars,
        "n_offered": entry.n_offered,
        "n_items": len(entry.items),
        "unit_ids": [item.unit_id for item in entry.items],
        "gold_unit_id": next((item.unit_id for item in entry.items if item.is_gold), ""),
        "n_dropped": entry.n_dropped,
        "prompt_tokens": entry.prompt_tokens,
        "prompt_tokens_estimated": entry.tokens_estimated,
        "chunking": plan.chunking,
        "row_key": entry.row_key,
    }


def _unsent_row(plan: PositionPlan, entry: PlannedAnswer) -> dict[str, Any]:
    """A context that cannot fit: recorded, never sent, excluded from accuracy."""
    return _base_row(plan, entry) | {
        "sent": False,
        "answer": "",
        "stop_reason": entry.reason,
        "truncated": False,
        "overflow": True,
        "cached": False,
        "model": plan.request_spec.model,
        "backend": plan.request_spec.backend,
        "request_key": "",
    }


def _answer_row(
    plan: PositionPlan, entry: PlannedAnswer, question: Question, answer: Answer, key: str, refusals: Sequence[str]
) -> dict[str, Any]:
    """A sent request's answer, scored; an overflow or error answer is recorded but not scored."""
    provided = {item.doc_id for item in entry.items}
    return (
        _base_row(plan, entry)
        | sent_columns(answer, plan.price)
        | {"model": answer.model or plan.request_spec.model, "request_key": key}
        | score_columns(question, answer, refusals, provided, plan.doc_texts)
    )


def rows_frame(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Rows as a table with :data:`ROW_COLUMNS`; score columns are nullable booleans (NA: not scored)."""
    frame = pd.DataFrame(list(rows), columns=list(ROW_COLUMNS))
    for column in _BOOL_COLUMNS:
        frame[column] = frame[column].astype("boolean")
    for column in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
        frame[column] = frame[column].fillna(0).astype("int64")
    frame["usage_estimated"] = frame["usage_estimated"].astype("boolean").fillna(False).astype(bool)
    frame["f1"] = frame["f1"].astype("float64")
    for column in ("gold_loglik", "gold_loglik_mean"):
        frame[column] = frame[column].astype("float64")
    frame["gold_loglik_tokens"] = frame["gold_loglik_tokens"].fillna(0).astype("int64")
    frame["cost_usd"] = frame["cost_usd"].astype("float64")
    frame["gold_offset"] = frame["gold_offset"].astype("Int64")
    frame["gold_block"] = frame["gold_block"].astype("Int64")
    return frame


def _refusals(plan: PositionPlan) -> tuple[str, ...]:
    spec = plan.request_spec
    configured = tuple(str(r) for r in (spec.generator_cfg.get("refusal") or {}).values())
    return tuple(dict.fromkeys((*configured, *DEFAULT_REFUSALS, *plan.settings.refusals)))


def split_answered(
    plan: PositionPlan, generator: Generator, written: Mapping[str, Mapping[str, Any]]
) -> tuple[dict[str, dict[str, Any]], list[tuple[PlannedAnswer, GenerationRequest, str]]]:
    """The rows already answered (same request key) or never sendable, and the (entry, request, key) still to send."""
    rows: dict[str, dict[str, Any]] = {}
    pending: list[tuple[PlannedAnswer, GenerationRequest, str]] = []
    for entry in plan.entries:
        if not entry.fits:
            rows[entry.row_key] = _unsent_row(plan, entry)
            continue
        request = request_for(plan, entry)
        key = request_key(generator, request)
        earlier = written.get(entry.row_key)
        if earlier is not None and earlier.get("request_key") == key:
            rows[entry.row_key] = dict(earlier)
        else:
            pending.append((entry, request, key))
    return rows, pending


def still_to_send(plan: PositionPlan, generator: Generator, out_dir: Path) -> tuple[PlannedAnswer, ...]:
    """The planned answers this folder has not answered yet (what a run would send; the dry run times them)."""
    _, pending = split_answered(plan, generator, _written_rows(out_dir / "rows.parquet"))
    return tuple(entry for entry, _, _ in pending)


def _written_rows(path: Path) -> dict[str, dict[str, Any]]:
    """Rows already on disk by row_key (an earlier, interrupted or finished run)."""
    if not path.exists():
        return {}
    frame = pd.read_parquet(path)
    if "row_key" not in frame.columns:
        return {}
    records = frame.astype(object).where(frame.notna(), None).to_dict("records")
    return {str(r["row_key"]): r for r in records}


def run_position(
    plan: PositionPlan,
    generator: Generator,
    cache: Cache,
    out_dir: Path,
    progress: bool = True,
    *,
    counter: GenerationCounter | None = None,
    spend: SpendGuard | None = None,
) -> pd.DataFrame:
    """Generate, score and write every planned answer; returns the summary (also in ``out_dir``).

    Writes ``rows.parquet`` (+csv) after every ``flush_every`` answers and at
    the end, then ``summary.parquet`` (+csv). A re-run keeps rows already
    written for the same request and serves the rest from the response cache,
    so only what is missing is sent. With the generator's batches enabled,
    every missing request goes into Message Batches at once. ``spend`` is
    charged before each chunk of uncached requests is sent (planned prompt
    tokens plus the full ``max_tokens``: an upper bound) and raises
    :class:`evalkit.cost.budget.BudgetExceeded`, sending nothing of the chunk that would cross the cap.
    ``progress``: a bar over the pending answers in answers per minute (stderr, on a terminal only).
    """
    started = time.perf_counter()
    counter = counter or GenerationCounter()
    rows_path = out_dir / "rows.parquet"
    written = _written_rows(rows_path)
    refusals = _refusals(plan)
    rows, pending = split_answered(plan, generator, written)

    def flush() -> None:
        ordered = [rows[e.row_key] for e in plan.entries if e.row_key in rows]
        write_table(rows_path, rows_frame(ordered), csv=True)

    use_batch = generator.batch_enabled and generator.supports_batch
    step = (len(pending) or 1) if use_batch else plan.settings.flush_every
    bar = progress_bar(len(pending), "position answers", "answers", progress and bool(pending), per_minute=True)
    try:
        for offset in range(0, len(pending), step):
            chunk = pending[offset : offset + step]

            # The budget is charged inside generate_many, before anything is sent (a whole batch at once);
            # batch ids go to the run folder, so a killed run resumes polling instead of resubmitting.
            def send(part: Sequence[tuple[PlannedAnswer, GenerationRequest, str]]) -> list[Answer]:
                return generate_many(
                    generator,
                    [request for _, request, _ in part],
                    cache,
                    counter,
                    batch=use_batch,
                    workers=plan.settings.workers,
                    journal=out_dir / BATCHES_JSON,
                    spend=spend if plan.price is not None else None,
                    price=plan.price,
                )

            answers, scored = _answer_and_score(plan, generator, cache, chunk, send, interleave=not use_batch)
            for (entry, _, key), answer in zip(chunk, answers, strict=True):
                row = _answer_row(plan, entry, plan.question(entry.question_id), answer, key, refusals)
                rows[entry.row_key] = row | _loglik_columns(scored.get(entry.row_key))
            bar.update(len(chunk))
            flush()
    finally:
        bar.close()
        flush()
    frame = pd.read_parquet(rows_path)
    settings = plan.settings
    summary = write_summaries(frame, out_dir, settings.n_resamples, settings.seed, plan.cluster_by, plan.questions)
    stats = _run_stats(plan, counter, len(pending), time.perf_counter() - started)
    sent = [entry for entry, _, _ in pending]
    stats["planned_seconds_pending"] = round(planned_seconds_of(plan, sent), 1)
    write_json(out_dir / "run_stats.json", stats)
    return summary


def _answer_and_score(
    plan: PositionPlan,
    generator: Generator,
    cache: Cache,
    chunk: Sequence[tuple[PlannedAnswer, GenerationRequest, str]],
    send: Callable[[Sequence[tuple[PlannedAnswer, GenerationRequest, str]]], list[Answer]],
    *,
    interleave: bool,
) -> tuple[list[Answer], dict[str, AnswerLoglik | None]]:
    """The chunk's answers and gold log-likelihoods. A local scorer scores each answer right after generating
    it, while the prompt it just read is still in the model's cache (a forced answer then costs 0.1-0.5 s, not
    a second read of the prompt); the values are the same in any order, so this changes only the time."""
    if not (interleave and plan.settings.loglik and generator.supports_loglik):
        return send(chunk), _gold_logliks(plan, generator, cache, chunk)
    answers: list[Answer] = []
    scored: dict[str, AnswerLoglik | None] = {}
    for item in chunk:
        answers += send([item])
        scored |= _gold_logliks(plan, generator, cache, [item])
    return answers, scored


def _gold_logliks(
    plan: PositionPlan,
    generator: Generator,
    cache: Cache,
    chunk: Sequence[tuple[PlannedAnswer, GenerationRequest, str]],
) -> dict[str, AnswerLoglik | None]:
    """With ``position.loglik``: the first gold answer's log-likelihood under each answerable row's prompt."""
    if not plan.settings.loglik:
        return {}
    wanted = [(entry, request) for entry, request, _ in chunk if plan.question(entry.question_id).answers]
    pairs = [(request, plan.question(entry.question_id).answers[0]) for entry, request in wanted]
    values = answer_logliks(generator, pairs, cache)
    return {entry.row_key: value for (entry, _), value in zip(wanted, values, strict=True)}


def _loglik_columns(value: AnswerLoglik | None) -> dict[str, Any]:
    """``gold_loglik`` (total, natural log), its per-token mean and token count; NaN / 0 when not scored."""
    if value is None:
        return {"gold_loglik": math.nan, "gold_loglik_mean": math.nan, "gold_loglik_tokens": 0}
    return {"gold_loglik": value.total, "gold_loglik_mean": value.mean, "gold_loglik_tokens": value.n_tokens}


def write_summaries(
    rows: pd.DataFrame,
    out_dir: Path,
    n_resamples: int,
    seed: int,
    cluster_by: str = QUESTION,
    questions: Sequence[Question] = (),
) -> pd.DataFrame:
    """summary.parquet (by character bucket), summary_blocks.parquet (by block bucket) and effects.json.

    ``cluster_by`` (the sweep's ``stats.cluster_by``) over ``questions``: every interval resamples those clusters;
    effects.json names the unit (``cluster_by``).
    """
    clusters = cluster_map(question_clusters(questions, cluster_by))
    summary = summarise_position(rows, n_resamples=n_resamples, seed=seed, bucket_by="chars", clusters=clusters)
    write_table(out_dir / SUMMARY, summary, csv=True)
    by_block = summarise_position(rows, n_resamples=n_resamples, seed=seed, bucket_by="blocks", clusters=clusters)
    write_table(out_dir / SUMMARY_BLOCKS, by_block, csv=True)
    effects = position_effects(rows, n_resamples, seed, clusters)
    write_json(out_dir / EFFECTS_JSON, effects | {"cluster_by": QUESTION if clusters is None else cluster_by})
    return summary


def _run_stats(plan: PositionPlan, counter: GenerationCounter, pending: int, seconds: float) -> dict[str, Any]:
    total = counter.total()
    return {
        "seconds": round(seconds, 3),
        "rows": len(plan.entries),
        "answers_pending_at_start": pending,
        "requests_sent": total.requests,
        "cache_hits": sum(counter.cache_hits.values()),
        "overflows": sum(counter.overflows.values()),
        "errors": sum(counter.errors.values()),
        "input_tokens": total.input_tokens,
        "output_tokens": total.output_tokens,
        "token_count_requests": sum(counter.token_counts.values()),
    }
