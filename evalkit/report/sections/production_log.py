"""What production's own logged retrievals score against the gold, beside the sweep's replica and best config.

Rendered from review.json's ``production_log`` (``production_log=`` on the sweep); the intervals and paired
differences are the review's. The "replica gap" line names the measures where the logs and the replica disagree
beyond noise: the replica then does not stand for production, and decisions made against it need a look.
Renders nothing when the sweep was run without a log.
"""

from __future__ import annotations

from evalkit.report import fmt
from evalkit.report.html import Markup, section, table, tag
from evalkit.report.model import ReportModel


def production_log(model: ReportModel) -> Markup | None:
    logged = model.review.production_log
    if logged is None:
        return None
    found = (
        f"{fmt.count(logged.matched)} of {fmt.count(logged.questions)} labelled questions "
        f"({fmt.count(logged.matched_answerable)} answerable) were found in {logged.log} ({logged.format}, "
        f"{fmt.count(logged.entries)} logged retrievals, {fmt.count(logged.skipped)} rows skipped); each is scored on "
        f"its latest logged top-{logged.top_k}, anchored to the gold spans as retriever=external's hits are."
    )
    body = [tag("p", found)]
    if logged.not_in_set or logged.unanchored:
        missing = logged.not_in_set + logged.unanchored
        body.append(tag("p", f"{fmt.count(missing)} logged hits are not in the labelled set and are not scored."))
    if logged.measures:
        best = logged.best_id is not None and any(m.best is not None for m in logged.measures)
        headers = ["measure", "production's logs", f"replica ({logged.replica_id or 'not in the grid'})",
                   "logs − replica"] + ([f"best ({logged.best_id})", "best − logs"] if best else [])  # fmt: skip
        rows = []
        for m in logged.measures:
            row = [m.label, fmt.interval(m.logged), fmt.interval(m.replica), fmt.delta(m.logged_vs_replica)]
            rows.append(row + ([fmt.interval(m.best), fmt.delta(m.best_vs_logged)] if best else []))
        body.append(table(headers, rows, numeric=tuple(range(1, len(headers)))))
    gap = logged.gap_line()
    if gap is not None:
        body.append(tag("p", tag("strong", gap[0].upper() + gap[1:])))
    note = "Means over the labelled questions found in the log, with paired intervals on the same questions."
    return section("production-log", "Production's logged retrievals", body, note)
