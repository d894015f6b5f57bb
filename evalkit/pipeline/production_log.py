"""``production_log=PATH``: production's logged retrievals scored against the gold, by the external retriever's code.

The log (a JSONL/CSV query log or an OTLP JSON trace export, read as ``labels sample`` reads it) is matched to
the labelled questions by folded question text (:func:`evalkit.curate.sampling.fold_key`); a question asked
several times is scored on its latest logged retrieval (production as it is now). Each logged hit becomes the
external retriever's reply (:func:`evalkit.curate.loghits.external_records`) and goes through the very steps
``retriever=external`` takes: anchored to spans (:func:`~evalkit.retrieval.external.hits.anchor_hits`), made a
chunking and pool (:func:`~evalkit.retrieval.external.pool.chunks_and_pool`), scored by the unit scorer
(:func:`evalkit.pipeline.work.score_unit`) at production's ``top_k`` with no threshold (production already
applied its own). So the numbers equal ``retriever=external`` returning the same hits. Unlike that retriever's
pool, the logged hits are not filtered by role or date: leakage counts what production actually showed.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from evalkit.curate.loghits import external_records
from evalkit.curate.querylog import LogEntry, LogReading, read_query_log
from evalkit.curate.sampling import fold_key
from evalkit.curate.traces import is_otlp
from evalkit.labels.read import LabelSet
from evalkit.pipeline.plan import SweepPlan
from evalkit.pipeline.units import units_of
from evalkit.pipeline.work import score_unit
from evalkit.records import EXTERNAL_CHUNKING, ChunkingSpec, Question
from evalkit.retrieval.external.hits import anchor_hits
from evalkit.retrieval.external.pool import chunks_and_pool
from evalkit.run import files
from evalkit.run.folder import write_json, write_table
from evalkit.settings import ConfigError

__all__ = ["read_production_log", "score_logged", "score_production_log"]

NO_THRESHOLD = -sys.float_info.max
"""The threshold production's logged lists are sliced at: none (the lowest finite number)."""
SHOWN = 5
"""Skipped log rows printed (their count is always given)."""


def read_production_log(path: Path) -> LogReading:
    """The log, or a one-line :class:`ConfigError` naming it (checked before the sweep runs)."""
    try:
        return read_query_log(path)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"production_log: {str(exc).splitlines()[0]}") from None


def latest_by_question(entries: Sequence[LogEntry]) -> dict[str, LogEntry]:
    """Folded question text -> its latest logged entry (ties: the later line)."""
    latest: dict[str, LogEntry] = {}
    for entry in sorted(entries, key=lambda e: (e.timestamp, e.line)):
        latest[fold_key(entry.question)] = entry
    return latest


def score_logged(
    plan: SweepPlan, labelset: LabelSet, questions: Sequence[Question], reading: LogReading, family: str
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Result rows of production's logged top-k for the labelled questions in the log, and what was placed."""
    top_k = plan.baseline.top_k or plan.top_ks[0]
    latest = latest_by_question(reading.entries)
    matched = [(q, latest[fold_key(q.question)]) for q in questions if fold_key(q.question) in latest]
    texts = {d.doc_id: d.text for d in labelset.documents}
    replies, missing = [], 0
    for _, entry in matched:
        records, absent = external_records(entry.hits, texts)
        replies.append(records)
        missing += absent
    asked = [q for q, _ in matched]
    info: dict[str, Any] = {
        "log": str(reading.path),
        "format": "otlp" if is_otlp(reading.path) else "query log",
        "rows": reading.rows,
        "skipped": len(reading.problems),
        "entries": len(reading.entries),
        "questions": len(questions),
        "matched": len(asked),
        "matched_answerable": sum(1 for q in asked if q.evidence_mode != "none"),
        "top_k": top_k,
        "not_in_set": missing,
    }
    if not asked:
        return pd.DataFrame(), info | {"hits": 0, "anchored_text": 0, "unanchored": 0, "no_hits": 0}
    anchored = anchor_hits(asked, replies, labelset.documents, f"production_log {reading.path}")
    chunks, pool = chunks_and_pool(anchored, labelset.documents, top_k)
    units, _ = units_of(chunks, labelset)
    # Production applied its own threshold: every logged score passes this one (a finite floor: the slicer reads a
    # pool's padding as -inf, which must stay out).
    as_logged = replace(plan, top_ks=(top_k,), thresholds=(NO_THRESHOLD,))
    spec = ChunkingSpec(EXTERNAL_CHUNKING, 0, 0)
    blocks, _, _ = score_unit(as_logged, labelset, asked, family, spec, chunks, units, pool)
    rows = pd.concat(list(blocks), ignore_index=True)
    rows = rows.assign(config_id=files.LOGGED_CONFIG, chunking="logged", retriever="logged")
    info |= {
        "hits": int(sum(len(h) for h in anchored.hits)),
        "anchored_text": anchored.anchored_text,
        "unanchored": anchored.n_unanchored,
        "no_hits": int(sum(1 for h in anchored.hits if not h)),
    }
    return rows, info


def score_production_log(
    plan: SweepPlan, labelset: LabelSet, questions: Sequence[Question], family: str, run_dir: Path
) -> dict[str, Any] | None:
    """Score the plan's ``production_log`` into the run folder and say so on the console (None: no log asked)."""
    if plan.options.production_log is None:
        return None
    reading = read_production_log(plan.options.production_log)
    for line in reading.problems[:SHOWN]:
        print(line, file=sys.stderr)
    rows, info = score_logged(plan, labelset, questions, reading, family)
    (run_dir / files.PRODUCTION_LOG_DIR).mkdir(parents=True, exist_ok=True)
    write_table(run_dir / files.PRODUCTION_LOG_ROWS, rows)
    write_json(run_dir / files.PRODUCTION_LOG_JSON, info)
    print(f"evalkit: {logged_line(info, rows)}", file=sys.stderr)
    return info


def logged_line(info: dict[str, Any], rows: pd.DataFrame) -> str:
    """One console line: what the log held and what production's logged top-k scored."""
    line = (
        f"production log {info['log']} ({info['format']}): {info['entries']} logged retrievals "
        f"({info['skipped']} rows skipped); {info['matched']} of {info['questions']} labelled questions found in it"
    )
    answerable = rows[rows["answerable"].astype(bool)] if not rows.empty else rows
    if not answerable.empty:
        line += (
            f"; production's logged top-{info['top_k']} on {len(answerable)} answerable: "
            f"recall {answerable['recall'].mean():.1%}, zero-hit {answerable['zero_hit'].astype(float).mean():.1%}"
        )
    if info["not_in_set"] or info["unanchored"]:
        line += f"; {info['not_in_set'] + info['unanchored']} logged hits are not in the labelled set (not scored)"
    return line
