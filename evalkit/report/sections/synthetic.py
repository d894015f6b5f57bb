"""Synthetic against real questions: the share of generated questions, and metrics for each group apart.

Synthetic questions (``tags.synthetic`` true, or ``tags.derived_label`` true:
written by ``python -m evalkit.labels generate``) tend to copy their source
passage and flatter retrieval scores, so a set that holds them is reported
with their share and with every headline metric split: synthetic vs real
(from logs or written by people), for the config the report centres on and
for production. Renders nothing when the set holds no synthetic question.
"""

from __future__ import annotations

import pandas as pd

from evalkit.report import fmt
from evalkit.report.html import Markup, section, table
from evalkit.report.model import ReportModel
from evalkit.scoring.stats import bootstrap_ci

METRICS = (("recall", "recall@k"), ("mrr", "MRR"), ("ndcg", "nDCG@k"), ("zero_hit", "zero-hit"))


def synthetic_ids(model: ReportModel) -> set[str]:
    """Ids of the labelled set's synthetic questions."""
    if model.labelset is None:
        return set()
    return {
        qid
        for qid, q in model.labelset.questions.items()
        if q.tags.get("synthetic") is True or q.tags.get("derived_label") is True
    }


def _rows(frame: pd.DataFrame, synthetic: set[str], label: str) -> list[list[str]]:
    rows = []
    answerable = frame[frame["answerable"].astype(bool)]
    for group, part in (("synthetic", answerable["question_id"].isin(synthetic)), ("real", None)):
        chosen = answerable[part] if part is not None else answerable[~answerable["question_id"].isin(synthetic)]
        row = [label, group, fmt.count(len(chosen))]
        for column, _ in METRICS:
            values = chosen[column].astype(float).to_numpy() if column in chosen.columns else []
            row.append(fmt.interval(bootstrap_ci(values, n_resamples=1000)) if len(values) else "–")
        rows.append(row)
    return rows


def synthetic(model: ReportModel) -> Markup | None:
    ids = synthetic_ids(model)
    if not ids:
        return None
    results = model.run.results
    scored = set(results["question_id"].astype(str))
    share = len(ids & scored) / max(len(scored), 1)
    rows = _rows(results[results["config_id"] == model.focus_id], ids, "centre config")
    if model.baseline_id is not None and model.baseline_id != model.focus_id:
        rows += _rows(results[results["config_id"] == model.baseline_id], ids, "production")
    headers = ["config", "questions", "answerable", *(label for _, label in METRICS)]
    note = (
        f"{fmt.count(len(ids & scored))} of {fmt.count(len(scored))} scored questions ({fmt.pct(share)}) are "
        "synthetic (tags.synthetic or tags.derived_label). Generated questions tend to copy their passage and score "
        "higher than real ones; judge configs on the real rows. Means of answerable questions, 95% bootstrap intervals."
    )
    return section("synthetic", "Synthetic vs real questions", [table(headers, rows, numeric=(2, 3, 4, 5, 6))], note)
