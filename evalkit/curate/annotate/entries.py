"""An annotator's decision on one question, the edits the page sends, and the ``questions.jsonl`` line (pure).

Edits are applied to the latest decision on disk, never to what a browser
tab last saw, so two tabs labelling the same set merge their work: spans are
named by ``(doc_id, start, end)``, not by a position in a list that another
tab may have changed.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from evalkit.curate.annotate.checks import is_trivial, slice_problem, trimmed
from evalkit.curate.queue import QueueItem
from evalkit.labels.write import question_record
from evalkit.records import Document, Question, Span

__all__ = ["EditError", "Entry", "apply_edit", "entry_from_json", "entry_json", "question_line"]

Status = Literal["untouched", "labelled", "unanswerable", "skipped"]
STATUSES = ("untouched", "labelled", "unanswerable", "skipped")
_BLOCK_BREAK = re.compile(r"\n[ \t]*\n")


class EditError(ValueError):
    """An edit the page sent that cannot be applied; the message is shown to the annotator."""


@dataclass(frozen=True)
class Entry:
    """What the annotator decided about one question."""

    status: Status = "untouched"
    """``untouched``: no decision (an earlier label in questions.jsonl, if any, stays as it was)."""
    evidence: tuple[Span, ...] = ()
    mode: Literal["any", "all", ""] = ""
    """``""``: ``all`` with several spans (multi-hop), ``any`` with one."""
    answers: tuple[str, ...] = ()
    notes: str = ""
    updated: str = ""

    @property
    def evidence_mode(self) -> str:
        if self.status == "unanswerable":
            return "none"
        return self.mode or ("all" if len(self.evidence) > 1 else "any")


def entry_json(entry: Entry) -> dict[str, Any]:
    return {
        "status": entry.status,
        "evidence": [{"doc_id": s.doc_id, "start": s.start, "end": s.end, "text": s.text} for s in entry.evidence],
        "mode": entry.mode,
        "answers": list(entry.answers),
        "notes": entry.notes,
        "updated": entry.updated,
    }


def entry_from_json(value: Mapping[str, Any]) -> Entry:
    status = value.get("status", "untouched")
    if status not in STATUSES:
        raise ValueError(f"unknown status {status!r}")
    spans = tuple(Span(str(s["doc_id"]), int(s["start"]), int(s["end"]), str(s["text"])) for s in value["evidence"])
    mode = value.get("mode") or ""
    if mode not in ("any", "all", ""):
        raise ValueError(f"unknown mode {mode!r}")
    answers = tuple(str(a) for a in value.get("answers") or ())
    return Entry(status, spans, mode, answers, str(value.get("notes") or ""), str(value.get("updated") or ""))


def _span(args: Mapping[str, Any], documents: Mapping[str, Document]) -> Span:
    doc_id = args.get("doc_id")
    if not isinstance(doc_id, str) or doc_id not in documents:
        raise EditError(f"unknown document {doc_id!r}")
    text = documents[doc_id].text
    start, end, selected = args.get("start"), args.get("end"), args.get("text")
    problem = slice_problem(text, start, end, selected) if isinstance(selected, str) else "no 'text' sent"
    if problem:
        raise EditError(problem)
    start, end = trimmed(text, start, end)
    return Span(doc_id, start, end, text[start:end])


def _span_args(span: Span) -> dict[str, Any]:
    return {"doc_id": span.doc_id, "start": span.start, "end": span.end, "text": span.text}


def _with_span(entry: Entry, span: Span) -> Entry:
    if any((s.doc_id, s.start, s.end) == (span.doc_id, span.start, span.end) for s in entry.evidence):
        return replace(entry, status="labelled")
    return replace(entry, status="labelled", evidence=(*entry.evidence, span))


def _without_span(entry: Entry, args: Mapping[str, Any]) -> Entry:
    key = (args.get("doc_id"), args.get("start"), args.get("end"))
    kept = tuple(s for s in entry.evidence if (s.doc_id, s.start, s.end) != key)
    if len(kept) == len(entry.evidence):
        raise EditError("that span is not (or no longer) part of this question's evidence")
    return replace(entry, evidence=kept, status="labelled" if kept else "untouched")


def apply_edit(
    entry: Entry, op: str, args: Mapping[str, Any], item: QueueItem, documents: Mapping[str, Document], now: str
) -> Entry:
    """The entry after one edit; raises :class:`EditError` for an edit that cannot be applied."""
    if op == "add_span":
        new = _with_span(entry, _span(args, documents))
    elif op == "remove_span":
        new = _without_span(entry, args)
    elif op == "accept_proposed":
        if not item.proposed:
            raise EditError("this question has no proposed span")
        new = entry
        for span in item.proposed:
            new = _with_span(new, _span(_span_args(span), documents))
    elif op == "unanswerable":
        new = replace(entry, status="unanswerable", evidence=(), mode="", answers=())
    elif op == "skip":
        new = replace(entry, status="skipped")
    elif op == "mode":
        if args.get("mode") not in ("any", "all", ""):
            raise EditError("mode must be 'any' (one span suffices) or 'all' (every span is needed)")
        new = replace(entry, mode=args["mode"])
    elif op == "notes":
        new = replace(entry, notes=str(args.get("notes") or "")[:5000])
    elif op == "answers":
        raw = args.get("answers")
        if not isinstance(raw, list) or not all(isinstance(a, str) for a in raw):
            raise EditError("answers must be a list of strings")
        new = replace(entry, answers=tuple(" ".join(a.split()) for a in raw if a.strip()))
    else:
        raise EditError(f"unknown edit {op!r}")
    return replace(new, updated=now)


def _passage(text: str, span: Span) -> Span:
    """The block (text between blank lines) around a span: what the question was answered from."""
    starts = [m.end() for m in _BLOCK_BREAK.finditer(text, 0, span.start)]
    start = starts[-1] if starts else 0
    after = _BLOCK_BREAK.search(text, span.end)
    end = after.start() if after else len(text.rstrip())
    return Span(span.doc_id, min(start, span.start), max(end, span.end))


def question_line(item: QueueItem, entry: Entry, documents: Mapping[str, Document]) -> dict[str, Any] | None:
    """The ``questions.jsonl`` record of a decided question; None when it is not part of the set."""
    if entry.status not in ("labelled", "unanswerable") or (entry.status == "labelled" and not entry.evidence):
        return None
    texts = {doc_id: doc.text for doc_id, doc in documents.items()}
    tags = dict(item.tags)
    tags["annotated"] = entry.updated[:10] or dt.date.today().isoformat()
    tags["multi_hop"] = entry.evidence_mode == "all"
    if entry.status == "labelled":
        tags["trivial"] = is_trivial(entry.evidence, texts)
    if entry.notes:
        tags["notes"] = entry.notes
    answers = entry.answers
    if not answers and entry.status == "labelled" and len(entry.evidence) == 1:
        answers = (entry.evidence[0].text,)
    passages = tuple(dict.fromkeys(_passage(texts[s.doc_id], s) for s in entry.evidence if s.doc_id in texts))
    question = Question(
        id=item.id,
        question=item.question,
        answers=answers,
        answerable=entry.status == "labelled",
        evidence=entry.evidence,
        evidence_mode=entry.evidence_mode,  # type: ignore[arg-type]
        tags=tags,
        source_passage=passages,
    )
    return question_record(question)
