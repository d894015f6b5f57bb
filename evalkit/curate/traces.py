"""Reading OTLP JSON trace exports as a query log: each retrieval span is one entry; a bad span is one line, skipped.

The file is the OTLP/JSON encoding of ``ExportTraceServiceRequest`` (``resourceSpans[].scopeSpans[].spans[]``,
attributes as ``{"key", "value": {"stringValue" | "intValue" | "doubleValue" | "boolValue" | "arrayValue" |
"kvlistValue"}}``), either one request per line (the OpenTelemetry Collector's ``fileexporter`` and the SDKs'
file exporters) or one JSON document. snake_case field names (``resource_spans``, ``string_value``) are read too.
It is told apart from a JSONL/CSV log by its content (``resourceSpans`` near the top) or its name
(``*.otlp.json``, ``*.otlp.jsonl``).

Two conventions mark a retrieval span; every other span (LLM calls, chains, HTTP) is context only:

================ =========================================== ============================================
                 OpenTelemetry GenAI semantic conventions    OpenInference semantic conventions
                 v1.41.0 (retrieval span; the GenAI           (spec/semantic_conventions.md of
                 conventions have since moved to their own    openinference-semantic-conventions 0.1.32)
                 repository with the same names)
================ =========================================== ============================================
which span       ``gen_ai.operation.name`` = ``retrieval``   ``openinference.span.kind`` = ``RETRIEVER``
question         ``gen_ai.retrieval.query.text``             ``input.value`` (a JSON object's ``query``,
                                                             ``question``, ``input`` or ``text``)
documents        ``gen_ai.retrieval.documents``: a list of   ``retrieval.documents.N.document.id``,
                 ``{"id", "score"}`` objects (structured, or  ``.score``, ``.content``, ``.metadata``
                 the JSON string the SDKs must write); a     (flattened, zero-based), or a structured
                 ``content``/``text`` property is read too   ``retrieval.documents`` list
================ =========================================== ============================================

Time is the span's ``startTimeUnixNano``. Who asked is read from the span, else another span of the same
trace (instrumentations often set it on the root only), else the resource: user from ``user.id`` then
``enduser.id``; role from ``enduser.role`` then ``user.roles`` (its first); session from ``session.id`` then
``gen_ai.conversation.id``. A request failed when any span of its trace has status ``ERROR``.

A document id ``doc#start-end`` is a chunk (offsets into the document); any other id names a whole
document; a document's metadata ``doc_id``/``start``/``end`` (OpenInference) override the id. Content is
kept, to be anchored to a span of the labelled set where it occurs (:mod:`evalkit.curate.loghits`).
A retrieval span without question text, start time, or with a document that has neither id nor content,
or a score that is not a finite number, is reported as ``file:line: span ID: field 'name': what`` and
skipped (``line`` is the request's line; 1 for a single document). A file none of whose lines is an OTLP
request is unreadable: one ``ValueError``.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.curate.querylog import CHUNK_ID, LogEntry, LoggedHit, LogReading
from evalkit.labels.fields import has_surrogate, visible
from evalkit.records import Span

__all__ = ["GENAI_VERSION", "OPENINFERENCE_VERSION", "is_otlp", "read_trace_log"]

GENAI_VERSION = "OpenTelemetry semantic conventions v1.41.0 (GenAI retrieval span)"
OPENINFERENCE_VERSION = "OpenInference semantic conventions (openinference-semantic-conventions 0.1.32)"

_PEEK = 4096
_OI_DOC = re.compile(r"^retrieval\.documents\.(\d+)\.document\.(id|score|content|metadata)$")
_QUESTION_KEYS = ("query", "question", "input", "text", "query_str")
_USER, _ROLE, _SESSION = (
    ("user.id", "enduser.id"),
    ("enduser.role", "user.roles"),
    ("session.id", "gen_ai.conversation.id"),
)


class _Bad(ValueError):
    """One field of one span that cannot be used: ``(field, what)``."""

    def __init__(self, field: str, what: str) -> None:
        super().__init__(f"field '{field}': {what}")


@dataclass(frozen=True)
class _Span:
    line: int
    trace: str
    span: str
    start_ns: Any
    attrs: Mapping[str, Any]
    resource: Mapping[str, Any]
    error: bool


def is_otlp(path: Path) -> bool:
    """An OTLP JSON export, by name (``*.otlp.json``/``*.otlp.jsonl``) or by ``resourceSpans`` at its top."""
    name = path.name.lower()
    if name.endswith((".otlp.json", ".otlp.jsonl")):
        return True
    if name.endswith(".csv"):
        return False
    with open(path, "rb") as handle:
        head = handle.read(_PEEK).decode("utf-8-sig", errors="replace").lstrip()
    return head.startswith("{") and bool(re.search(r'"resource_?[sS]pans"', head))


def _field(obj: Mapping[str, Any], camel: str) -> Any:
    """An OTLP JSON field by its camelCase name or its proto snake_case one."""
    if camel in obj:
        return obj[camel]
    return obj.get(re.sub(r"(?<!^)([A-Z])", r"_\1", camel).lower())


def _kind_of(value: Any) -> str:
    return (
        "null"
        if value is None
        else {dict: "an object", list: "a list", str: "a string"}.get(type(value), type(value).__name__)
    )


def _object(value: Any, at: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _Bad(at, f"expected an object, got {_kind_of(value)}")
    return value


def _list_field(obj: Mapping[str, Any], camel: str, at: str) -> list[Any]:
    """A repeated OTLP field: absent or null is empty; anything but a list is a wrong type."""
    value = _field(obj, camel)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Bad(f"{at}.{camel}", f"expected a list, got {_kind_of(value)}")
    return value


def any_value(value: Any, at: str = "value") -> Any:
    """An OTLP ``AnyValue`` as a Python value (``intValue`` is a string in JSON); :class:`_Bad` on a wrong type."""
    if value is None:
        return None
    for key, inner in _object(value, at).items():
        kind, where = key.replace("_", "").lower(), f"{at}.{key}"
        if kind in ("stringvalue", "bytesvalue"):
            if not isinstance(inner, str):
                raise _Bad(where, f"expected a string, got {_kind_of(inner)}")
            return inner
        if kind == "boolvalue":
            if not isinstance(inner, bool):
                raise _Bad(where, f"expected true or false, got {_kind_of(inner)}")
            return inner
        if kind == "intvalue":
            if isinstance(inner, bool) or not isinstance(inner, int | str) or not str(inner).lstrip("-").isdigit():
                raise _Bad(where, f"{inner!r} is not an integer")
            return int(inner)
        if kind == "doublevalue":
            try:
                if isinstance(inner, bool) or not isinstance(inner, int | float | str):
                    raise ValueError
                return float(inner)  # protobuf's JSON writes NaN and Infinity as strings
            except ValueError:
                raise _Bad(where, f"{inner!r} is not a number") from None
        if kind == "arrayvalue":
            items = [] if inner is None else _list_field(_object(inner, where), "values", where)
            return [any_value(v, f"{where}.values[{i}]") for i, v in enumerate(items)]
        if kind == "kvlistvalue":
            return attributes(None if inner is None else _object(inner, where).get("values"), f"{where}.values")
    return None


def attributes(items: Any, at: str = "attributes") -> dict[str, Any]:
    """OTLP ``KeyValue`` list as a dict; :class:`_Bad` naming the attribute when a type is wrong."""
    if items is None:
        return {}
    if not isinstance(items, list):
        raise _Bad(at, f"expected a list, got {_kind_of(items)}")
    out: dict[str, Any] = {}
    for i, item in enumerate(items):
        key = _object(item, f"{at}[{i}]").get("key")
        if not isinstance(key, str):
            raise _Bad(f"{at}[{i}].key", f"expected a string, got {_kind_of(key)}")
        out[key] = any_value(item.get("value"), f"{at}.{key}")
    return out


def _requests(path: Path) -> Iterator[tuple[int, Any]]:
    """``(line, request or why not)``: the whole file as one document, else one request per line."""
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        whole = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        whole = None
    if isinstance(whole, Mapping):
        yield 1, whole
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            yield number, f"invalid JSON ({getattr(exc, 'msg', 'nested too deeply')})"


def _spans(path: Path) -> tuple[list[_Span], list[tuple[int, str]], int]:
    """Every span of the file with its resource, the requests that could not be read, and how many could."""
    spans: list[_Span] = []
    problems: list[tuple[int, str]] = []
    readable = 0
    for line, request in _requests(path):
        batches = _field(request, "resourceSpans") if isinstance(request, Mapping) else None
        if not isinstance(batches, list):
            why = request if isinstance(request, str) else "not an OTLP trace request (no resourceSpans list)"
            problems.append((line, f"{path}:{line}: {why}"))
            continue
        readable += 1
        for b, batch in enumerate(batches):
            at = f"resourceSpans[{b}]"
            try:  # a batch or scope of the wrong shape: its spans cannot be told apart, so all are skipped
                resource_of = _field(_object(batch, at), "resource")
                resource = _object(resource_of, f"{at}.resource") if resource_of is not None else {}
                context = attributes(_field(resource, "attributes"), f"{at}.resource.attributes")
                old = "instrumentationLibrarySpans" if _field(batch, "scopeSpans") is None else "scopeSpans"
                scopes = [
                    (f"{at}.{old}[{s}]", _object(x, f"{at}.{old}[{s}]"))
                    for s, x in enumerate(_list_field(batch, old, at))
                ]
            except _Bad as exc:
                problems.append((line, f"{path}:{line}: span ?: {exc}"))
                continue
            for where, scope in scopes:
                try:
                    listed = _list_field(scope, "spans", where)
                except _Bad as exc:
                    problems.append((line, f"{path}:{line}: span ?: {exc}"))
                    continue
                for n, span in enumerate(listed):
                    try:
                        spans.append(_span(line, span, context, f"{where}.spans[{n}]"))
                    except _Bad as exc:
                        named = _field(span, "spanId") if isinstance(span, Mapping) else None
                        problems.append(
                            (line, f"{path}:{line}: span {named if isinstance(named, str) else '?'}: {exc}")
                        )
    return spans, problems, readable


def _span(line: int, span: Any, resource: Mapping[str, Any], at: str) -> _Span:
    """One span of a request, every field's type checked (:class:`_Bad` names the first that is wrong)."""
    span = _object(span, at)
    ids = []
    for name in ("traceId", "spanId"):
        value = _field(span, name)
        if value is not None and not isinstance(value, str):
            raise _Bad(f"{at}.{name}", f"expected a string, got {_kind_of(value)}")
        ids.append(value or "")
    status = _field(span, "status")
    code = _object(status, f"{at}.status").get("code") if status is not None else None
    attrs = attributes(_field(span, "attributes"), f"{at}.attributes")
    error = code in (2, "2", "STATUS_CODE_ERROR")
    return _Span(line, ids[0], ids[1], _field(span, "startTimeUnixNano"), attrs, resource, error)


def _kind(attrs: Mapping[str, Any]) -> str:
    if str(attrs.get("openinference.span.kind", "")).upper() == "RETRIEVER":
        return "openinference"
    if attrs.get("gen_ai.operation.name") == "retrieval":
        return "genai"
    return ""


def _question(kind: str, attrs: Mapping[str, Any]) -> str:
    name = "gen_ai.retrieval.query.text" if kind == "genai" else "input.value"
    value = attrs.get(name)
    if kind == "openinference" and isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            parsed = json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            parsed = None
        if isinstance(parsed, Mapping):
            value = next((parsed[k] for k in _QUESTION_KEYS if isinstance(parsed.get(k), str)), None)
    if not isinstance(value, str) or not visible(value) or has_surrogate(value):
        raise _Bad(name, "missing or empty question text (recorded only when content capture is on)")
    return " ".join(value.split())


def _documents(kind: str, attrs: Mapping[str, Any]) -> tuple[str, list[Mapping[str, Any]]]:
    """``(attribute name, documents as {id, score, content, metadata})``, in rank order."""
    if kind == "genai":
        name, raw = "gen_ai.retrieval.documents", attrs.get("gen_ai.retrieval.documents")
        if isinstance(raw, str):
            try:
                raw = json.loads(raw)
            except (json.JSONDecodeError, RecursionError) as exc:
                raise _Bad(name, f"not a JSON list of documents ({getattr(exc, 'msg', 'nested too deeply')})") from None
        if raw is None:
            return name, []
        if not isinstance(raw, list) or not all(isinstance(d, Mapping) for d in raw):
            raise _Bad(name, "expected a list of {id, score} objects")
        return name, [{"id": d.get("id"), "score": d.get("score"), "content": d.get("content", d.get("text"))}
                      | {"metadata": d.get("metadata")} for d in raw]  # fmt: skip
    name = "retrieval.documents"
    if isinstance(attrs.get(name), list):  # structured (a collector may nest it)
        raw = [d for d in attrs[name] if isinstance(d, Mapping)]
        return name, [{key.removeprefix("document."): v for key, v in d.items()} for d in raw]
    by_index: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        match = _OI_DOC.match(key)
        if match:
            by_index.setdefault(int(match[1]), {})[match[2]] = value
    return name, [by_index[i] for i in sorted(by_index)]


def _hit(document: Mapping[str, Any], at: str) -> LoggedHit:
    raw_id, score, content = document.get("id"), document.get("score"), document.get("content")
    meta = document.get("metadata")
    if isinstance(meta, str):
        try:
            meta = json.loads(meta)
        except (json.JSONDecodeError, RecursionError):
            meta = None
    if raw_id is not None and (isinstance(raw_id, bool) or not isinstance(raw_id, str | int)):
        raise _Bad(f"{at}.id", f"expected a string, got {_kind_of(raw_id)}")
    doc_id = "" if raw_id is None else str(raw_id)
    start = end = 0
    match = CHUNK_ID.match(doc_id)
    if match:
        doc_id, start, end = match["doc"], int(match["start"]), int(match["end"])
    if isinstance(meta, Mapping) and isinstance(meta.get("doc_id"), str):
        bounds = (meta.get("start", 0), meta.get("end", 0))
        if all(isinstance(b, int) and not isinstance(b, bool) and b >= 0 for b in bounds) and bounds[0] <= bounds[1]:
            doc_id, (start, end) = meta["doc_id"], bounds
    text = content if isinstance(content, str) and content.strip() else ""
    if not doc_id and not text:
        raise _Bad(f"{at}.id", "a document with neither id nor content")
    if score is not None and (
        isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score)
    ):
        raise _Bad(f"{at}.score", f"{score!r} is not a finite number")
    return LoggedHit(doc_id, start, end, text, None if score is None else float(score))


def _context(span: _Span, trace: list[_Span], names: tuple[str, ...]) -> str:
    """The first of ``names`` set on the span, another span of its trace, or its resource."""
    for attrs in (span.attrs, *(s.attrs for s in trace), span.resource):
        for name in names:
            value = attrs.get(name)
            if isinstance(value, list):
                value = value[0] if value else None
            if value not in (None, ""):
                return str(value)
    return ""


def _entry(span: _Span, kind: str, trace: list[_Span]) -> LogEntry:
    question = _question(kind, span.attrs)
    try:
        seconds, nanos = divmod(int(span.start_ns), 10**9)  # integers: a float loses the microseconds
        stamp = dt.datetime.fromtimestamp(seconds, tz=dt.UTC) + dt.timedelta(microseconds=nanos // 1000)
    except (TypeError, ValueError, OverflowError, OSError):
        raise _Bad("startTimeUnixNano", f"{span.start_ns!r} is not a time in Unix nanoseconds") from None
    name, documents = _documents(kind, span.attrs)
    prefix = "retrieval.documents.{}.document" if kind == "openinference" else name + "[{}]"
    hits = tuple(_hit(d, prefix.format(i)) for i, d in enumerate(documents))
    returned = tuple(Span(h.doc_id, h.start, h.end) for h in hits if h.doc_id)
    failed = span.error or any(s.error for s in trace)
    user, role, session = (_context(span, trace, names) for names in (_USER, _ROLE, _SESSION))
    return LogEntry(span.line, question, stamp, failed, user, role, returned, hits, session)


def read_trace_log(path: str | Path) -> LogReading:
    """Every retrieval span of an OTLP JSON export as a log entry (see the module docstring).

    Raises ``ValueError`` when the file is not UTF-8 or no line of it is an OTLP trace request.
    """
    source = Path(path)
    spans, problems, readable = _spans(source)
    if not readable:
        first = problems[0][1].split(": ", 1)[1] if problems else "empty file"
        raise ValueError(f"{source}: not an OTLP JSON trace export ({first})")
    by_trace: dict[str, list[_Span]] = {}
    for span in spans:
        by_trace.setdefault(span.trace, []).append(span)
    entries: list[LogEntry] = []
    count = len(problems)  # unreadable requests count as rows, as unreadable lines of a JSONL log do
    for span in spans:
        kind = _kind(span.attrs)
        if not kind:
            continue
        count += 1
        try:
            entries.append(_entry(span, kind, by_trace[span.trace]))
        except _Bad as exc:
            problems.append((span.line, f"{source}:{span.line}: span {span.span or '?'}: {exc}"))
    in_order = tuple(text for _, text in sorted(problems, key=lambda p: p[0]))  # stable: a line's spans in order
    return LogReading(source, tuple(entries), in_order, count)
