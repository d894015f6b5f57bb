"""``labels reanchor``: stale spans found again in their changed documents; the set rewritten, the rest queued.

:func:`plan_reanchor` reads a labelled set folder and asks
:func:`evalkit.labels.reanchor.find_again` where each stale span's text is
now (the reader's rule decides what is stale). :func:`apply_reanchor` then
writes, each file atomically (temporary file, fsync, rename) under the
annotation page's lock:

1. the report (``reanchor-<UTC time>.json`` in the set, or ``--report``):
   every stale span, old -> new offsets, the step that found it, counts, and
   the original line of every question taken out of ``questions.jsonl``;
2. ``annotations.json``, when the set was labelled in the page: moved spans
   replaced there too, and the page's decisions on queued questions dropped
   (else the page would write their stale spans back);
3. ``queue.jsonl``: each question with an ambiguous or lost span, its spans
   still valid proposed (``a`` in the page accepts them), tagged
   ``reanchor`` (``ambiguous`` or ``lost``) and ``reanchor_note`` (which span,
   why, the places), in place of a queued item of its id; proposals of other
   items that moved are moved too;
4. ``questions.jsonl``: a question whose every stale evidence span moved
   gets their ``start``, ``end`` and ``text`` rewritten on its own line (a
   ``source_passage`` span not found again is dropped: it is no gold); a
   queued one leaves; every other line is kept byte for byte. A question leaves whole
   rather than losing one span: without it an ``all`` question, or one with
   a single span, would be scored against gold that is no longer its own;
5. ``docs.jsonl``: ``sha256`` and ``n_chars`` of every document that had a
   stale span, brought up to date (its labels were checked against that
   text); its other fields and lines are kept.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import json
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evalkit.curate.queue import QUEUE, QueueItem, atomic_write_text, queue_record
from evalkit.labels.fields import visible
from evalkit.labels.load import read_documents
from evalkit.labels.parse import jsonl_lines, load_documents
from evalkit.labels.reanchor import FUZZY_FLOOR, Found, Searchable, find_again, rewritten, stale_spans
from evalkit.records import Document, Span

__all__ = ["Reanchoring", "apply_reanchor", "format_reanchor", "plan_reanchor", "report_record"]

QUESTIONS, DOCS, STATE, LOCK = "questions.jsonl", "docs.jsonl", "annotations.json", ".annotate.lock"
MAX_LISTED = 50
"""Spans listed one per line on the console (the report file lists all)."""


@dataclass(frozen=True)
class Reanchoring:
    """What reanchoring a set found and what it would write."""

    root: Path
    found: tuple[Found, ...]
    lines: Mapping[int, str | None] = field(default_factory=dict)
    """Line number -> its new text (``None``: the question leaves for the queue); other lines stay."""
    queued: tuple[QueueItem, ...] = ()
    originals: Mapping[str, str] = field(default_factory=dict)
    """Queued question id -> its original ``questions.jsonl`` line."""
    kept: tuple[str, ...] = ()
    """Lines with an unresolved span that could not be queued (no id or no question text): left as they are."""
    documents: tuple[str, ...] = ()
    """Documents that had a stale span (their docs.jsonl sha256 and n_chars are refreshed)."""
    digest: str = ""
    """sha256 of ``questions.jsonl`` as read: :func:`apply_reanchor` refuses a file changed since."""

    def counts(self) -> dict[str, int]:
        status = Counter(f.status for f in self.found)
        method = Counter(f.method for f in self.found if f.status == "moved")
        return {
            "stale": len(self.found),
            "moved": status["moved"],
            "exact": method["exact"],
            "normalised": method["normalised"],
            "fuzzy": method["fuzzy"],
            "context": method["context"],
            "ambiguous": status["ambiguous"],
            "lost": status["lost"],
            "questions_rewritten": sum(1 for v in self.lines.values() if v is not None),
            "questions_queued": len(self.queued),
        }


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _raw_lines(path: Path) -> list[bytes]:
    """Every line of ``path`` with its ending, numbered as :func:`jsonl_lines` numbers them (from 1)."""
    with open(path, "rb") as handle:
        return list(handle)


def _read(root: Path) -> tuple[dict[str, Document], list[tuple[int, dict[str, Any]]]]:
    if not root.is_dir():
        raise ValueError(f"{root}: labelled set folder does not exist")
    if not (root / QUESTIONS).is_file():
        raise ValueError(f"{root / QUESTIONS}: missing (a labelled set needs questions.jsonl)")
    problems: list[str] = []
    documents = load_documents(root, problems, [])
    if not documents:
        raise ValueError(problems[0] if problems else f"{root}: no documents (docs.jsonl or docs/)")
    records = [(n, r) for n, r in jsonl_lines(root / QUESTIONS) if isinstance(r, dict)]
    return documents, records


def _valid_evidence(record: Mapping[str, Any], documents: Mapping[str, Document]) -> tuple[Span, ...]:
    """The evidence spans of ``record`` whose text lies at their offsets (what the page may propose)."""
    spans = []
    for item in record.get("evidence") or ():
        if isinstance(item, dict) and item.get("doc_id") in documents:
            start, end, text = item.get("start"), item.get("end"), documents[item["doc_id"]].text
            inside = isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text)
            if inside and item.get("text") in (None, text[start:end]):
                spans.append(Span(item["doc_id"], start, end, text[start:end]))
    return tuple(spans)


def _note(found: Found) -> str:
    span = found.span
    places = ", ".join(f"[{s}:{e}]" for s, e in found.places)
    where = f"{span.where} {span.doc_id}[{span.start}:{span.end}] {_clip(span.text)!r}"
    return f"{where}: {found.status}: {found.reason}" + (f" ({places})" if places else "")


def _clip(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _queue_item(
    record: Mapping[str, Any], after: Mapping[str, Any], unresolved: Sequence[Found], docs: Mapping[str, Document]
) -> QueueItem:
    tags = dict(record.get("tags") or {}) if isinstance(record.get("tags"), dict) else {}
    tags["reanchor"] = "ambiguous" if any(f.status == "ambiguous" for f in unresolved) else "lost"
    tags["reanchor_note"] = "; ".join(_note(f) for f in unresolved)
    return QueueItem(str(record["id"]), str(record["question"]), tags, proposed=_valid_evidence(after, docs))


def _passage_dropped(found: Found) -> Found:
    return replace(found, reason=f"{found.reason}; the source passage is dropped (it is no gold)")


def plan_reanchor(root: str | Path, before: str | Path | None = None) -> Reanchoring:
    """Every stale span of the set at ``root`` looked for again, and the lines to write; raises ``ValueError``.

    ``before``: the documents as they were labelled (a labelled set or a folder of files, read as
    ``import --docs`` reads one), for the context step of ambiguous spans.
    """
    root = Path(root)
    documents, records = _read(root)
    old = {d.doc_id: d.text for d in read_documents(before)} if before is not None else {}
    raw = _raw_lines(root / QUESTIONS)
    searchable: dict[str, Searchable] = {}
    found: list[Found] = []
    lines: dict[int, str | None] = {}
    queued: list[QueueItem] = []
    originals: dict[str, str] = {}
    kept: list[str] = []
    for number, record in records:
        stale = stale_spans(record, number, documents)
        if not stale:
            continue
        results = []
        for span in stale:
            document = searchable.setdefault(span.doc_id, Searchable(documents[span.doc_id].text))
            results.append(find_again(document, span, old.get(span.doc_id)))
        # A source passage is no gold (the sweep never reads it): one not found again is dropped, not queued.
        results = [_passage_dropped(f) if f.status != "moved" and f.span.field != "evidence" else f for f in results]
        found.extend(results)
        passages = [f for f in results if f.status != "moved" and f.span.field != "evidence"]
        after = rewritten(record, [f for f in results if f.status == "moved"], passages)
        unresolved = [f for f in results if f.status != "moved" and f.span.field == "evidence"]
        if not unresolved:
            lines[number] = json.dumps(after, ensure_ascii=False) + "\n"
        elif (
            isinstance(record.get("id"), str)
            and isinstance(record.get("question"), str)
            and visible(record["question"])
        ):
            lines[number] = None
            queued.append(_queue_item(record, after, unresolved, documents))
            originals[record["id"]] = raw[number - 1].decode("utf-8-sig" if number == 1 else "utf-8").rstrip("\n")
        else:
            kept.append(f"{root / QUESTIONS}:{number}: no id or question text to queue; line left as it is")
    touched = tuple(dict.fromkeys(f.span.doc_id for f in found))
    digest = hashlib.sha256(b"".join(raw)).hexdigest()
    return Reanchoring(root, tuple(found), lines, tuple(queued), originals, tuple(kept), touched, digest)


def report_record(plan: Reanchoring, when: dt.datetime) -> dict[str, Any]:
    """The report file's content."""
    return {
        "set": plan.root.resolve().name,
        "when": when.isoformat(timespec="seconds"),
        "fuzzy_floor": FUZZY_FLOOR,
        "counts": plan.counts(),
        "spans": [f.to_dict() for f in plan.found],
        "queued": [{"id": qid, "original_line": line} for qid, line in plan.originals.items()],
        "kept": list(plan.kept),
        "documents_refreshed": list(plan.documents),
    }


def _moves(plan: Reanchoring) -> dict[tuple[Any, ...], tuple[int, int, str]]:
    return {
        (f.span.doc_id, f.span.start, f.span.end, f.span.text): (f.start, f.end, f.text)
        for f in plan.found
        if f.status == "moved"
    }


def _replace_spans(value: Any, moves: Mapping[tuple[Any, ...], tuple[int, int, str]]) -> Any:
    """``value`` (parsed JSON) with every span object that moved replaced (a new value)."""
    if isinstance(value, list):
        return [_replace_spans(v, moves) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: _replace_spans(v, moves) for k, v in value.items()}
    key = (value.get("doc_id"), value.get("start"), value.get("end"), value.get("text"))
    if key in moves:
        out["start"], out["end"], out["text"] = moves[key]
    return out


def _annotations(root: Path, plan: Reanchoring) -> str | None:
    """The new ``annotations.json`` text (``None``: no file, or nothing to change)."""
    path = root / STATE
    if not path.is_file():
        return None
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: unreadable annotation state ({exc}); restore it or move it away") from None
    if not isinstance(state, dict):
        raise ValueError(f"{path}: expected a JSON object (the annotation page's state)")
    new = _replace_spans(state, _moves(plan))
    for section in ("entries", "base"):
        if isinstance(new.get(section), dict):
            new[section] = {k: v for k, v in new[section].items() if k not in plan.originals}
    if isinstance(new.get("history"), list):  # an undo must not bring a queued question's stale spans back
        new["history"] = [h for h in new["history"] if not (isinstance(h, dict) and h.get("qid") in plan.originals)]
    if new == state:
        return None
    return json.dumps(new, ensure_ascii=False, indent=1) + "\n"


def _queue_text(root: Path, plan: Reanchoring) -> str | None:
    """``queue.jsonl`` with moved spans replaced, each queued question's item put in (replacing one of its id).

    Lines are read raw, not through :func:`read_queue` (which drops proposals that no longer match): a
    proposal that moved is kept, moved; other lines stay byte for byte. ``None``: nothing to change.
    """
    path, moves = root / QUEUE, _moves(plan)
    new = {item.id: json.dumps(queue_record(item), ensure_ascii=False) + "\n" for item in plan.queued}
    out, changed = [], False
    for raw in _raw_lines(path) if path.is_file() else []:
        line = raw.decode("utf-8")
        try:
            record = json.loads(line)
        except ValueError:
            record = None  # not ours to fix: the page names it
        if isinstance(record, dict) and record.get("id") in new:
            line, changed = new.pop(record["id"]), True
        elif isinstance(record, dict) and _replace_spans(record, moves) != record:
            line, changed = json.dumps(_replace_spans(record, moves), ensure_ascii=False) + "\n", True
        out.append(line if line.endswith("\n") else line + "\n")
    out.extend(new.values())
    return "".join(out) if changed or new else None


def _questions_text(root: Path, plan: Reanchoring) -> str:
    out = []
    for number, raw in enumerate(_raw_lines(root / QUESTIONS), start=1):
        if number not in plan.lines:
            try:
                out.append(raw.decode("utf-8"))  # byte for byte (a first-line BOM included)
            except UnicodeDecodeError:
                raise ValueError(f"{root / QUESTIONS}:{number}: not UTF-8; fix it first (validate names it)") from None
        elif plan.lines[number] is not None:
            out.append(str(plan.lines[number]))
    return "".join(out)


def _docs_text(root: Path, plan: Reanchoring, documents: Mapping[str, Document]) -> str | None:
    """``docs.jsonl`` with the touched documents' sha256 and n_chars refreshed (``None``: nothing to change)."""
    path = root / DOCS
    if not path.is_file():
        return None
    out, changed = [], False
    for raw in _raw_lines(path):
        line = raw.decode("utf-8")
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        doc = documents.get(record.get("doc_id")) if isinstance(record, dict) else None
        if isinstance(record, dict) and doc is not None and doc.doc_id in plan.documents:
            fresh = {"n_chars": len(doc.text), "sha256": hashlib.sha256(doc.text.encode("utf-8")).hexdigest()}
            if any(record.get(k) != v for k, v in fresh.items()):
                record.update((k, v) for k, v in fresh.items() if k in record)
                line, changed = json.dumps(record, ensure_ascii=False) + "\n", True
        out.append(line)
    return "".join(out) if changed else None


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    """The annotation page's lock: a page saving at the same moment waits (and the other way round)."""
    with open(root / LOCK, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def apply_reanchor(plan: Reanchoring, report: Path, when: dt.datetime) -> None:
    """Write the report, then annotations.json, queue.jsonl, questions.jsonl and docs.jsonl (each atomically).

    Every text is made before the first is written: a file that cannot be read writes nothing. Killed
    between two writes, running again finishes the work (a queued question still stale is queued in place).
    """
    root = plan.root
    documents, _ = _read(root)
    with _locked(root):
        if _digest(root / QUESTIONS) != plan.digest:
            raise ValueError(f"{root / QUESTIONS}: changed while reanchoring (the annotation page?); run again")
        writes = [
            (report, json.dumps(report_record(plan, when), ensure_ascii=False, indent=1) + "\n"),
            (root / STATE, _annotations(root, plan)),
            (root / QUEUE, _queue_text(root, plan)),
            (root / QUESTIONS, _questions_text(root, plan) if plan.lines else None),
            (root / DOCS, _docs_text(root, plan, documents)),
        ]
        for path, text in writes:
            if text is not None:
                atomic_write_text(path, text)


def format_reanchor(plan: Reanchoring, verbose: bool = False) -> str:
    """The console report: counts, then one line per span (what moved where, by which step; what did not)."""
    c = plan.counts()
    lines = [
        f"reanchor {plan.root}: {c['stale']} stale span(s): {c['moved']} moved (exact {c['exact']}, normalised "
        f"{c['normalised']}, fuzzy {c['fuzzy']}, context {c['context']}), {c['ambiguous']} ambiguous, "
        f"{c['lost']} lost "
        f"(fuzzy floor {FUZZY_FLOOR:.0%})"
    ]
    shown = plan.found if verbose else plan.found[:MAX_LISTED]
    for f in shown:
        span = f.span
        head = f"  {span.question_id} {span.where} {span.doc_id} [{span.start}:{span.end}]"
        if f.status == "moved":
            similar = f" {f.similarity:.2f}" if f.method == "fuzzy" else ""
            lines.append(f"{head} -> [{f.start}:{f.end}] {f.method}{similar}")
        else:
            lines.append(f"{head} {f.status}: {f.reason}" + "".join(f" [{s}:{e}]" for s, e in f.places))
    if len(shown) < len(plan.found):
        lines.append(f"  … {len(plan.found) - len(shown)} more (--verbose, or the report file)")
    lines.append(
        f"{c['questions_rewritten']} question(s) rewritten in questions.jsonl; {c['questions_queued']} moved to "
        "queue.jsonl (ambiguous or lost: never guessed)"
    )
    lines.extend(plan.kept)
    return "\n".join(lines)
