"""Writing what ``labels reanchor`` found: the report, then the set, each file atomically (pure texts, I/O last).

:func:`apply_reanchor` writes, each file atomically (temporary file, fsync,
rename) under the annotation page's lock:

1. the report (``reanchor-<UTC time>.json`` in the set, or ``--report``):
   every span looked at, old -> new offsets, the step that decided, counts,
   and the original line of every question taken out of ``questions.jsonl``;
2. ``annotations.json``, when the set was labelled in the page: moved spans
   replaced there too, and the page's decisions on queued questions dropped
   (else the page would write their old spans back);
3. ``queue.jsonl``: each question with an ambiguous, lost or proposed span,
   its spans still valid and each unresolved span's one candidate place
   proposed (``a`` in the page accepts them; the answer of a one-span
   question becomes the accepted span's text), tagged ``reanchor``
   (``lost``, ``ambiguous`` or ``proposed``), ``reanchor_note`` (which span,
   why, the places) and, for a typo fixed inside an answer,
   ``reanchor_answer`` (old -> proposed answer, side by side); proposals of
   other items that moved are moved too;
4. ``questions.jsonl``: a question whose every looked-at evidence span was
   settled (moved or unchanged) gets its moved spans rewritten on its own
   line (a ``source_passage`` span not settled is dropped: it is no gold); a
   queued one leaves; every other line is kept byte for byte. A question
   leaves whole rather than losing one span: without it an ``all``
   question, or one with a single span, would be scored against gold that is
   no longer its own;
5. ``docs.jsonl``: ``sha256`` and ``n_chars`` of every document whose labels
   were all settled, brought up to date, and its text kept in ``.history/``
   (:mod:`evalkit.labels.history`) for the next time it changes.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from evalkit.curate.queue import QUEUE, atomic_write_text, queue_record
from evalkit.curate.reanchor.fuzzy import FUZZY_FLOOR
from evalkit.curate.reanchor.plan import QUESTIONS, Reanchoring, raw_lines
from evalkit.labels.history import remember
from evalkit.labels.load import readable_set
from evalkit.labels.parse import STALE
from evalkit.records import Document

__all__ = ["apply_reanchor", "format_reanchor", "reanchor_hint", "report_record"]

DOCS, STATE, LOCK = "docs.jsonl", "annotations.json", ".annotate.lock"
MAX_LISTED = 50
"""Spans listed one per line on the console (the report file lists all)."""


def report_record(plan: Reanchoring, when: dt.datetime) -> dict[str, Any]:
    """The report file's content."""
    return {
        "set": plan.root.resolve().name,
        "when": when.isoformat(timespec="seconds"),
        "fuzzy_floor": FUZZY_FLOOR,
        "counts": plan.counts(),
        "spans": [f.to_dict() for f in plan.found],
        "unchecked": dict(plan.unchecked),
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
    for raw in raw_lines(path) if path.is_file() else []:
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
    for number, raw in enumerate(raw_lines(root / QUESTIONS), start=1):
        if number not in plan.lines:
            try:
                out.append(raw.decode("utf-8"))  # byte for byte (a first-line BOM included)
            except UnicodeDecodeError:
                raise ValueError(f"{root / QUESTIONS}:{number}: not UTF-8; fix it first (validate names it)") from None
        elif plan.lines[number] is not None:
            out.append(str(plan.lines[number]))
    return "".join(out)


def _fresh(doc: Document) -> dict[str, Any]:
    return {"n_chars": len(doc.text), "sha256": hashlib.sha256(doc.text.encode("utf-8")).hexdigest()}


def _docs_text(root: Path, plan: Reanchoring, documents: Mapping[str, Document]) -> str | None:
    """``docs.jsonl`` with the touched documents' sha256 and n_chars refreshed (``None``: nothing to change)."""
    path = root / DOCS
    if not path.is_file():
        return None
    out, changed = [], False
    for raw in raw_lines(path):
        line = raw.decode("utf-8")
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        doc = documents.get(record.get("doc_id")) if isinstance(record, dict) else None
        if isinstance(record, dict) and doc is not None and doc.doc_id in plan.documents:
            fresh = _fresh(doc)
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


def apply_reanchor(plan: Reanchoring, report: Path, when: dt.datetime) -> str:
    """Write the report, then annotations.json, queue.jsonl, questions.jsonl and docs.jsonl (each atomically).

    Every text is made before the first is written: a file that cannot be read writes nothing. Killed
    between two writes, running again finishes the work (a queued question still stale is queued in place).
    Returns a note when the documents' new texts could not be kept in ``.history/`` ("" otherwise).
    """
    root = plan.root
    documents = {d.doc_id: d for d in readable_set(root).documents}
    with _locked(root):
        if hashlib.sha256(b"".join(raw_lines(root / QUESTIONS))).hexdigest() != plan.digest:
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
    touched = [documents[d] for d in plan.documents if d in documents]
    return remember(root, touched, {d.doc_id: _fresh(d)["sha256"] for d in touched})


def format_reanchor(plan: Reanchoring, verbose: bool = False) -> str:
    """The console report: counts, then one line per span (what moved where, by which step; what did not)."""
    c = plan.counts()
    lines = [
        f"reanchor {plan.root}: {c['looked_at']} span(s) looked at ({c['stale']} stale): {c['unchanged']} unchanged "
        f"(checked), {c['moved']} moved (context {c['context']}, exact {c['exact']}, normalised {c['normalised']}, "
        f"fuzzy {c['fuzzy']}), {c['ambiguous']} ambiguous, {c['lost']} lost, {c['proposed']} proposed "
        f"(fuzzy floor {FUZZY_FLOOR:.0%})"
    ]
    shown = [f for f in plan.found if f.status != "unchanged"]
    listed = shown if verbose else shown[:MAX_LISTED]
    for f in listed:
        span = f.span
        head = f"  {span.question_id} {span.where} {span.doc_id} [{span.start}:{span.end}]"
        if f.status == "moved":
            similar = f" {f.similarity:.2f}" if f.method == "fuzzy" else ""
            lines.append(f"{head} -> [{f.start}:{f.end}] {f.method}{similar}")
        elif f.status == "proposed":
            lines.append(f"{head} proposed [{f.start}:{f.end}] {f.similarity:.2f}: {f.reason}")
        else:
            lines.append(f"{head} {f.status}: {f.reason}" + "".join(f" [{s}:{e}]" for s, e in f.places))
    if len(listed) < len(shown):
        lines.append(f"  … {len(shown) - len(listed)} more (--verbose, or the report file)")
    if plan.unchecked:
        lines.append(
            f"{c['unchecked']} span(s) in {len(plan.unchecked)} changed document(s) still read right but were not "
            "checked: the documents as labelled are unknown (give --before OLD; `labels validate` keeps a copy "
            "from now on)"
        )
    lines.append(
        f"{c['questions_rewritten']} question(s) rewritten in questions.jsonl; {c['questions_queued']} moved to "
        "queue.jsonl (ambiguous, lost or proposed: never guessed)"
    )
    lines.extend(plan.kept)
    return "\n".join(lines)


def reanchor_hint(problems: Sequence[str], path: object) -> list[str]:
    """One line pointing at ``labels reanchor`` when ``problems`` hold stale labels (else none)."""
    stale = sum(STALE in line for line in problems)
    if not stale:
        return []
    return [
        f"{stale} stale label(s): if the documents changed but still hold the labelled text, "
        f"`python -m evalkit.labels reanchor {path}` finds it again"
    ]
