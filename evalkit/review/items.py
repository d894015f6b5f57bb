"""The item analysis of review.json: :mod:`evalkit.scoring.items` on the objective's primary measure, as records.

Each suspect question also gets the second signal of :mod:`evalkit.scoring.gold_doubt` (gold elsewhere, or a hard
question), read from what the run already has: the labelled set's documents and the documents the configs'
pools returned at the sweep's largest top_k. Computed once with the rest of review.json; the report's Items
section renders it, the sweep's console line counts it and ``python -m evalkit.labels queue --suspect`` sends its
questions to the annotation queue.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path

import pandas as pd

from evalkit.report.labels import LabelledSet
from evalkit.run.folder import load_pool
from evalkit.run.review import ItemAnalysis, ItemRow
from evalkit.scoring.gold_doubt import doubt_gold, lexicon
from evalkit.scoring.items import item_analysis
from evalkit.scoring.registry import measure

__all__ = ["item_line", "items_of"]


def retrieved_documents(
    run_dir: Path, chunkings: Sequence[str], question_ids: Sequence[str], top_k: int
) -> dict[str, list[str]]:
    """Per question, the documents any chunking's pool ranks within the first ``top_k`` (best rank first)."""
    out: dict[str, list[str]] = {qid: [] for qid in question_ids}
    for chunking in chunkings:
        pool = load_pool(run_dir, chunking, list(question_ids))
        if pool.empty:
            continue
        kept = pool.sort_values(["question_id", "rank"], kind="stable").groupby("question_id", sort=False).head(top_k)
        for qid, doc_id in zip(kept["question_id"].astype(str), kept["doc_id"].astype(str), strict=True):
            if doc_id not in out.setdefault(qid, []):
                out[qid].append(doc_id)
    return out


def stuffed_answers(rows: pd.DataFrame | None) -> dict[str, str]:
    """Per question, the model's answer with the gold's whole document stuffed (position arm ``stuff``), when every
    such answer that was sent and scored is wrong and none is a refusal: an answer other than the gold."""
    needed = {"question_id", "arm", "sent", "answer", "correct", "refused"}
    if rows is None or rows.empty or not needed <= set(rows.columns):
        return {}
    stuffed = rows[(rows["arm"] == "stuff") & rows["sent"].fillna(False).astype(bool) & rows["correct"].notna()]
    out: dict[str, str] = {}
    for qid, group in stuffed.groupby("question_id", sort=True):
        correct, refused = group["correct"].astype(bool), group["refused"].fillna(False).astype(bool)
        if not correct.any() and not refused.any():
            out[str(qid)] = str(group["answer"].iloc[0])
    return out


def with_doubts(
    rows: tuple[ItemRow, ...],
    labelset: LabelledSet,
    retrieved: Mapping[str, Sequence[str]],
    answered: Mapping[str, str] | None = None,
) -> tuple[ItemRow, ...]:
    """The suspect rows with their second signal (rows whose question or gold documents are unread stay as they are),
    and ``answered``'s answer from the stuffed gold document where there is one."""
    answered = answered or {}
    rows = tuple(replace(r, stuffed_answer=answered.get(r.question_id, "")) for r in rows)
    if not rows or not labelset.texts:
        return rows
    lex = lexicon(labelset.texts.values())
    out = []
    for row in rows:
        question = labelset.questions.get(row.question_id)
        gold = [(s.doc_id, s.start, s.end) for s in question.evidence] if question is not None else []
        if not gold or not any(d in labelset.texts for d, _, _ in gold):
            out.append(row)
            continue
        found = doubt_gold(question.question, gold, labelset.texts, retrieved.get(row.question_id, []), lex)
        out.append(replace(row, doubt=found.kind, **{k: v for k, v in asdict(found).items() if k != "kind"}))
    return tuple(out)


def items_of(
    results: pd.DataFrame,
    primary: str,
    run_dir: Path | None = None,
    labelset: LabelledSet | None = None,
    position_rows: pd.DataFrame | None = None,
) -> ItemAnalysis:
    """Item analysis of every question across every config of ``results`` on measure ``primary``.

    With the run folder and its labelled set, suspect gold carries the second signal (gold elsewhere or hard); with
    the position experiment's rows, the model's other answer from the stuffed gold document.
    """
    found = item_analysis(results, measure(primary))
    suspect = tuple(found.suspect)
    if run_dir is not None and labelset is not None and suspect:
        top_k = int(results["top_k"].max()) if "top_k" in results and len(results) else 1
        chunkings = sorted(str(c) for c in results["chunking"].unique()) if "chunking" in results else []
        retrieved = retrieved_documents(run_dir, chunkings, [s.question_id for s in suspect], top_k)
        suspect = with_doubts(suspect, labelset, retrieved, stuffed_answers(position_rows))
        # Gold elsewhere first (the likely wrong labels), then the hard questions; each in the statistics' order.
        suspect = tuple(sorted(suspect, key=lambda s: s.doubt not in ("wrong_span", "wrong_document")))
    return replace(found, suspect=suspect)


def item_line(items: ItemAnalysis | None) -> str | None:
    """The console's one line about the item analysis (None when there is none)."""
    if items is None:
        return None
    if items.skipped:
        return f"items: no item analysis ({items.skipped})"
    kinds = {k: sum(1 for s in items.never_discriminating if s.reason == k) for k in ("always", "never")}
    elsewhere = sum(1 for s in items.suspect if s.doubt in ("wrong_span", "wrong_document"))
    hard = sum(1 for s in items.suspect if s.doubt == "hard")
    split = f" ({elsewhere} gold elsewhere, {hard} hard: no config retrieves it)" if elsewhere + hard else ""
    return (
        f"items: {len(items.suspect)} suspect gold{split}, {len(items.never_discriminating)} never discriminating "
        f"({kinds['always']} right under every config, {kinds['never']} wrong under every config) of "
        f"{items.n_questions} questions across {items.n_configs} configs on {items.measure}"
    )
