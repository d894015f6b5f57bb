"""The per-question drill-down: which questions are shown, the filter toolbar, one details row each."""

from __future__ import annotations

from evalkit.report.drilldown import question_details
from evalkit.report.html import Markup, join, section
from evalkit.report.model import ReportModel


def questions(model: ReportModel) -> Markup:
    drill = model.drilldown
    sel = drill.selection
    lines = [f"{len(sel.question_ids)} of {sel.n_total} questions shown"]
    if len(drill.configs) > 1 and sel.n_differing == 0:
        lines.append("no question's outcome differs between the recommended and the baseline config")
    elif len(drill.configs) > 1:
        lines.append(
            f"all {sel.n_shown_differing} of the {sel.n_differing} whose outcome differs between the "
            "recommended and the baseline config come first"
            if sel.n_shown_differing == sel.n_differing
            else f"the first {sel.n_shown_differing} of the {sel.n_differing} whose outcome differs come first"
        )
    if sel.n_sampled:
        lines.append(
            ("then " if sel.n_shown_differing else "") + f"a random sample of {sel.n_sampled} (seed {sel.seed})"
        )
    note = "; ".join(lines) + (
        ". Outcome: hit for answerable questions, abstention (nothing returned) for "
        "unanswerable ones. Click a row to see the gold span in its document and the chunks "
        "each config returned."
    )
    if model.labelset is None:
        note += " The labelled set folder was not found, so question and document text are missing (--labelset)."
    toolbar = Markup(
        '<div class="toolbar"><input id="qfilter" type="search" placeholder="Filter questions (id, text, answer)" '
        'aria-label="Filter questions"><button id="qexpand" type="button">Expand all</button>'
        f'<button id="qcollapse" type="button">Collapse all</button><span class="note"><span id="qshown">'
        f"{len(sel.question_ids)}</span> shown</span></div>"
    )
    questions_by_id = model.labelset.questions if model.labelset else {}
    items = []
    for qid in sel.question_ids:
        configs = []
        for label, config_id in drill.configs:
            rows = drill.rows[config_id]
            row = rows.loc[qid].to_dict() if qid in rows.index else None
            chunks = drill.chunks[config_id]
            configs.append((label, config_id, row, chunks[chunks["question_id"] == qid]))
        items.append(question_details(qid, questions_by_id.get(qid), configs, drill.documents))
    return section("questions", "Questions", [toolbar, join(items)], note)
