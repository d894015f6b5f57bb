"""The per-question table: which questions to show, and each one's evidence and retrieved chunks.

All question and document text is untrusted: it reaches the page only through
:func:`evalkit.report.html.esc`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from evalkit.report import fmt
from evalkit.report.html import Markup, esc, join, tag
from evalkit.report.labels import GoldSpan, LabelledQuestion

CONTEXT_RADIUS = 150
"""Characters of document shown on each side of a gold span (about 300 in all)."""
MAX_SPAN_CHARS = 800
"""A longer gold span is shown clipped in the middle."""
MAX_CHUNK_CHARS = 2000


VIEW_ALL = "all"
VIEW_ANY = "any"
VIEW_MISSES = "misses"
VIEW_UNANSWERABLE = "unanswerable-with-context"
VIEW_FLIPS = "flips"


@dataclass(frozen=True)
class View:
    """One drill-down filter: its key, its label in the page, and every question it holds, in page order."""

    key: str
    label: str
    question_ids: tuple[str, ...]


@dataclass(frozen=True)
class Views:
    """The drill-down's filters over every question of the run (no sample: each holds all its questions)."""

    views: tuple[View, ...]
    """``all`` first (the page's default): flips, then misses, then unanswerable questions given context, then the
    rest; then the union of those three; then each of them."""
    focus_label: str
    """What the focus config is called: ``recommended``, or ``production`` when production is kept."""

    def get(self, key: str) -> View:
        return next(v for v in self.views if v.key == key)


def outcome(rows: pd.DataFrame) -> pd.Series:
    """Per question: hit for answerable questions, abstention (zero-hit) for unanswerable ones."""
    answerable = rows["answerable"].astype(bool).to_numpy()
    values = np.where(answerable, rows["hit"].fillna(0).to_numpy(dtype=float), rows["zero_hit"].to_numpy(dtype=float))
    return pd.Series(values, index=rows["question_id"].to_numpy())


def question_views(results: pd.DataFrame, focus_id: str, production_id: str | None, focus_label: str) -> Views:
    """The filters: misses of the focus config, unanswerable questions it gave context, flips against production.

    A miss: an answerable question whose evidence the config did not fully return (recall below 1; for mode
    ``any`` that is hit 0). Unanswerable with context: the config returned something (no zero-hit). A flip:
    the outcome (hit, or abstention when unanswerable) differs between the focus config and production.
    """
    rows = results[results["config_id"] == focus_id]
    order = [str(q) for q in rows["question_id"]]
    answerable = rows["answerable"].astype(bool).to_numpy()
    recall = rows["recall"].fillna(0.0).to_numpy(dtype=float)
    zero_hit = rows["zero_hit"].fillna(0.0).to_numpy(dtype=float)
    misses = [q for q, a, r in zip(order, answerable, recall, strict=True) if a and r < 1.0 - 1e-9]
    given = [q for q, a, z in zip(order, answerable, zero_hit, strict=True) if not a and z < 0.5]
    flips: list[str] = []
    if production_id is not None and production_id != focus_id:
        base = outcome(results[results["config_id"] == production_id]).reindex(order)
        mine = outcome(rows).reindex(order)
        flips = [q for q, a, b in zip(order, mine, base, strict=True) if a != b]
    chosen = list(dict.fromkeys([*flips, *misses, *given]))
    rest = _rest(order, chosen)
    return Views(
        (
            View(VIEW_ALL, "all questions (flips, misses, unanswerable given context first)", tuple(chosen + rest)),
            View(VIEW_ANY, "any of the three filters below", tuple(chosen)),
            View(VIEW_MISSES, f"misses of the {focus_label} config", tuple(misses)),
            View(VIEW_UNANSWERABLE, "unanswerable questions that got context", tuple(given)),
            View(VIEW_FLIPS, f"questions that flip between production and the {focus_label} config", tuple(flips)),
        ),
        focus_label,
    )


def _rest(order: list[str], chosen: list[str]) -> list[str]:
    taken = set(chosen)
    return [q for q in order if q not in taken]


def highlight(text: str, offset: int, spans: Sequence[tuple[int, int]]) -> Markup:
    """Escape ``text`` (which starts at document offset ``offset``) with the given spans in ``<mark>``."""
    cuts = sorted(
        (max(s - offset, 0), min(e - offset, len(text))) for s, e in spans if e > offset and s < offset + len(text)
    )
    parts: list[str] = []
    at = 0
    for start, end in cuts:
        start = max(start, at)
        if end <= start:
            continue
        parts.append(esc(text[at:start]))
        parts.append(Markup(f"<mark>{esc(text[start:end])}</mark>"))
        at = end
    parts.append(esc(text[at:]))
    return join(parts)


def gold_context(document: str, span: GoldSpan) -> Markup:
    """About 300 characters around the gold span, the span marked."""
    start, end = max(span.start, 0), min(span.end, len(document))
    left = max(0, start - CONTEXT_RADIUS)
    right = min(len(document), end + CONTEXT_RADIUS)
    gold = document[start:end]
    if len(gold) > MAX_SPAN_CHARS:
        half = MAX_SPAN_CHARS // 2
        marked = Markup(f"<mark>{esc(gold[:half])}</mark> … <mark>{esc(gold[-half:])}</mark>")
    else:
        marked = Markup(f"<mark>{esc(gold)}</mark>")
    before = ("…" if left > 0 else "") + document[left:start]
    after = document[end:right] + ("…" if right < len(document) else "")
    return join([esc(before), marked, esc(after)])


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _pill(ok: bool | None, yes: str, no: str) -> Markup:
    if ok is None:
        return tag("span", "n/a", class_="pill neutral")
    return tag("span", yes if ok else no, class_="pill good" if ok else "pill bad")


def gold_rank_words(rank: object) -> str:
    """Where the first relevant unit sat in the candidate pool (0: not in the pool at all)."""
    try:
        value = int(rank)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return "gold rank n/a"
    return f"gold rank {value} in pool" if value > 0 else "gold not in pool"


def outcome_pill(row: Mapping[str, object] | None) -> Markup:
    """✓/✗ for one config on one question (hit, or abstention when unanswerable); a miss names the gold's pool rank."""
    if row is None:
        return _pill(None, "", "")
    if bool(row["answerable"]):
        hit = bool(row["hit"] == 1.0)
        rank = gold_rank_words(row.get("gold_rank_in_pool"))
        return _pill(hit, f"hit · {rank}", f"miss · {rank}")
    return _pill(bool(row["zero_hit"]), "abstained", "returned context")


def chunk_table(chunks: pd.DataFrame, documents: Mapping[str, str], gold: Sequence[GoldSpan]) -> Markup:
    """The chunks one config returned: rank, score, relevant, where, and the text (gold overlap marked)."""
    if chunks.empty:
        return tag("p", "Nothing returned (every candidate scored below the threshold: a zero-hit).", class_="note")
    rows = []
    for c in chunks.sort_values("returned_rank").itertuples(index=False):
        doc = documents.get(str(c.doc_id))
        if doc is None:
            text: Markup = tag("span", "(document text not found)", class_="note")
        else:
            start, end = int(c.start), min(int(c.end), int(c.start) + MAX_CHUNK_CHARS)
            spans = [(g.start, g.end) for g in gold if g.doc_id == c.doc_id]
            text = highlight(doc[start:end], start, spans)
            if int(c.end) > end:
                text = join([text, "…"])
        rows.append(
            tag(
                "tr",
                [
                    tag("td", str(int(c.returned_rank)), class_="num"),
                    tag("td", fmt.num(float(c.score), 3), class_="num"),
                    tag("td", _pill(bool(c.relevant), "yes", "no")),
                    tag("td", tag("code", f"{c.doc_id} [{int(c.start)}:{int(c.end)}]")),
                    tag("td", tag("div", text, class_="chunk")),
                ],
            )
        )
    head = join(tag("th", h) for h in ("rank", "score", "relevant", "document [start:end]", "chunk text"))
    return Markup(
        f'<div class="scroll"><table class="data"><thead><tr>{head}</tr></thead>'
        f"<tbody>{join(rows)}</tbody></table></div>"
    )


def question_details(
    question_id: str,
    question: LabelledQuestion | None,
    configs: Sequence[tuple[str, str, Mapping[str, object] | None, pd.DataFrame]],
    documents: Mapping[str, str],
) -> Markup:
    """One ``<details>`` element: the summary line, then question, gold and each config's chunks.

    ``configs``: (label, config_id, its row for this question, its returned chunks).
    """
    text = question.question if question else "(question not found in the labelled set)"
    short = text if len(text) <= 180 else text[:177] + "…"
    outcomes = join(
        join([tag("span", f"{label}: ", class_="note"), outcome_pill(row), " "]) for label, _, row, _ in configs
    )
    summary = tag(
        "summary",
        [
            tag("span", question_id, class_="qid"),
            tag("span", short, class_="qtext"),
            tag("span", outcomes, class_="outcome"),
        ],
    )
    body: list[Markup] = [tag("p", [tag("strong", "Question: "), text])]
    if question is not None:
        answers = "; ".join(question.answers) if question.answers else "(none: unanswerable)"
        meta = f"evidence mode {question.evidence_mode or 'n/a'}"
        tags = ", ".join(f"{k}={v}" for k, v in sorted(question.tags.items(), key=lambda kv: str(kv[0])))
        body.append(tag("p", [tag("strong", "Gold answer(s): "), answers]))
        body.append(tag("p", f"{meta}; tags: {tags or 'none'}", class_="note"))
        for span in question.evidence:
            doc = documents.get(span.doc_id)
            where = tag("p", tag("code", f"{span.doc_id} [{span.start}:{span.end}]"), class_="note")
            context = gold_context(doc, span) if doc is not None else esc("(document text not found)")
            body.append(join([where, tag("div", context, class_="ctx")]))
        for span in question.stale_evidence:
            # The document changed since the span was labelled: marking today's text there would show
            # the wrong words as gold, so say what the label expected instead.
            where = tag("code", f"{span.doc_id} [{span.start}:{span.end}]")
            note = f" stale label: the document no longer holds {_clip(span.text)!r} here (not shown as gold)"
            body.append(tag("p", [where, note], class_="note"))
    gold = question.evidence if question else ()
    for label, config_id, row, chunks in configs:
        extra = ""
        if row is not None:
            extra = f" — best pool score {fmt.num(float(row['best_score']), 3)}, {int(row['n_returned'])} returned"
        body.append(tag("h3", [f"{label}: ", tag("code", config_id), extra]))
        body.append(chunk_table(chunks, documents, gold))
    return tag("details", [summary, tag("div", body, class_="qbody")], class_="q")
