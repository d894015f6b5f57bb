"""SQuAD v1.1 / v2.0 JSON to a labelled set.

One document per article (``# Title``, a blank line, then the paragraphs
joined by blank lines) or per paragraph (``# Title``, a blank line, the
paragraph). Paragraph text is copied verbatim, so every answer becomes an
evidence span at ``answer_start`` plus the paragraph's offset in its
document, in code points. An answer whose text is not at its
``answer_start`` is reported and dropped, never moved; an answerable
question left with no span is reported and skipped. ``is_impossible``
questions become unanswerable (``evidence_mode: none``), with their
paragraph as source passage and SQuAD 2.0's plausible answers kept as
``tags.plausible_spans``. The same reader takes CMRC 2018 (SQuAD-format
Chinese).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from evalkit.labels.anchor import ImportResult
from evalkit.labels.load import parse_question
from evalkit.labels.write import safe_name, span_record
from evalkit.records import Document, Question, Span

__all__ = ["DocumentUnit", "detect_language", "import_squad", "read_squad"]

DocumentUnit = Literal["article", "paragraph"]
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def read_squad(path: str | Path) -> dict[str, Any]:
    """The parsed SQuAD JSON file; raises ``ValueError`` when it is not SQuAD-shaped."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise ValueError(f"{path}: not SQuAD JSON (expected an object with a 'data' list of articles)")
    return data


def detect_language(texts: list[str]) -> str:
    """``zh`` when CJK characters make up over a fifth of the first 20,000 characters, else ``en``."""
    sample = "".join(texts)[:20000]
    visible = sum(1 for c in sample if not c.isspace())
    return "zh" if visible and len(_CJK.findall(sample)) / visible > 0.2 else "en"


@dataclass(frozen=True)
class _Paragraph:
    doc_id: str
    offset: int
    """Where the paragraph starts in its document."""
    text: str
    title: str
    index: int


def _layout(data: Mapping[str, Any], unit: DocumentUnit) -> tuple[list[Document], list[tuple[_Paragraph, dict]]]:
    """Documents, and each paragraph's place in them with its raw record."""
    documents: list[Document] = []
    placed: list[tuple[_Paragraph, dict]] = []
    used: set[str] = set()

    def unique(name: str) -> str:
        candidate, n = name, 2
        while candidate in used:
            candidate, n = f"{name}_{n}", n + 1
        used.add(candidate)
        return candidate

    for a, article in enumerate(data.get("data", [])):
        raw_title = str(article.get("title") or f"article {a}")
        title = raw_title.replace("_", " ")
        paragraphs = [p for p in article.get("paragraphs", []) if isinstance(p, dict)]
        heading = f"# {title}\n\n"
        if unit == "article":
            doc_id = unique(safe_name(raw_title))
            parts, pos = [], len(heading)
            for i, paragraph in enumerate(paragraphs):
                text = str(paragraph.get("context", ""))
                placed.append((_Paragraph(doc_id, pos, text, raw_title, i), paragraph))
                parts.append(text)
                pos += len(text) + 2
            meta = {"source_title": raw_title, "source_article_index": a}
            documents.append(Document(doc_id, heading + "\n\n".join(parts) + "\n", f"docs/{doc_id}.md", title, meta))
        else:
            for i, paragraph in enumerate(paragraphs):
                doc_id = unique(f"{safe_name(raw_title)}__p{i:03d}")
                text = str(paragraph.get("context", ""))
                placed.append((_Paragraph(doc_id, len(heading), text, raw_title, i), paragraph))
                meta = {"source_title": raw_title, "source_article_index": a, "source_paragraph_index": i}
                documents.append(Document(doc_id, heading + text + "\n", f"docs/{doc_id}.md", title, meta))
    return documents, placed


def _spans(
    answers: Any, paragraph: _Paragraph, where: str, field: str, reports: list[str]
) -> tuple[list[Span], list[str]]:
    """Spans of SQuAD answers in the paragraph's document; mismatches reported."""
    spans: list[Span] = []
    texts: list[str] = []
    for i, answer in enumerate(answers if isinstance(answers, list) else []):
        text, start = (answer.get("text"), answer.get("answer_start")) if isinstance(answer, dict) else (None, None)
        if not isinstance(text, str) or not text or not isinstance(start, int) or isinstance(start, bool):
            reports.append(f"{where}: field '{field}[{i}]': needs 'text' and an integer 'answer_start'; dropped")
            continue
        if paragraph.text[start : start + len(text)] != text:
            found = paragraph.text[start : start + len(text)]
            reports.append(
                f"{where}: field '{field}[{i}]': {text!r} is not at answer_start {start} "
                f"(the paragraph has {found!r}); dropped"
            )
            continue
        span = Span(paragraph.doc_id, paragraph.offset + start, paragraph.offset + start + len(text), text)
        if span not in spans:
            spans.append(span)
        if text not in texts:
            texts.append(text)
    return spans, texts


def import_squad(
    data: Mapping[str, Any],
    source: str | Path,
    unit: DocumentUnit = "article",
    lang: str = "",
    dataset: str = "squad",
) -> ImportResult:
    """A labelled set from parsed SQuAD JSON (``source`` names the file in reports)."""
    documents, placed = _layout(data, unit)
    language = lang or detect_language([p.text for p, _ in placed])
    by_id = {doc.doc_id: doc for doc in documents}
    questions: list[Question] = []
    reports: list[str] = []
    seen: set[str] = set()
    for paragraph, raw in placed:
        passage = Span(paragraph.doc_id, paragraph.offset, paragraph.offset + len(paragraph.text))
        for k, qa in enumerate(raw.get("qas", [])):
            where = f"{source}: article {paragraph.title!r} paragraph {paragraph.index} question {k}"
            qid = str(qa.get("id") or f"{paragraph.doc_id}-p{paragraph.index}-q{k}")
            if qid in seen:
                reports.append(f"{where}: field 'id': duplicate id {qid!r}; skipped")
                continue
            impossible = bool(qa.get("is_impossible", False))
            spans, texts = _spans(qa.get("answers"), paragraph, where, "answers", reports)
            tags: dict[str, Any] = {
                "dataset": dataset,
                "lang": language,
                "multi_hop": False,
                "source_title": paragraph.title,
                "source_paragraph_index": paragraph.index,
                "n_annotator_answers": len(qa.get("answers") or []),
            }
            if impossible:
                plausible, _ = _spans(qa.get("plausible_answers"), paragraph, where, "plausible_answers", reports)
                tags["unanswerable_kind"] = "squad2_adversarial"
                if plausible:
                    tags["plausible_spans"] = [span_record(s) for s in plausible]
                spans, texts = [], []
            elif not spans:
                reports.append(f"{where}: question {qid!r} has no answer that matches its paragraph; skipped")
                continue
            record = {
                "id": qid,
                "question": str(qa.get("question", "")),
                "answers": texts,
                "answerable": not impossible,
                "evidence": [span_record(s) for s in spans],
                "evidence_mode": "none" if impossible else "any",
                "source_passage": [span_record(passage, with_text=False)] if paragraph.text else [],
                "tags": tags,
            }
            question, problems = parse_question(record, len(questions) + 1, source, by_id)
            if question is None:
                reports.extend(f"{line}; skipped" for line in problems)
                continue
            seen.add(qid)
            questions.append(question)
    return ImportResult(tuple(documents), tuple(questions), tuple(reports))
