"""Answering the check's plan: every request through the shared cache, scored, written as it finishes.

``answer_check/rows.parquet`` (+csv) holds one row per (config or arm, question). It is rewritten after every
``flush_every`` answers; a killed run loses at most those, and the same command re-asks nothing the cache
holds (answers are cached by the full request, so configs that build the same context share one answer).
``answer_s`` is the wall time a row's answer took to generate, carried over from the rows an earlier run of the
same folder wrote, so the check's time counts every run's work, not only the last run's cache reads.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from evalkit.answers.answer_rows import score_columns, sent_columns
from evalkit.answers.check.plan import PlannedRequest
from evalkit.answers.generation.base import Generator
from evalkit.answers.generation.batches import generate_many
from evalkit.answers.generation.cached import request_key
from evalkit.answers.generation.tally import GenerationCounter
from evalkit.cost.budget import SpendGuard
from evalkit.cost.prices import ModelPrice
from evalkit.records import Answer, Question
from evalkit.run.folder import write_table
from evalkit.run.progress import bar as progress_bar
from evalkit.scoring.answers import DEFAULT_REFUSALS

if TYPE_CHECKING:
    from evalkit.cache import Cache

ROW_COLUMNS = (
    "config_id", "arm", "question_id", "lang", "answerable", "doc_id", "n_returned", "n_dropped", "unit_ids",
    "planned_tokens", "doc_tokens", "fits", "sent", "answer", "stop_reason", "cached", "input_tokens",
    "output_tokens", "first_token_s", "in_flight", "answer_s", "cost_usd", "correct", "exact", "contains", "f1",
    "refused", "citations_valid", "quotes_valid", "request_key",
)  # fmt: skip
"""Columns of ``answer_check/rows.parquet``, in order."""


def answer_check_rows(
    planned: Sequence[PlannedRequest],
    questions: Mapping[str, Question],
    documents: Mapping[str, str],
    generator: Generator,
    cache: Cache,
    path: Path,
    *,
    refusals: Sequence[str],
    price: ModelPrice | None,
    flush_every: int = 8,
    workers: int = 1,
    progress: bool = True,
    spend: SpendGuard | None = None,
) -> pd.DataFrame:
    """Answer and score every fitting request (in plan order); returns the rows, also written to ``path``."""
    counter = GenerationCounter()
    every_refusal = tuple(dict.fromkeys([*refusals, *DEFAULT_REFUSALS]))
    rows: dict[int, dict[str, Any]] = {i: _base_row(p, questions[p.question_id]) for i, p in enumerate(planned)}
    earlier = _earlier_seconds(path)
    to_send = [i for i, p in enumerate(planned) if p.fits]
    bar = progress_bar(len(to_send), "answer check", "answers", progress and bool(to_send), per_minute=True)
    try:
        for offset in range(0, len(to_send), flush_every):
            chunk = to_send[offset : offset + flush_every]
            started = time.perf_counter()
            answers = generate_many(
                generator, [planned[i].request for i in chunk], cache, counter, workers=workers,
                spend=spend if price is not None else None, price=price,
            )  # fmt: skip
            # The chunk's wall time, shared by the answers generated in it (workers answer them side by side).
            fresh = sum(1 for answer in answers if not answer.cached)
            share = (time.perf_counter() - started) / fresh if fresh else 0.0
            for i, answer in zip(chunk, answers, strict=True):
                entry = planned[i]
                rows[i] |= _answered(entry, questions[entry.question_id], answer, documents, every_refusal, price)
                key = request_key(generator, entry.request)
                rows[i]["request_key"] = key
                rows[i]["answer_s"] = earlier.get(_row_key(rows[i]), 0.0) if answer.cached else share
            bar.update(len(chunk))
            write_table(path, rows_frame(rows[i] for i in sorted(rows)), csv=True)
    finally:
        bar.close()
    frame = rows_frame(rows[i] for i in sorted(rows))
    write_table(path, frame, csv=True)
    return frame


def _row_key(row: Mapping[str, Any]) -> tuple[str, str, str, str]:
    return (str(row["config_id"]), str(row["arm"]), str(row["question_id"]), str(row["request_key"]))


def _earlier_seconds(path: Path) -> dict[tuple[str, str, str, str], float]:
    """``answer_s`` of the rows an earlier (finished or killed) run of this folder wrote, by row and request.

    Keyed by the row, not the request alone: two configs that share a context share one answer, generated once.
    A rows file without the column (written before it existed) or unreadable carries nothing over.
    """
    if not path.is_file():
        return {}
    try:
        frame = pd.read_parquet(path, columns=["config_id", "arm", "question_id", "request_key", "answer_s"])
    except (OSError, ValueError, KeyError):
        return {}
    return {_row_key(row): float(row["answer_s"]) for row in frame.to_dict("records") if row["answer_s"] > 0}


def _base_row(entry: PlannedRequest, question: Question) -> dict[str, Any]:
    return {
        "config_id": entry.config_id,
        "arm": entry.arm,
        "question_id": entry.question_id,
        "lang": question.lang,
        "answerable": question.answerable,
        "doc_id": question.evidence[0].doc_id if question.evidence else "",
        "n_returned": entry.n_returned,
        "n_dropped": entry.n_dropped,
        "unit_ids": "|".join(entry.unit_ids),
        "planned_tokens": entry.planned_tokens,
        "doc_tokens": entry.doc_tokens,
        "fits": entry.fits,
        "sent": False,
        "request_key": "",
    }


def _answered(
    entry: PlannedRequest,
    question: Question,
    answer: Answer,
    documents: Mapping[str, str],
    refusals: Sequence[str],
    price: ModelPrice | None,
) -> dict[str, Any]:
    """A sent request's answer, scored (an overflow or error answer is recorded, not scored)."""
    return sent_columns(answer, price) | score_columns(question, answer, refusals, set(entry.doc_ids), documents)


_BOOL_COLUMNS = ("correct", "exact", "contains", "refused", "citations_valid", "quotes_valid")


def rows_frame(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Rows as a table with :data:`ROW_COLUMNS`; score columns are nullable booleans (NA: not scored)."""
    frame = pd.DataFrame(list(rows), columns=list(ROW_COLUMNS))
    for column in _BOOL_COLUMNS:
        frame[column] = frame[column].astype("boolean")
    for column in ("first_token_s", "in_flight", "answer_s", "cost_usd", "f1"):
        frame[column] = frame[column].astype(float)
    return frame
