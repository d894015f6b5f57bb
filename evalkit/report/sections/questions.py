"""The per-question drill-down: every question of its filters, a page at a time, each one's evidence and chunks.

The page's script renders the questions from JSON embedded in the page (every
question of every filter, no sample); the first page is also rendered here, so
the page reads without a script.
"""

from __future__ import annotations

from evalkit.report.drilldata import payload
from evalkit.report.drilldown import question_details
from evalkit.report.html import Markup, data_block, esc, join, section, tag
from evalkit.report.model import ReportModel

DATA_ID = "qdata"


def _counts(model: ReportModel) -> str:
    views = model.drilldown.views
    parts = [f"{len(v.question_ids):,} {v.label}" for v in views.views[2:]]
    return "; ".join(parts)


def _toolbar(model: ReportModel, first_page: int, total: int) -> Markup:
    options = join(
        Markup(f'<option value="{esc(v.key)}">{esc(v.label)} ({len(v.question_ids):,})</option>')
        for v in model.drilldown.views.views
    )
    return Markup(
        '<div class="toolbar"><select id="qview" aria-label="Which questions">'
        f"{options}</select>"
        '<input id="qfilter" type="search" placeholder="Search (id, text, answer, tags)" aria-label="Search questions">'
        '<button id="qexpand" type="button">Expand all</button>'
        '<button id="qcollapse" type="button">Collapse all</button>'
        '<button id="qprev" type="button">&#8249; previous</button>'
        f'<span id="qpage" class="note">first {first_page:,}</span>'
        '<button id="qnext" type="button">next &#8250;</button>'
        f'<span class="note"><span id="qshown">{total:,}</span> questions in this view</span></div>'
    )


def questions(model: ReportModel) -> Markup:
    drill = model.drilldown
    everything = drill.views.views[0]
    first = everything.question_ids[: drill.page_size]
    focus = drill.configs[0][0]
    note = (
        f"{len(first)} of {len(everything.question_ids):,} questions on each page; every question of every filter is "
        f"in this page ({_counts(model)}). Filters are of the {focus} config"
        + (" against production." if len(drill.configs) > 1 else ".")
        + " Outcome: hit for answerable questions, abstention (nothing returned) for unanswerable ones; a miss names "
        "the rank of the first relevant unit in the candidate pool"
        + (f" (top {drill.pool_size})" if drill.pool_size else "")
        + ", or says the gold is not in the pool (a retrieval miss, not a top_k one). Click a row to see the gold "
        "span in its document and the chunks each config returned."
    )
    if model.labelset is None:
        note += " The labelled set folder was not found, so question and document text are missing (--labelset)."
    questions_by_id = model.labelset.questions if model.labelset else {}
    items = []
    for qid in first:
        configs = []
        for label, config_id in drill.configs:
            rows = drill.rows[config_id]
            row = rows.loc[qid].to_dict() if qid in rows.index else None
            chunks = drill.chunks[config_id]
            configs.append((label, config_id, row, chunks[chunks["question_id"] == qid]))
        items.append(question_details(qid, questions_by_id.get(qid), configs, drill.documents))
    data = payload(
        drill.views,
        drill.configs,
        drill.rows,
        drill.chunks,
        questions_by_id,
        drill.documents,
        drill.pool_size,
        drill.page_size,
    )
    body = [
        _toolbar(model, len(first), len(everything.question_ids)),
        tag("div", join(items), id="qlist"),
        data_block(DATA_ID, data),
    ]
    return section("questions", "Questions", body, note)
