"""Reading a production query log (JSONL or CSV) into frozen entries; each bad row is one line and is skipped.

A row holds the question text and a timestamp, and optionally who asked
(``user``, ``role``), whether it failed (``error``, ``feedback``,
``failure``) and what production returned (``returned``: document ids,
chunk ids ``doc#start-end``, or ``{"doc_id", "start", "end"}`` objects).
Several spellings of each field are accepted, as logs differ:

=========== ===========================================================
field       accepted names
=========== ===========================================================
question    ``question``, ``query``, ``text``, ``q``
timestamp   ``timestamp``, ``ts``, ``time``, ``date`` (ISO 8601, or Unix seconds)
user        ``user``, ``user_id``
role        ``role``
error       ``error`` (true, or a non-empty message)
feedback    ``feedback``, ``rating`` (-1/0/1, up/down, good/bad, thumbs_up/thumbs_down)
failure     ``failure``, ``failed`` (true/false)
returned    ``returned``, ``doc_ids``, ``chunks``, ``retrieved`` (a list; in CSV a JSON list or ``;``-separated)
=========== ===========================================================

A row fails when ``error`` is set, the feedback is negative, or ``failure``
is true. A row that cannot be used (no question, no readable timestamp, an
unknown feedback value, a malformed ``returned``) is reported as
``file:line: field 'name': what`` and skipped; every other row is kept.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.labels.fields import has_surrogate, visible
from evalkit.labels.parse import jsonl_lines
from evalkit.records import Span

__all__ = ["LogEntry", "LogReading", "LoggedHit", "read_query_log"]

_NAMES = {
    "question": ("question", "query", "text", "q"),
    "timestamp": ("timestamp", "ts", "time", "date"),
    "user": ("user", "user_id"),
    "role": ("role",),
    "error": ("error",),
    "feedback": ("feedback", "rating"),
    "failure": ("failure", "failed"),
    "returned": ("returned", "doc_ids", "chunks", "retrieved"),
}
_NEGATIVE = {"-1", "0", "down", "thumbs_down", "negative", "bad", "no", "wrong", "unhelpful"}
_POSITIVE = {"1", "up", "thumbs_up", "positive", "good", "yes", "helpful", "none", ""}
_TRUE = {"true", "1", "yes", "y"}
_FALSE = {"false", "0", "no", "n", ""}
CHUNK_ID = re.compile(r"^(?P<doc>.+)#(?P<start>\d+)-(?P<end>\d+)$")
"""A chunk id ``doc#start-end``: character offsets into the document (logs and traces alike)."""


@dataclass(frozen=True)
class LoggedHit:
    """One item production returned, as its log holds it (a trace's retrieved document)."""

    doc_id: str
    """The document id, ``""`` when the log gives only the content."""
    start: int = 0
    end: int = 0
    """Offsets of a chunk id ``doc#start-end``; ``0, 0``: the whole document (or only its content is known)."""
    text: str = ""
    """The returned content when the log records it (anchored to a span of the document where it occurs)."""
    score: float | None = None
    """Production's own score, when logged."""


@dataclass(frozen=True)
class LogEntry:
    """One usable row of a query log."""

    line: int
    """1-based line of the row in the file (CSV: the row's last physical line)."""
    question: str
    """The question as the user typed it."""
    timestamp: dt.datetime
    """When it was asked (UTC; a naive timestamp is read as UTC)."""
    failed: bool
    """An error, negative feedback or an explicit failure flag."""
    user: str = ""
    role: str = ""
    returned: tuple[Span, ...] = ()
    """What production returned: a whole document is ``Span(doc_id, 0, 0)``; a chunk carries its offsets."""
    hits: tuple[LoggedHit, ...] = ()
    """Production's ranked hits with score and content when the log has them (traces); else one per ``returned``."""
    session: str = ""


@dataclass(frozen=True)
class LogReading:
    """The usable rows of a log, and one line for each row that was skipped."""

    path: Path
    entries: tuple[LogEntry, ...]
    problems: tuple[str, ...]
    rows: int
    """Non-blank rows read (usable plus skipped)."""


def _pick(row: Mapping[str, Any], field: str) -> tuple[str, Any]:
    """``(name, value)`` of the first accepted spelling present in the row, else ``(field, None)``."""
    for name in _NAMES[field]:
        if name in row and row[name] is not None:
            return name, row[name]
    return field, None


def parse_timestamp(value: Any) -> dt.datetime | None:
    """ISO 8601 text (``Z`` allowed) or Unix seconds, as an aware UTC datetime; None when unreadable."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) or (isinstance(value, str) and re.fullmatch(r"\d{9,11}(\.\d+)?", value)):
        try:
            return dt.datetime.fromtimestamp(float(value), tz=dt.UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        stamp = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return stamp.replace(tzinfo=dt.UTC) if stamp.tzinfo is None else stamp.astimezone(dt.UTC)


def _flag(value: Any, truthy: set[str], falsy: set[str]) -> bool | None:
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, int | float):
        text = str(int(value)) if float(value).is_integer() else str(value)
    else:
        text = str(value).strip().casefold()
    if text in truthy:
        return True
    if text in falsy:
        return False
    return None


def _returned(value: Any) -> tuple[tuple[Span, ...], str]:
    """The spans production returned, or why the value is unusable."""
    if value is None or value == "":
        return (), ""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                return (), f"not a JSON list ({exc.msg})"
        else:
            value = [part.strip() for part in re.split(r"[;|]", text) if part.strip()]
    if not isinstance(value, list):
        return (), "expected a list of document ids, chunk ids or {doc_id, start, end} objects"
    spans = []
    for item in value:
        if isinstance(item, str) and item:
            match = CHUNK_ID.match(item)
            spans.append(Span(match["doc"], int(match["start"]), int(match["end"])) if match else Span(item, 0, 0))
        elif isinstance(item, dict) and isinstance(item.get("doc_id"), str):
            start, end = item.get("start", 0), item.get("end", 0)
            if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (start, end)):
                return (), f"'start' and 'end' of {item['doc_id']!r} must be non-negative integers"
            spans.append(Span(item["doc_id"], start, end))
        else:
            return (), f"item {item!r} is neither a document id, a chunk id nor a {{doc_id, start, end}} object"
    return tuple(spans), ""


def parse_row(row: Mapping[str, Any], path: Path, line: int) -> tuple[LogEntry | None, str]:
    """One row as an entry, or ``(None, "file:line: field 'name': what")``."""
    where = f"{path}:{line}"
    name, question = _pick(row, "question")
    if not isinstance(question, str) or not visible(question) or has_surrogate(question):
        return None, f"{where}: field '{name}': missing or empty question text"
    name, raw_time = _pick(row, "timestamp")
    stamp = parse_timestamp(raw_time)
    if stamp is None:
        return None, f"{where}: field '{name}': {raw_time!r} is not a timestamp (ISO 8601 or Unix seconds)"
    name, feedback = _pick(row, "feedback")
    # A boolean feedback is "was it helpful": false is the negative one.
    negative = (not feedback) if isinstance(feedback, bool) else _flag(feedback, _NEGATIVE, _POSITIVE)
    if negative is None:
        return None, f"{where}: field '{name}': unknown feedback {feedback!r} (use -1/0/1, up/down, good/bad)"
    name, failure = _pick(row, "failure")
    flagged = _flag(failure, _TRUE, _FALSE)
    if flagged is None:
        return None, f"{where}: field '{name}': expected true or false, got {failure!r}"
    _, error = _pick(row, "error")
    errored = _flag(error, _TRUE, _FALSE)
    errored = bool(str(error).strip()) if errored is None else errored  # an error message counts as an error
    name, raw_returned = _pick(row, "returned")
    returned, why = _returned(raw_returned)
    if why:
        return None, f"{where}: field '{name}': {why}"
    user, role = (str(_pick(row, key)[1] or "") for key in ("user", "role"))
    line = int(where.rsplit(":", 1)[1])
    hits = tuple(LoggedHit(s.doc_id, s.start, s.end) for s in returned)
    failed = bool(negative or flagged or errored)
    entry = LogEntry(line, " ".join(question.split()), stamp, failed, user, role, returned, hits)
    return entry, ""


def _csv_rows(path: Path) -> Iterator[tuple[int, dict[str, Any] | str]]:
    with open(path, encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle)
        for row in reader:
            if None in row:
                yield reader.line_num, f"{len(row[None])} value(s) beyond the header's {len(reader.fieldnames or [])}"
                continue
            if any((v or "").strip() for v in row.values()):
                yield reader.line_num, {k.strip(): v for k, v in row.items() if k is not None}


def read_query_log(path: str | Path) -> LogReading:
    """Every usable row of a JSONL or CSV query log (by suffix: ``.csv`` is CSV, anything else JSONL), or of an
    OTLP JSON trace export (by content or a ``.otlp.json``/``.otlp.jsonl`` name: :mod:`evalkit.curate.traces`).

    Raises ``OSError`` when the file cannot be opened and ``ValueError`` when a CSV is not UTF-8.
    """
    source = Path(path)
    if not source.is_file():
        raise FileNotFoundError(f"{source}: query log not found")
    from evalkit.curate.traces import is_otlp, read_trace_log  # traces build this module's entries

    if is_otlp(source):
        return read_trace_log(source)
    rows = _csv_rows(source) if source.suffix.lower() == ".csv" else jsonl_lines(source)
    entries: list[LogEntry] = []
    problems: list[str] = []
    count = 0
    try:
        for number, row in rows:
            count += 1
            if isinstance(row, str):
                problems.append(f"{source}:{number}: {row}")
                continue
            entry, problem = parse_row(row, source, number)
            if entry is None:
                problems.append(problem)
            else:
                entries.append(entry)
    except UnicodeDecodeError as exc:
        raise ValueError(f"{source}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except csv.Error as exc:
        raise ValueError(f"{source}: unreadable CSV ({exc})") from None
    return LogReading(source, tuple(entries), tuple(problems), count)
