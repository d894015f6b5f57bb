"""The item analysis of review.json: :mod:`evalkit.scoring.items` on the objective's primary measure, as records.

Computed once with the rest of review.json; the report's Items section renders it, the sweep's console line
counts it and ``python -m evalkit.labels queue --suspect`` sends its questions to the annotation queue.
"""

from __future__ import annotations

import pandas as pd

from evalkit.run.review import ItemAnalysis
from evalkit.scoring.items import item_analysis
from evalkit.scoring.registry import measure

__all__ = ["item_line", "items_of"]


def items_of(results: pd.DataFrame, primary: str) -> ItemAnalysis:
    """Item analysis of every question across every config of ``results`` on measure ``primary``."""
    return item_analysis(results, measure(primary))


def item_line(items: ItemAnalysis | None) -> str | None:
    """The console's one line about the item analysis (None when there is none)."""
    if items is None:
        return None
    if items.skipped:
        return f"items: no item analysis ({items.skipped})"
    kinds = {k: sum(1 for s in items.never_discriminating if s.reason == k) for k in ("always", "never")}
    return (
        f"items: {len(items.suspect)} suspect gold, {len(items.never_discriminating)} never discriminating "
        f"({kinds['always']} right under every config, {kinds['never']} wrong under every config) of "
        f"{items.n_questions} questions across {items.n_configs} configs on {items.measure}"
    )
