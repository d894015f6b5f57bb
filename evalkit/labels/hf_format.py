"""Hugging Face ``datasets`` tables to and from labelled sets.

Export: one row per question — ``id``, ``question``, ``answer``, ``answers``,
``answerable``, ``evidence_mode``, ``contexts`` (source passages' text, or the
evidence text), ``evidence`` (list of ``{doc_id, start, end, text}``),
``source_passage`` (list of ``{doc_id, start, end}``) and ``tags`` (a JSON
string: tag values differ in type from question to question, which Arrow
columns cannot hold). Written with ``Dataset.save_to_disk`` when ``datasets``
is installed, else as Parquet (``--format`` chooses).

Import: a ``save_to_disk`` folder (a ``Dataset``, or a ``DatasetDict`` and a
split), a Parquet/Arrow file, or JSONL/JSON rows. Read with pyarrow alone,
so ``datasets`` is not needed to import. Rows with evalkit's columns are
taken as they are when their spans still match the documents. Otherwise the
columns ``question``, ``answers`` (SQuAD's ``{text, answer_start}``, a list
of strings or a string; or ``answer``) and ``context`` or ``contexts`` are
anchored by locating each context in the documents (see
:mod:`evalkit.labels.anchor`). Without documents, each distinct context
becomes a document of its own.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.parquet as pq

from evalkit.labels.anchor import Anchored, GoldAnswer, ImportResult, collect, from_contexts, record_first
from evalkit.labels.locate import Locator, build_locator
from evalkit.labels.ragas_format import ContextChoice, read_rows
from evalkit.labels.write import safe_name, span_record
from evalkit.records import Document, Question, Span

__all__ = ["HF_SCHEMA", "HfFormat", "hf_rows", "import_hf", "read_table", "write_hf"]

HfFormat = Literal["auto", "arrow", "parquet"]

_SPAN = pa.struct([("doc_id", pa.string()), ("start", pa.int64()), ("end", pa.int64()), ("text", pa.string())])
_PASSAGE = pa.struct([("doc_id", pa.string()), ("start", pa.int64()), ("end", pa.int64())])
HF_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("question", pa.string()),
        ("answer", pa.string()),
        ("answers", pa.list_(pa.string())),
        ("answerable", pa.bool_()),
        ("evidence_mode", pa.string()),
        ("contexts", pa.list_(pa.string())),
        ("evidence", pa.list_(_SPAN)),
        ("source_passage", pa.list_(_PASSAGE)),
        ("tags", pa.string()),
    ]
)
"""Columns of an exported table."""


def hf_rows(
    documents: Sequence[Document], questions: Sequence[Question], contexts: ContextChoice = "passage"
) -> list[dict[str, Any]]:
    """One row per question in :data:`HF_SCHEMA`."""
    texts = {doc.doc_id: doc.text for doc in documents}
    rows = []
    for q in questions:
        spans: tuple[Span, ...] = q.source_passage if contexts == "passage" and q.source_passage else q.evidence
        rows.append(
            {
                "id": q.id,
                "question": q.question,
                "answer": q.answers[0] if q.answers else "",
                "answers": list(q.answers),
                "answerable": q.answerable,
                "evidence_mode": q.evidence_mode,
                "contexts": [texts[s.doc_id][s.start : s.end] for s in spans],
                "evidence": [span_record(s) for s in q.evidence],
                "source_passage": [span_record(s, with_text=False) for s in q.source_passage],
                "tags": json.dumps(dict(q.tags), ensure_ascii=False, sort_keys=True),
            }
        )
    return rows


def _datasets_version() -> str | None:
    try:
        import datasets
    except ImportError:
        return None
    return str(datasets.__version__)


def write_hf(rows: Sequence[dict[str, Any]], out: str | Path, fmt: HfFormat = "auto") -> str:
    """Write rows; return what was written (``datasets X save_to_disk at OUT`` or ``parquet at FILE``).

    ``auto``: ``save_to_disk`` when ``datasets`` is installed, else Parquet.
    Parquet goes to ``out`` itself when it ends with ``.parquet``, else to
    ``out/data.parquet``. Raises ``RuntimeError`` for ``arrow`` without ``datasets``.
    """
    path = Path(out)
    table = pa.Table.from_pylist(list(rows), schema=HF_SCHEMA)
    asked_parquet = fmt == "parquet" or path.suffix.lower() == ".parquet"
    version = None if asked_parquet else _datasets_version()
    if fmt == "arrow" and version is None:
        raise RuntimeError("--format arrow needs the 'datasets' package; use --format parquet")
    if asked_parquet or version is None:
        target = path if path.suffix.lower() == ".parquet" else path / "data.parquet"
        target.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, target)
        return f"parquet at {target}" + ("" if asked_parquet else " ('datasets' is not installed)")
    import datasets
    from datasets.table import InMemoryTable

    bars = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        datasets.Dataset(InMemoryTable(table)).save_to_disk(str(path))
    finally:
        if bars:
            datasets.enable_progress_bars()
    return f"datasets {version} save_to_disk at {path}"


def _arrow_file(path: Path) -> pa.Table:
    try:
        with pa.ipc.open_stream(path) as reader:
            return reader.read_all()
    except pa.ArrowInvalid:
        with pa.ipc.open_file(path) as reader:
            return reader.read_all()


def read_table(path: str | Path, split: str = "") -> list[tuple[int, dict[str, Any]]]:
    """(row number from 1, row) of a dataset folder or file; raises ``ValueError`` when unreadable."""
    source = Path(path)
    if source.is_dir():
        if (source / "dataset_dict.json").is_file():
            splits = json.loads((source / "dataset_dict.json").read_text(encoding="utf-8")).get("splits", [])
            chosen = split or ("train" if "train" in splits else (splits[0] if splits else ""))
            if chosen not in splits:
                raise ValueError(f"{source}: no split {chosen!r} (has {', '.join(splits) or 'none'})")
            source = source / chosen
        if (source / "state.json").is_file():
            state = json.loads((source / "state.json").read_text(encoding="utf-8"))
            tables = [_arrow_file(source / f["filename"]) for f in state.get("_data_files", [])]
        else:
            files = sorted(source.glob("*.parquet"))
            if not files:
                raise ValueError(f"{source}: neither a save_to_disk folder (state.json) nor Parquet files")
            tables = [pq.read_table(f) for f in files]
        rows = [row for table in tables for row in table.to_pylist()]
        return list(enumerate(rows, start=1))
    suffix = source.suffix.lower()
    if suffix == ".parquet":
        return list(enumerate(pq.read_table(source).to_pylist(), start=1))
    if suffix == ".arrow":
        return list(enumerate(_arrow_file(source).to_pylist(), start=1))
    if suffix in (".jsonl", ".json"):
        return list(read_rows(source))
    raise ValueError(f"{source}: expected a save_to_disk folder, .parquet, .arrow, .jsonl or .json")


def _contexts(row: Mapping[str, Any]) -> list[str] | None:
    for name in ("contexts", "context", "reference_contexts"):
        value = row.get(name)
        if isinstance(value, str):
            return [value]
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return list(value)
    return None if any(name in row for name in ("contexts", "context", "reference_contexts")) else []


def _answers(row: Mapping[str, Any]) -> list[GoldAnswer]:
    value = row.get("answers", row.get("answer"))
    if isinstance(value, dict):
        texts = value.get("text") or []
        starts = value.get("answer_start") or [None] * len(texts)
        return [GoldAnswer(str(t), s if isinstance(s, int) else None) for t, s in zip(texts, starts)]
    if isinstance(value, str):
        return [GoldAnswer(value)] if value else []
    out = []
    for item in value if isinstance(value, list) else []:
        if isinstance(item, str):
            out.append(GoldAnswer(item))
        elif isinstance(item, dict) and isinstance(item.get("text"), str):
            start = item.get("answer_start")
            out.append(GoldAnswer(item["text"], start if isinstance(start, int) else None))
    return out


def _evalkit_record(row: Mapping[str, Any], qid: str, question: str) -> dict[str, Any] | None:
    if "evidence_mode" not in row or "evidence" not in row:
        return None
    tags = row.get("tags")
    if isinstance(tags, str):
        try:
            tags = json.loads(tags)
        except json.JSONDecodeError:
            tags = {"tags": tags}
    return {
        "id": qid,
        "question": question,
        "answers": row.get("answers"),
        "answerable": row.get("answerable"),
        "evidence": row.get("evidence"),
        "evidence_mode": row.get("evidence_mode"),
        "source_passage": row.get("source_passage"),
        "tags": tags if isinstance(tags, dict) else {},
    }


def _context_documents(rows: Sequence[tuple[int, dict[str, Any]]]) -> tuple[Document, ...]:
    """One document per distinct context, named by title and content hash."""
    documents: dict[str, Document] = {}
    for _, row in rows:
        for context in _contexts(row) or []:
            digest = hashlib.sha256(context.encode("utf-8")).hexdigest()[:10]
            title = str(row.get("title") or "")
            doc_id = f"{safe_name(title, 60)}__{digest}" if title else f"ctx-{digest}"
            if doc_id not in documents and context.strip():
                documents[doc_id] = Document(doc_id, context, f"docs/{doc_id}.md", title or doc_id)
    return tuple(documents.values())


def _row(
    number: int, row: Mapping[str, Any], source: Path, documents: Mapping[str, Document], locator: Locator, lang: str
) -> Anchored:
    where = f"{source}:{number}"
    question = row.get("question", row.get("user_input"))
    if not isinstance(question, str) or not question.strip():
        return Anchored(None, (f"{where}: field 'question': missing or empty; row skipped",))
    qid = str(row.get("id") or f"hf-{number:05d}")
    done, notes = record_first(_evalkit_record(row, qid, question), number, source, documents, "contexts")
    if done is not None:
        return done
    contexts = _contexts(row)
    if contexts is None:
        return Anchored(None, (f"{where}: field 'contexts': expected a string or a list of strings; row skipped",))
    tags: dict[str, Any] = {"source": "hf"}
    if lang:
        tags["lang"] = lang
    if isinstance(row.get("title"), str) and row["title"]:
        tags["source_title"] = row["title"]
    anchored = from_contexts(
        where=where,
        qid=qid,
        question=question,
        answers=_answers(row),
        contexts=contexts,
        field="contexts",
        locator=locator,
        documents=documents,
        tags=tags,
        number=number,
        source=source,
    )
    return Anchored(anchored.question, anchored.reports, notes + anchored.notes)


def import_hf(
    path: str | Path, documents: Sequence[Document] | None = None, lang: str = "", split: str = ""
) -> ImportResult:
    """Labelled questions from a Hugging Face dataset, anchored in ``documents`` (or in its own contexts)."""
    source = Path(path)
    rows = read_table(source, split)
    corpus = tuple(documents) if documents is not None else _context_documents(rows)
    by_id = {doc.doc_id: doc for doc in corpus}
    locator = build_locator(corpus)
    anchored = ((number, _row(number, row, source, by_id, locator, lang)) for number, row in rows)
    return collect(corpus, anchored, source)
