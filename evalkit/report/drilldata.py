"""The drill-down's data for the page's script: every question of every filter, as one JSON object.

The page renders its questions client-side, a page at a time, from this object
(embedded inert in the HTML by :func:`evalkit.report.html.data_block`), so the
drill-down holds every question of its filters and the file stays one
self-contained page. Document text is not repeated per chunk: each document
contributes the merged stretches the page needs (returned chunks, gold spans
with their context), and chunks and spans are offsets into those stretches.

Shape (short keys keep the file small)::

    {"configs": [{"label", "id"}], "pool_size", "page_size", "views": [{"key", "label", "q": [index, ...]}],
     "doc_ids": [doc_id, ...], "docs": [per doc_ids entry: [[start, text, astral], ...]],
     "questions": [{"id", "q", "a", "u" (answerable), "m" (evidence mode), "t" (tags), "ev": [[doc, s, e]],
                    "st": [[doc, s, e, text]] (stale spans), "r": [per config: null | [outcome, best_score,
                    n_returned, gold_rank_in_pool, [[doc, s, e, score, relevant], ...]]]}]}

    where ``doc`` is an index into ``doc_ids``.

Offsets count code points, as the labelled set does; a stretch holding characters
outside the Basic Multilingual Plane is flagged (``astral``) so the script slices it
by code points rather than UTF-16 units.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from evalkit.report.drilldown import CONTEXT_RADIUS, MAX_CHUNK_CHARS, MAX_SPAN_CHARS, Views, outcome
from evalkit.report.labels import LabelledQuestion

Interval = tuple[int, int]


def _score(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) or math.isinf(number) else round(number, 4)


def _chunk_lists(chunks: pd.DataFrame) -> dict[str, list[list[Any]]]:
    """question_id -> its returned chunks as [doc, start, end, score, relevant], in returned order."""
    if chunks.empty:
        return {}
    ordered = chunks.sort_values(["question_id", "returned_rank"])
    out: dict[str, list[list[Any]]] = {}
    for qid, doc, start, end, score, relevant in zip(
        ordered["question_id"].astype(str),
        ordered["doc_id"].astype(str),
        ordered["start"].to_numpy(dtype=np.int64),
        ordered["end"].to_numpy(dtype=np.int64),
        ordered["score"].to_numpy(dtype=float),
        ordered["relevant"].fillna(False).astype(bool),
        strict=True,
    ):
        out.setdefault(qid, []).append([doc, int(start), int(end), _score(score), int(relevant)])
    return out


def _config_records(rows: pd.DataFrame, chunks: pd.DataFrame) -> dict[str, list[Any]]:
    """question_id -> [outcome, best_score, n_returned, gold_rank_in_pool, chunks] for one config."""
    if rows.empty:
        return {}
    flat = rows.reset_index()
    outcomes = outcome(flat)
    by_question = _chunk_lists(chunks)
    ranks = flat["gold_rank_in_pool"] if "gold_rank_in_pool" in flat.columns else pd.Series(np.nan, index=flat.index)
    out: dict[str, list[Any]] = {}
    for qid, ok, best, n, rank in zip(
        flat["question_id"].astype(str),
        outcomes.to_numpy(dtype=float),
        flat["best_score"].to_numpy(dtype=float),
        flat["n_returned"].to_numpy(dtype=float),
        ranks.to_numpy(dtype=float),
        strict=True,
    ):
        out[qid] = [
            int(ok),
            _score(best),
            int(n),
            None if math.isnan(rank) else int(rank),
            by_question.get(qid, []),
        ]
    return out


def _needed(questions: Sequence[dict[str, Any]]) -> dict[str, list[Interval]]:
    """Per document: the stretches the page shows (chunk text up to its cap, gold spans with context)."""
    need: dict[str, list[Interval]] = {}
    for q in questions:
        for doc, start, end in q["ev"]:
            if end - start > MAX_SPAN_CHARS:  # a long span is shown as its two ends
                half = MAX_SPAN_CHARS // 2
                need.setdefault(doc, []).append((max(0, start - CONTEXT_RADIUS), start + half))
                need[doc].append((end - half, end + CONTEXT_RADIUS))
            else:
                need.setdefault(doc, []).append((max(0, start - CONTEXT_RADIUS), end + CONTEXT_RADIUS))
        for record in q["r"]:
            for doc, start, end, _, _ in record[4] if record else ():
                need.setdefault(doc, []).append((start, min(end, start + MAX_CHUNK_CHARS)))
    return need


def merge(intervals: Sequence[Interval]) -> list[Interval]:
    """Overlapping or touching intervals merged, sorted by start."""
    merged: list[list[int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(s, e) for s, e in merged]


def stretches(documents: Mapping[str, str], need: Mapping[str, Sequence[Interval]]) -> dict[str, list[list[Any]]]:
    """doc_id -> [[start, text, astral], ...]: the merged needed parts of each document that could be read."""
    out: dict[str, list[list[Any]]] = {}
    for doc, intervals in need.items():
        text = documents.get(doc)
        if text is None:
            continue
        parts = []
        for start, end in merge([(max(0, s), min(len(text), e)) for s, e in intervals]):
            if end > start:
                piece = text[start:end]
                parts.append([start, piece, int(any(ord(c) > 0xFFFF for c in piece))])
        out[doc] = parts
    return out


def _question(
    qid: str, question: LabelledQuestion | None, records: Sequence[Mapping[str, list[Any]]], answerable: bool | None
) -> dict[str, Any]:
    if question is not None:
        answerable = question.answerable
    return {
        "id": qid,
        "q": None if question is None else question.question,
        "a": [] if question is None else list(question.answers),
        "u": answerable,
        "m": "" if question is None else question.evidence_mode,
        "t": ""
        if question is None
        else ", ".join(f"{k}={v}" for k, v in sorted(question.tags.items(), key=lambda kv: str(kv[0]))),
        "ev": [] if question is None else [[s.doc_id, s.start, s.end] for s in question.evidence],
        "st": [] if question is None else [[s.doc_id, s.start, s.end, s.text] for s in question.stale_evidence],
        "r": [r.get(qid) for r in records],
    }


def payload(
    views: Views,
    configs: Sequence[tuple[str, str]],
    rows: Mapping[str, pd.DataFrame],
    chunks: Mapping[str, pd.DataFrame],
    questions: Mapping[str, LabelledQuestion],
    documents: Mapping[str, str],
    pool_size: int | None,
    page_size: int,
) -> dict[str, Any]:
    """The drill-down object the page's script renders (every question of the ``all`` view)."""
    order = list(views.views[0].question_ids)
    index = {qid: i for i, qid in enumerate(order)}
    records = [_config_records(rows[cid], chunks[cid]) for _, cid in configs]
    first = rows[configs[0][1]] if configs else pd.DataFrame()
    answerable = first["answerable"].astype(bool).to_dict() if "answerable" in first.columns else {}
    items = [_question(qid, questions.get(qid), records, answerable.get(qid)) for qid in order]
    docs = stretches(documents, _needed(items))
    names = sorted({ev[0] for q in items for ev in q["ev"] + q["st"]} | {c[0] for q in items for r in q["r"] if r
                    for c in r[4]})  # fmt: skip
    _number_documents(items, {name: i for i, name in enumerate(names)})
    return {
        "configs": [{"label": label, "id": cid} for label, cid in configs],
        "pool_size": pool_size,
        "page_size": page_size,
        "views": [{"key": v.key, "label": v.label, "q": [index[q] for q in v.question_ids]} for v in views.views],
        "doc_ids": names,
        "docs": [docs.get(name, []) for name in names],
        "questions": items,
    }


def _number_documents(items: Sequence[dict[str, Any]], number: Mapping[str, int]) -> None:
    """Replace doc ids by their index in ``doc_ids`` (a chunk list names the same few documents many times)."""
    for q in items:
        for span in (*q["ev"], *q["st"]):
            span[0] = number[span[0]]
        for record in q["r"]:
            for chunk in record[4] if record else ():
                chunk[0] = number[chunk[0]]
