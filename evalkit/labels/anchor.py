"""Turn an imported row into a labelled question anchored to document spans.

Two ways in, both checked by the loader's own rules (:func:`parse_question`):

- :func:`from_record`: the row carries evalkit's own fields (written by our
  exports): the spans are taken as they are if they still match the
  documents — the lossless path of a round trip.
- :func:`from_contexts`: the row has only context strings and answers. Each
  context is located in the corpus (exact, then whitespace-normalised); a
  context that cannot be found is reported and the question skipped, never
  guessed. Each answer is looked for inside the located contexts (at its
  given offset when there is one, else by text); where no answer occurs, the
  whole context spans are the evidence (``all`` when there are several, as
  every one was needed to write the reference). No answer at all makes the
  question unanswerable (``none``), its contexts kept as source passages.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.labels.load import parse_question
from evalkit.labels.locate import Locator, locate, locate_in_text
from evalkit.labels.write import span_record
from evalkit.records import Document, Question, Span

__all__ = ["Anchored", "GoldAnswer", "ImportResult", "from_contexts", "from_record"]


@dataclass(frozen=True)
class GoldAnswer:
    """One gold answer of an imported row."""

    text: str
    offset: int | None = None
    """Start inside ``context_index``'s context, when the source gives one (SQuAD's ``answer_start``)."""
    context_index: int = 0


@dataclass(frozen=True)
class ImportResult:
    """What an import produced: a labelled set's records, and what it could not take."""

    documents: tuple[Document, ...]
    questions: tuple[Question, ...]
    reports: tuple[str, ...]
    """Rows (or answers) skipped, one line each with file and row."""
    notes: tuple[str, ...] = ()
    """Imported, but worth a look (whitespace-normalised matches, ambiguous contexts, whole-context evidence)."""


@dataclass(frozen=True)
class Anchored:
    """The outcome of anchoring one row."""

    question: Question | None
    """``None`` when the row was skipped; :attr:`reports` says why."""
    reports: tuple[str, ...] = ()
    """Why the row was skipped, one line each (``file:row: field: what``)."""
    notes: tuple[str, ...] = ()
    """Things a user may want to check, the question being imported all the same."""


def collect(documents: Sequence[Document], rows: Iterable[tuple[int, Anchored]], source: str | Path) -> ImportResult:
    """An import's result from its anchored rows (row number, outcome): a repeated id keeps the first row."""
    questions: list[Question] = []
    reports: list[str] = []
    notes: list[str] = []
    seen: dict[str, int] = {}
    for number, anchored in rows:
        reports.extend(anchored.reports)
        notes.extend(anchored.notes)
        if anchored.question is None:
            continue
        if anchored.question.id in seen:
            reports.append(
                f"{source}:{number}: field 'id': duplicate id {anchored.question.id!r} (first in "
                f"row {seen[anchored.question.id]}); row skipped"
            )
            continue
        seen[anchored.question.id] = number
        questions.append(anchored.question)
    return ImportResult(tuple(documents), tuple(questions), tuple(reports), tuple(notes))


def _clip(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def record_first(
    record: dict[str, Any] | None, number: int, source: str | Path, documents: Mapping[str, Document], field: str
) -> tuple[Anchored | None, tuple[str, ...]]:
    """An imported row's own evalkit columns (``record``), anchored when they hold; else None and why, as notes
    for the row then located from its ``field`` (the contexts): the rule every importer of another format keeps."""
    if record is None:
        return None, ()
    anchored = from_record(record, number, source, documents)
    if anchored.question is not None:
        return anchored, ()
    return None, tuple(f"{line} (evalkit columns ignored; located from {field})" for line in anchored.reports)


def from_record(record: dict[str, Any], number: int, source: str | Path, documents: Mapping[str, Document]) -> Anchored:
    """A question from a ``questions.jsonl``-shaped record, checked against ``documents`` as the loader checks it."""
    question, problems = parse_question(record, number, source, documents)
    return Anchored(question, tuple(problems))


def _add(spans: list[Span], span: Span) -> None:
    if all((s.doc_id, s.start, s.end) != (span.doc_id, span.start, span.end) for s in spans):
        spans.append(span)


def _answer_span(answer: GoldAnswer, contexts: Sequence[Span], exact: Sequence[bool]) -> tuple[Span | None, bool]:
    """Where ``answer`` lies, and whether that was one of several occurrences in its context.

    At its offset in its context when the text there matches; else its first
    occurrence in its own context, then in the others.
    """
    if answer.offset is not None and answer.context_index < len(contexts) and exact[answer.context_index]:
        context = contexts[answer.context_index]
        start = context.start + answer.offset
        end = start + len(answer.text)
        if end <= context.end and context.text[answer.offset : answer.offset + len(answer.text)] == answer.text:
            return Span(context.doc_id, start, end, answer.text), False
    order = list(range(len(contexts)))
    if answer.context_index < len(contexts):
        order.remove(answer.context_index)
        order.insert(0, answer.context_index)
    for k in order:
        context = contexts[k]
        found = locate_in_text(context.text, answer.text)
        if found:
            start, end = found
            again = locate_in_text(context.text, answer.text, start + 1) is not None
            return Span(context.doc_id, context.start + start, context.start + end, context.text[start:end]), again
    return None, False


def _locate_contexts(
    contexts: Sequence[str], where: str, field: str, qid: str, locator: Locator, documents: Mapping[str, Document]
) -> tuple[list[Span], list[bool], list[str], list[str]]:
    """Each context's span in the corpus and whether it matched exactly; reports for those not found, notes."""
    located: list[Span] = []
    exact: list[bool] = []
    reports: list[str] = []
    notes: list[str] = []
    for i, context in enumerate(contexts):
        location = locate(locator, context)
        if location is None:
            reports.append(
                f"{where}: field '{field}[{i}]': not found in the documents (exact or whitespace-normalised): "
                f"{_clip(context)!r}; question {qid!r} skipped"
            )
            continue
        text = documents[location.doc_id].text
        located.append(Span(location.doc_id, location.start, location.end, text[location.start : location.end]))
        exact.append(location.how == "exact")
        if location.how == "whitespace":
            notes.append(f"{where}: field '{field}[{i}]': found with whitespace normalised in {location.doc_id}")
        if location.ambiguous:
            notes.append(
                f"{where}: field '{field}[{i}]': occurs more than once; took {location.doc_id}"
                f"[{location.start}:{location.end}]"
            )
    return located, exact, reports, notes


def from_contexts(
    *,
    where: str,
    qid: str,
    question: str,
    answers: Sequence[GoldAnswer],
    contexts: Sequence[str],
    field: str,
    locator: Locator,
    documents: Mapping[str, Document],
    tags: Mapping[str, Any],
    number: int,
    source: str | Path,
) -> Anchored:
    """A question whose spans are found by locating ``contexts`` (and the answers inside them) in the corpus.

    ``where`` (``file:row``) and ``field`` (the contexts' column) name the row
    in reports.
    """
    located, exact, reports, notes = _locate_contexts(contexts, where, field, qid, locator, documents)
    if reports:
        return Anchored(None, tuple(reports), tuple(notes))
    texts = list(dict.fromkeys(a.text for a in answers if a.text.strip()))
    if texts and not located:
        return Anchored(
            None,
            (f"{where}: field '{field}': question {qid!r} has an answer but no context to anchor it; skipped",),
            tuple(notes),
        )
    evidence: list[Span] = []
    for answer in answers:
        if answer.text.strip():
            span, again = _answer_span(answer, located, exact)
            if span is not None:
                _add(evidence, span)
            if again:
                notes.append(
                    f"{where}: question {qid!r}: the answer {_clip(answer.text, 30)!r} occurs more than "
                    f"once in its context; took the first, {span.doc_id}[{span.start}:{span.end}]"
                )
    if texts and not evidence:
        evidence = list(located)
        notes.append(
            f"{where}: question {qid!r}: the answer does not occur in its contexts; the whole "
            f"context{'s are' if len(located) > 1 else ' is'} the evidence"
        )
        mode = "all" if len(located) > 1 else "any"
    else:
        mode = "any" if texts else "none"
    passages: list[Span] = []
    for span in located:
        _add(passages, span)
    record = {
        "id": qid,
        "question": question,
        "answers": texts,
        "answerable": bool(texts),
        "evidence": [span_record(s) for s in evidence],
        "evidence_mode": mode,
        "source_passage": [span_record(s) for s in passages],
        "tags": dict(tags),
    }
    parsed, problems = parse_question(record, number, source, documents)
    return Anchored(parsed, tuple(problems), tuple(notes))
