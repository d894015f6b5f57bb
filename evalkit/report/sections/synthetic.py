"""Synthetic against real questions: the share of generated questions, and metrics for each group apart.

Synthetic questions (``tags.synthetic`` true, or ``tags.derived_label`` true:
written by ``python -m evalkit.labels generate``) tend to copy their source
passage and flatter retrieval scores, so a set that holds them is reported
with their share and with every headline metric split: synthetic vs real
(from logs or written by people), for the config the report centres on and
for production (the intervals: review.json's). Renders nothing when the set holds no synthetic question.
"""

from __future__ import annotations

from evalkit.report import fmt
from evalkit.report.html import Markup, section, table
from evalkit.report.model import ReportModel


def synthetic_ids(model: ReportModel) -> set[str]:
    """Ids of the labelled set's synthetic questions."""
    if model.labelset is None:
        return set()
    return {
        qid
        for qid, q in model.labelset.questions.items()
        if q.tags.get("synthetic") is True or q.tags.get("derived_label") is True
    }


def synthetic(model: ReportModel) -> Markup | None:
    ids = synthetic_ids(model)
    review = model.review
    if not ids or not review.synthetic:
        return None
    results = model.run.results
    scored = set(results["question_id"].astype(str))
    share = len(ids & scored) / max(len(scored), 1)
    rows = [
        [r.config, r.group, fmt.count(r.n), *(fmt.interval(i) if i is not None else "–" for i in r.intervals)]
        for r in review.synthetic
    ]
    headers = ["config", "questions", "answerable", *(label for _, label in review.synthetic_measures)]
    note = (
        f"{fmt.count(len(ids & scored))} of {fmt.count(len(scored))} scored questions ({fmt.pct(share)}) are "
        "synthetic (tags.synthetic or tags.derived_label). Generated questions tend to copy their passage and score "
        "higher than real ones; judge configs on the real rows. Means of answerable questions, 95% bootstrap intervals "
        f"{fmt.resampled(review.statistics.cluster_by)}."
    )
    return section("synthetic", "Synthetic vs real questions", [table(headers, rows, numeric=(2, 3, 4, 5, 6))], note)
