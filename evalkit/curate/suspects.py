"""``queue --suspect``: a run's suspect-gold (and never-discriminating) questions, queued for the annotation page.

The questions are review.json's item analysis (:mod:`evalkit.scoring.items`, computed once when the report is
written), so the queue holds exactly what the report lists. Each item carries the question's current gold as
``proposed`` (shown for the annotator to confirm or replace, never saved without them) and, as ``returned``,
the chunks the report's focus config returned for it (where a config that does well on the set looked). A
question already labelled keeps its label until the annotator changes it (the annotation store's ``base``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.curate.queue import QueueItem
from evalkit.labels.load import tolerant_load
from evalkit.records import Span
from evalkit.run.folder import load_pool, load_run, returned_chunks
from evalkit.run.labelset_path import find_labelset
from evalkit.run.review import ItemRow, read_review

__all__ = ["ItemProposal", "propose_items"]

MAX_RETURNED = 5


@dataclass(frozen=True)
class ItemProposal:
    """The questions of a run's item analysis, as queue items."""

    run_id: str
    measure: str
    items: tuple[QueueItem, ...]
    listed: int
    """Questions the chosen lists hold (some may be missing from the labelled set)."""
    missing: tuple[str, ...]
    """Listed question ids the labelled set no longer holds."""
    labelset: Path


def _returned(run_dir: Path, focus: dict[str, Any], ids: list[str]) -> dict[str, tuple[Span, ...]]:
    pool = load_pool(run_dir, str(focus["chunking"]), ids)
    if pool.empty:
        return {}
    kept = returned_chunks(pool, int(focus["top_k"]), float(focus["threshold"]))
    out: dict[str, list[Span]] = {}
    for row in kept.itertuples(index=False):
        out.setdefault(str(row.question_id), []).append(Span(str(row.doc_id), int(row.start), int(row.end)))
    return {qid: tuple(spans[:MAX_RETURNED]) for qid, spans in out.items()}


def propose_items(
    run_dir: Path, labelset: Path | None = None, suspect: bool = True, never: bool = False
) -> ItemProposal:
    """The listed questions of ``run_dir``'s item analysis, tagged for the queue.

    Raises:
        ValueError: no current review.json, no item analysis in it, or no labelled set (one line each).
    """
    run = load_run(run_dir)
    review = read_review(run.root)
    if review is None or review.items is None:
        raise ValueError(
            f"{run.root}: no current review.json with an item analysis; python -m evalkit.report {run.root} writes it"
        )
    analysis = review.items
    if analysis.skipped:
        raise ValueError(f"{run.root}: no item analysis ({analysis.skipped})")
    rows: list[ItemRow] = [*(analysis.suspect if suspect else ()), *(analysis.never_discriminating if never else ())]
    root = find_labelset(run.manifest, run.root, labelset)
    if root is None:
        raise ValueError(f"{run.root}: the run's labelled set was not found; pass --labelset")
    questions = {q.id: q for q in tolerant_load(root).questions}
    run_id = str(run.manifest.get("run_id") or run.root.name)
    focus = dict(run.config_row(review.focus_id))
    returned = _returned(run.root, focus, [r.question_id for r in rows])
    items: dict[str, QueueItem] = {}
    missing: list[str] = []
    for row in rows:
        question = questions.get(row.question_id)
        if question is None:
            missing.append(row.question_id)
            continue
        if row.question_id in items:  # on both lists: the suspect entry (first) says more
            continue
        tags = dict(question.tags) | {
            "source": "run",
            "suspect_gold": row.reason in ("negative", "upper_miss"),
            "item_reason": row.reason,
            **({"item_doubt": row.doubt} if row.doubt else {}),  # gold elsewhere (wrong_span/_document) or hard
            "item_measure": analysis.measure,
            "item_p_upper": round(row.p_upper, 4),
            "item_p_lower": round(row.p_lower, 4),
            "flagged_in": run_id,
        }
        items[row.question_id] = QueueItem(
            question.id, question.question, tags, returned=returned.get(question.id, ()), proposed=question.evidence
        )
    listed = len(dict.fromkeys(r.question_id for r in rows))
    return ItemProposal(run_id, analysis.measure, tuple(items.values()), listed, tuple(missing), root)
