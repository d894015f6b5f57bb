"""ragas ``EvaluationDataset`` files (JSONL or CSV) to and from labelled sets.

Export: one row per question with ragas' own columns — ``user_input`` (the
question), ``reference`` (the first gold answer, '' if unanswerable),
``reference_contexts`` (the source passages' text, or the evidence text) and
``reference_context_ids`` (their span ids, ``doc#start-end``) — plus evalkit
columns ragas ignores: ``id`` and ``evalkit_*`` (answers, answerable,
evidence_mode, evidence and source passages as span lists, tags). Those make
a round trip lossless. ``EvaluationDataset.from_jsonl`` reads the file.

Import: rows with evalkit columns are taken as they are when their spans
still match the documents; other rows are anchored by locating their
``reference_contexts`` (see :mod:`evalkit.labels.anchor`). In CSV, list
columns may be JSON or Python literals (ragas' own ``to_csv`` writes
``str(list)``).
"""

from __future__ import annotations

import ast
import csv
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from evalkit.labels.anchor import Anchored, GoldAnswer, ImportResult, collect, from_contexts, record_first
from evalkit.labels.locate import Locator, build_locator
from evalkit.labels.write import span_record
from evalkit.records import Document, Question, Span, span_id

__all__ = ["ContextChoice", "import_ragas", "ragas_rows", "read_rows", "write_rows"]

ContextChoice = Literal["passage", "evidence"]
EVALKIT_FIELDS = ("answers", "answerable", "evidence_mode", "evidence", "source_passage", "tags")
SYNTHESIS_TAGS = ("persona_name", "query_style", "query_length", "synthesizer_name")
"""ragas test-set generator columns kept as tags."""


def _contexts(question: Question, choice: ContextChoice) -> tuple[Span, ...]:
    if choice == "passage" and question.source_passage:
        return question.source_passage
    return question.evidence


def ragas_rows(
    documents: Sequence[Document], questions: Sequence[Question], contexts: ContextChoice = "passage"
) -> list[dict[str, Any]]:
    """One ragas row per question (``contexts``: source passages, falling back to evidence; or evidence)."""
    texts = {doc.doc_id: doc.text for doc in documents}
    rows = []
    for q in questions:
        spans = _contexts(q, contexts)
        rows.append(
            {
                "user_input": q.question,
                "reference": q.answers[0] if q.answers else "",
                "reference_contexts": [texts[s.doc_id][s.start : s.end] for s in spans],
                "reference_context_ids": [span_id(s.doc_id, s.start, s.end) for s in spans],
                "id": q.id,
                "evalkit_answers": list(q.answers),
                "evalkit_answerable": q.answerable,
                "evalkit_evidence_mode": q.evidence_mode,
                "evalkit_evidence": [span_record(s) for s in q.evidence],
                "evalkit_source_passage": [span_record(s, with_text=False) for s in q.source_passage],
                "evalkit_tags": dict(q.tags),
            }
        )
    return rows


def write_rows(rows: Sequence[dict[str, Any]], out: str | Path) -> Path:
    """Write rows as JSONL, or as CSV when ``out`` ends with ``.csv`` (non-strings JSON-encoded)."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".csv":
        columns = list(dict.fromkeys(k for row in rows for k in row))
        with open(path, "w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=columns)
            writer.writeheader()
            for row in rows:
                writer.writerow(
                    {k: v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for k, v in row.items()}
                )
    else:
        with open(path, "w", encoding="utf-8", newline="") as handle:
            handle.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    return path


def read_rows(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, row) of a JSONL, JSON (a list) or CSV file; raises ``ValueError`` on unreadable input."""
    file = Path(path)
    suffix = file.suffix.lower()
    if suffix == ".csv":
        with open(file, encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            for row in reader:
                yield reader.line_num, dict(row)
        return
    if suffix == ".json":
        data = json.loads(file.read_text(encoding="utf-8"))
        if not isinstance(data, list):
            raise ValueError(f"{file}: expected a JSON list of rows")
        yield from ((i, row) for i, row in enumerate(data, start=1))
        return
    with open(file, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    yield number, json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{file}:{number}: invalid JSON ({exc.msg})") from None


def _value(raw: Any) -> Any:
    """A cell as a Python value: JSON or Python literals in strings are decoded; other strings kept."""
    if not isinstance(raw, str):
        return raw
    text = raw.strip()
    if text[:1] in ("[", "{") or text in ("true", "false", "null"):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            try:
                return ast.literal_eval(text)
            except (ValueError, SyntaxError):
                return raw
    return raw


def _strings(raw: Any) -> list[str] | None:
    value = _value(raw)
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    return None


def _evalkit_record(row: Mapping[str, Any], qid: str, question: str) -> dict[str, Any] | None:
    if row.get("evalkit_evidence_mode") in (None, ""):
        return None
    record = {name: _value(row.get(f"evalkit_{name}")) for name in EVALKIT_FIELDS}
    return {"id": qid, "question": question, **record}


def _row(
    ordinal: int,
    number: int,
    row: Mapping[str, Any],
    source: Path,
    documents: Mapping[str, Document],
    locator: Locator,
    lang: str,
) -> Anchored:
    where = f"{source}:{number}"
    question = row.get("user_input")
    if not isinstance(question, str) or not question.strip():
        return Anchored(None, (f"{where}: field 'user_input': missing, empty or multi-turn; row skipped",))
    qid = str(row.get("id") or f"ragas-{ordinal:05d}")
    done, notes = record_first(_evalkit_record(row, qid, question), number, source, documents, "reference_contexts")
    if done is not None:
        return done
    contexts = _strings(row.get("reference_contexts"))
    if contexts is None:
        return Anchored(None, (f"{where}: field 'reference_contexts': expected a list of strings; row skipped",))
    reference = row.get("reference")
    reference = reference if isinstance(reference, str) else ""
    tags: dict[str, Any] = {"source": "ragas"}
    if lang:
        tags["lang"] = lang
    tags.update({k: row[k] for k in SYNTHESIS_TAGS if row.get(k) not in (None, "")})
    anchored = from_contexts(
        where=where,
        qid=qid,
        question=question,
        answers=[GoldAnswer(reference)] if reference.strip() else [],
        contexts=contexts,
        field="reference_contexts",
        locator=locator,
        documents=documents,
        tags=tags,
        number=number,
        source=source,
    )
    return Anchored(anchored.question, anchored.reports, notes + anchored.notes)


def import_ragas(path: str | Path, documents: Sequence[Document], lang: str = "") -> ImportResult:
    """Labelled questions from a ragas EvaluationDataset file, anchored in ``documents``."""
    source = Path(path)
    by_id = {doc.doc_id: doc for doc in documents}
    locator = build_locator(documents)
    return collect(documents, _anchor_rows(source, by_id, locator, lang), source)


def _anchor_rows(
    source: Path, by_id: Mapping[str, Document], locator: Locator, lang: str
) -> Iterator[tuple[int, Anchored]]:
    for ordinal, (number, row) in enumerate(read_rows(source), start=1):
        if not isinstance(row, dict):
            yield number, Anchored(None, (f"{source}:{number}: expected an object; row skipped",))
            continue
        yield number, _row(ordinal, number, row, source, by_id, locator, lang)
