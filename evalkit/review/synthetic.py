"""Synthetic against real questions: every headline metric for each group apart, with intervals (pure).

Synthetic questions (``tags.synthetic`` or ``tags.derived_label`` true: written by ``python -m evalkit.labels
generate``) tend to copy their source passage and flatter retrieval scores; the report shows their share and
these rows, for the config it centres on and for production.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import pandas as pd

from evalkit.review.analysis import as_interval
from evalkit.run.review import SyntheticRow
from evalkit.scoring.compare import Resampling, mean_interval

MEASURES = (("recall", "recall@k"), ("mrr", "MRR"), ("ndcg", "nDCG@k"), ("zero_hit", "zero-hit"))
"""(results column, label) of the table."""
N_RESAMPLES = 1000


def synthetic_ids(questions: Mapping[str, object]) -> set[str]:
    """Ids of the labelled set's synthetic questions (``questions``: id -> question with ``tags``)."""
    return {
        qid
        for qid, q in questions.items()
        if getattr(q, "tags", {}).get("synthetic") is True or getattr(q, "tags", {}).get("derived_label") is True
    }


def _rows(frame: pd.DataFrame, synthetic: set[str], label: str, settings: Resampling) -> list[SyntheticRow]:
    rows = []
    answerable = frame[frame["answerable"].astype(bool)]
    for group, part in (("synthetic", answerable["question_id"].isin(synthetic)), ("real", None)):
        chosen = answerable[part] if part is not None else answerable[~answerable["question_id"].isin(synthetic)]
        intervals = []
        for column, _ in MEASURES:
            if column not in chosen.columns or chosen.empty:
                intervals.append(None)
                continue
            values, questions = chosen[column].astype(float).to_numpy(), chosen["question_id"].to_numpy()
            intervals.append(as_interval(mean_interval(values, settings, questions)))
        rows.append(SyntheticRow(label, group, len(chosen), tuple(intervals)))
    return rows


def synthetic_rows(
    results: pd.DataFrame,
    synthetic: set[str],
    focus_id: str,
    baseline_id: str | None,
    settings: Resampling | None = None,
) -> tuple[SyntheticRow, ...]:
    """Synthetic and real rows of the centre config, then of production; none when the set has no synthetic one.

    The intervals resample ``settings``' clusters (the run's) at :data:`N_RESAMPLES` resamples.
    """
    if not synthetic:
        return ()
    settings = replace(settings or Resampling(), n_resamples=N_RESAMPLES)
    rows = _rows(results[results["config_id"] == focus_id], synthetic, "centre config", settings)
    if baseline_id is not None and baseline_id != focus_id:
        rows += _rows(results[results["config_id"] == baseline_id], synthetic, "production", settings)
    return tuple(rows)
