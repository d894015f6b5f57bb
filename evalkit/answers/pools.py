"""A chunking's pool as context items, and a question's gold documents: what every answering experiment reads.

The answer check and the position experiment both build contexts from the sweep's pools
(``pools/<chunking>.parquet``); this is their one reader.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from evalkit.answers.context import ContextItem
from evalkit.records import Document, Question


def pool_items(pool: pd.DataFrame, documents: Mapping[str, Document]) -> dict[str, tuple[ContextItem, ...]]:
    """Each question's ranked pool (``pools/<chunking>.parquet``) as context items, best rank first.

    Unit text is ``document.text[start:end]``; ``is_gold`` is the pool's
    ``relevant`` column; the title is the document's.
    """
    missing = sorted(set(pool["doc_id"]) - set(documents))
    if missing:
        raise ValueError(f"the pool names documents not in the labelled set: {missing[:5]}")
    items: dict[str, list[ContextItem]] = {}
    for row in pool.sort_values(["question_id", "rank"], kind="stable").itertuples(index=False):
        doc = documents[str(row.doc_id)]
        start, end = int(row.start), int(row.end)
        items.setdefault(str(row.question_id), []).append(
            ContextItem(
                unit_id=str(row.unit_id),
                doc_id=doc.doc_id,
                start=start,
                end=end,
                text=doc.text[start:end],
                score=float(row.score),
                is_gold=bool(row.relevant),
                title=doc.title,
            )
        )
    return {qid: tuple(ranked) for qid, ranked in items.items()}


def gold_doc_ids(question: Question) -> tuple[str, ...]:
    """Documents holding the question's evidence, in evidence order."""
    return tuple(dict.fromkeys(span.doc_id for span in question.evidence))
