"""Item analysis: the questions that never tell configs apart, and the gold to doubt (review.json's, rendered).

Suspect gold: questions the configs that are worse on the rest of the set score better on (negative
discrimination), or that the configs best on the rest of the set miss; never discriminating: questions every
config scores the same. The statistics and thresholds are :mod:`evalkit.scoring.items`'s; nothing is computed
here. The queue command sends the listed questions to the annotation page.
"""

from __future__ import annotations

from evalkit.report import fmt
from evalkit.report.html import Markup, section, table, tag
from evalkit.report.model import ReportModel
from evalkit.run.review import ItemAnalysis, ItemRow

WHY = {
    "negative": "worse configs score it better (negative discrimination)",
    "upper_miss": "the configs best on the rest of the set miss it",
    "always": "right under every config",
    "never": "wrong under every config (no config finds its gold)",
    "constant": "the same score under every config",
}
DOUBT = {
    "wrong_span": "gold elsewhere: another passage of its document matches the question better",
    "wrong_document": "gold elsewhere: a passage of a retrieved document matches the question better",
    "hard": "hard question: the gold matches it as well as anything retrieved; no config retrieves it",
}
MAX_ROWS = 200


def _rows(model: ReportModel, rows: tuple[ItemRow, ...]) -> list[list[object]]:
    questions = model.labelset.questions if model.labelset is not None else {}
    out: list[list[object]] = []
    for row in rows[:MAX_ROWS]:
        question = questions.get(row.question_id)
        gold = ", ".join(f"{s.doc_id} {s.start}–{s.end}" for s in question.evidence) if question else ""
        out.append([
            row.question_id, question.question if question else "", gold, _why(row),
            fmt.pct(row.facility), fmt.pct(row.p_upper), fmt.pct(row.p_lower), fmt.num(row.r, 2),
        ])  # fmt: skip
    return out


def _why(row: ItemRow) -> str:
    why = WHY.get(row.reason, row.reason)
    if not row.doubt:
        return why
    overlap = f"question terms: gold {fmt.pct(row.gold_overlap)}, elsewhere {fmt.pct(row.elsewhere_overlap)}"
    if row.gold_doc_retrieved is not None:
        overlap += "; its document retrieved" if row.gold_doc_retrieved else "; its document never retrieved"
    said = f"; with its gold's whole document the model answered {row.stuffed_answer!r}" if row.stuffed_answer else ""
    return f"{why}; {DOUBT.get(row.doubt, row.doubt)} ({overlap}){said}"


def _note(items: ItemAnalysis) -> str:
    return (
        f"{fmt.count(items.n_questions)} questions scored on {items.measure} by {fmt.count(items.n_configs)} configs. "
        f"Upper and lower groups: the {items.group_size} configs best and worst on the rest of the set (Kelley's "
        f"27%; the upper group finds {fmt.pct(items.upper_rest)} of the set). r: item-rest correlation across "
        "configs (point-biserial for hit). Suspect gold: r < 0 with the lower group scoring higher, or the upper "
        "group scoring it at most 10%. Second signal: the share of the question's term weight (IDF) the gold's "
        "window holds against the best window elsewhere in its document or in the documents retrieved: at least 50% "
        "elsewhere and three times the gold's says the gold is elsewhere, else the question is hard. Check the "
        "gold span first: "
        "python -m evalkit.labels queue --suspect RUN_DIR [SET] sends these questions to the annotation page."
    )


HEADERS = ["question", "text", "gold", "why", "all configs", "upper", "lower", "r"]


def items(model: ReportModel) -> Markup | None:
    found = model.review.items
    if found is None:
        return None
    if found.skipped:
        return section("items", "Item analysis", [tag("p", f"No item analysis: {found.skipped}.")])
    body = [
        tag("h3", f"Suspect gold ({fmt.count(len(found.suspect))})"),
        table(HEADERS, _rows(model, found.suspect), numeric=(4, 5, 6, 7))
        if found.suspect
        else tag("p", "No question's gold is in doubt."),
        tag("h3", f"Never discriminating ({fmt.count(len(found.never_discriminating))})"),
        table(HEADERS, _rows(model, found.never_discriminating), numeric=(4, 5, 6, 7))
        if found.never_discriminating
        else tag("p", "Every question separates some configs."),
    ]
    shown = max(len(found.suspect), len(found.never_discriminating))
    if shown > MAX_ROWS:
        body.append(tag("p", f"The first {MAX_ROWS} of each list are shown; review.json holds them all."))
    return section("items", "Item analysis", body, _note(found))
