"""The annotation state on disk: every edit written atomically, under a lock, before the page hears "saved".

Files in the set's folder:

- ``annotations.json``: every decision (:class:`~evalkit.curate.annotate.entries.Entry`
  by question id), an undo history, the labels ``questions.jsonl`` held for
  queued questions before annotation began (``base``), and the last
  question touched (the resume point);
- ``questions.jsonl``: derived from it: the lines of questions that are not
  in the queue (kept verbatim, in order), then each queued question that is
  labelled or marked unanswerable, in queue order, written by the labelled
  set's own writer (:func:`evalkit.labels.write.question_record`) and checked
  by the loader's own rules before it is written.

One edit: take the lock (a thread lock, and ``flock`` on ``.annotate.lock``
so two servers on one set also queue), read the state from disk, apply the
edit, write ``annotations.json`` (temporary file, fsync, rename), then
``questions.jsonl`` the same way, release. Killing the process at any
instant leaves both files whole; when it falls between the two renames,
opening the store again rewrites ``questions.jsonl`` from the state, so an
edit the page was told is saved is never lost.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.curate.annotate.entries import EditError, Entry, apply_edit, entry_from_json, entry_json, question_line
from evalkit.curate.queue import QUEUE, QueueItem, atomic_write_text, read_queue, write_queue
from evalkit.labels.history import remember
from evalkit.labels.load import parse_question
from evalkit.labels.parse import load_documents
from evalkit.records import Document, Span

__all__ = ["STATE", "AnnotationStore", "EditError", "StoreError"]

STATE = "annotations.json"
LOCK = ".annotate.lock"
QUESTIONS = "questions.jsonl"
MAX_HISTORY = 2000
_THREAD_LOCKS: dict[Path, threading.Lock] = {}
_GUARD = threading.Lock()


class StoreError(ValueError):
    """The set cannot be annotated (no documents, an unreadable state file); one line each."""


@dataclass(frozen=True)
class _State:
    entries: Mapping[str, Entry]
    history: tuple[tuple[str, Entry], ...]
    base: Mapping[str, dict[str, Any]]
    last: str


def _thread_lock(root: Path) -> threading.Lock:
    with _GUARD:
        return _THREAD_LOCKS.setdefault(root.resolve(), threading.Lock())


class AnnotationStore:
    """The annotation state of one labelled set's folder."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise StoreError(f"{self.root}: labelled set folder does not exist")
        self.problems: list[str] = []
        documents = load_documents(self.root, self.problems, [])
        if not documents:
            raise StoreError(f"{self.root}: no readable documents (docs.jsonl or docs/)")
        self.documents: Mapping[str, Document] = documents
        # The documents as the page labels them, kept for reanchor (a note only when the set is read-only).
        note = remember(self.root, documents.values())
        if note:
            self.problems.append(note)
        self._queue_stamp: tuple[int, int] | None = (-1, -1)
        self._items: tuple[QueueItem, ...] = ()
        with self._locked():
            if not (self.root / QUEUE).is_file() and self._items_from_questions():
                # A set labelled before: its questions become the queue, so a skipped one stays queued.
                write_queue(self.root, self._items_from_questions())
            self._write(self._read())  # repairs questions.jsonl if a kill fell between the two renames

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with _thread_lock(self.root), open(self.root / LOCK, "a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    # ----- the queue -------------------------------------------------------------------------------------------
    @property
    def items(self) -> tuple[QueueItem, ...]:
        """The questions to label: ``queue.jsonl``, or without one, the questions of ``questions.jsonl``."""
        path = self.root / QUEUE
        stamp = (path.stat().st_mtime_ns, path.stat().st_size) if path.is_file() else None
        if stamp != self._queue_stamp:
            items, problems = read_queue(self.root, self.documents)
            self.problems.extend(p for p in problems if p not in self.problems)
            self._items = items
            self._queue_stamp = stamp
        return self._items

    def _items_from_questions(self) -> tuple[QueueItem, ...]:
        items = []
        for record in self._question_records():
            if (
                isinstance(record, dict)
                and isinstance(record.get("id"), str)
                and isinstance(record.get("question"), str)
            ):
                proposed = _proposed(record.get("evidence"), self.documents)
                items.append(QueueItem(record["id"], record["question"], record.get("tags") or {}, (), (), proposed))
        return tuple(items)

    def item(self, qid: str) -> QueueItem:
        for item in self.items:
            if item.id == qid:
                return item
        raise EditError(f"no question {qid!r} in this set's queue")

    # ----- reading and writing the state ------------------------------------------------------------------------
    def _question_records(self) -> list[dict[str, Any] | str]:
        """Each line of questions.jsonl: the parsed object, or the raw text of a line that is not one."""
        path = self.root / QUESTIONS
        if not path.is_file():
            return []
        records: list[dict[str, Any] | str] = []
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                value = line
            records.append(value if isinstance(value, dict) else line)
        return records

    def _read(self) -> _State:
        path = self.root / STATE
        try:
            raw = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
            entries = {qid: entry_from_json(e) for qid, e in (raw.get("entries") or {}).items()}
            history = tuple((h["qid"], entry_from_json(h["before"])) for h in raw.get("history") or ())
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise StoreError(f"{path}: unreadable annotation state ({exc}); restore it or move it away") from None
        base = dict(raw.get("base") or {})
        queued = {item.id for item in self.items}
        for record in self._question_records():  # labels that were there before the queue named them
            qid = record.get("id") if isinstance(record, dict) else None
            if isinstance(record, dict) and qid in queued and qid not in entries and qid not in base:
                base[str(qid)] = record
        return _State(entries, history, base, str(raw.get("last") or ""))

    def _write(self, state: _State) -> None:
        payload = {
            "version": 1,
            "entries": {qid: entry_json(e) for qid, e in state.entries.items()},
            "history": [{"qid": qid, "before": entry_json(e)} for qid, e in state.history[-MAX_HISTORY:]],
            "base": dict(state.base),
            "last": state.last,
        }
        atomic_write_text(self.root / STATE, json.dumps(payload, ensure_ascii=False, indent=1) + "\n")
        atomic_write_text(self.root / QUESTIONS, self._questions_text(state))

    def _questions_text(self, state: _State) -> str:
        queued = {item.id for item in self.items}
        lines: list[str] = []
        for record in self._question_records():
            if isinstance(record, str):
                lines.append(record)  # not ours to fix: validate names it
            elif record.get("id") not in queued:
                lines.append(json.dumps(record, ensure_ascii=False))
        for item in self.items:
            entry = state.entries.get(item.id, Entry())
            line = question_line(item, entry, self.documents) if entry.status != "untouched" else None
            if line is None and entry.status == "untouched":
                line = state.base.get(item.id)
            if line is not None:
                lines.append(json.dumps(line, ensure_ascii=False))
        return "".join(line + "\n" for line in lines)

    # ----- edits ----------------------------------------------------------------------------------------------
    def edit(self, qid: str, op: str, args: Mapping[str, Any] | None = None) -> Entry:
        """Apply one edit to the state on disk and save; returns the question's new entry."""
        item = self.item(qid)
        now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        with self._locked():
            state = self._read()
            before = state.entries.get(qid, Entry())
            if op == "undo":
                past = [i for i, (hid, _) in enumerate(state.history) if hid == qid]
                if not past:
                    raise EditError("nothing to undo for this question")
                after = state.history[past[-1]][1]
                history = state.history[: past[-1]] + state.history[past[-1] + 1 :]
            else:
                after = apply_edit(before, op, args or {}, item, self.documents, now)
                history = (*state.history, (qid, before))
            line = question_line(item, after, self.documents)
            if line is not None:
                _, problems = parse_question(line, 0, self.root / QUESTIONS, self.documents)
                if problems:
                    raise EditError("; ".join(problems))
            entries = {**state.entries, qid: after}
            self._write(_State(entries, history, state.base, qid))
        return after

    def snapshot(self) -> tuple[Mapping[str, Entry], str, Mapping[str, dict[str, Any]]]:
        """Every entry, the last question touched, and the earlier labels of untouched queued questions."""
        with self._locked():
            state = self._read()
        return state.entries, state.last, state.base

    def labelled_questions(self) -> list[tuple[str, str]]:
        """``(id, question)`` of every question in questions.jsonl (for the duplicate check)."""
        return [
            (str(r.get("id")), str(r.get("question")))
            for r in self._question_records()
            if isinstance(r, dict) and isinstance(r.get("question"), str)
        ]


def _proposed(value: Any, documents: Mapping[str, Document]) -> tuple[Span, ...]:
    spans = []
    for item in value if isinstance(value, list) else ():
        if isinstance(item, dict) and item.get("doc_id") in documents:
            text = documents[item["doc_id"]].text
            start, end = item.get("start"), item.get("end")
            if isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text):
                spans.append(Span(item["doc_id"], start, end, text[start:end]))
    return tuple(spans)
