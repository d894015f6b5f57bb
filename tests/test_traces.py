"""Traces as production logs: OTLP JSON exports written by the OpenTelemetry SDK from a traced RAG function.

Both conventions (the GenAI retrieval span, OpenInference's RETRIEVER span) are read into the same entries as
a JSONL log: question, time, user and role from the trace, what production returned (chunk ids, or content
anchored back to its span). The export is sampled into a queue with ``labels sample`` and replayed with
``python -m evalkit replay``. Bad spans are one line each and skipped; a file that is no export is exit 2.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pytest

from evalkit.curate.querylog import read_query_log
from evalkit.curate.queue import read_queue
from evalkit.labels.read import read_set
from tests.conftest import REPO, TINY_DOCS
from tests.otlp_rag import TracedRag

START = dt.datetime(2026, 11, 2, 9, tzinfo=dt.UTC)
ASKED = [
    ("What burst does RateLimiter allow by default?", "ana", "engineer", False),
    ("住宿标准是每晚多少钱？", "bo", "finance", True),
    ("what burst does the RateLimiter allow by default", "cy", "engineer", False),
]


def nanos(moment: dt.datetime) -> int:
    return int(moment.timestamp()) * 10**9


def traced(path: Path, convention: str, asked=ASKED, documents=TINY_DOCS) -> TracedRag:
    rag = TracedRag(path, documents, convention)
    for i, (question, user, role, fail) in enumerate(asked):
        rag.ask(question, nanos(START + dt.timedelta(hours=i)), user, role, fail)
    return rag


def run(*args: object, module: tuple[str, ...] = ("evalkit.labels",)) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", *module, *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=300)


@pytest.mark.parametrize("convention", ["genai", "openinference"])
def test_a_traced_retrieval_reads_as_log_entries(tmp_path: Path, convention: str) -> None:
    path = tmp_path / "traces.jsonl"
    rag = traced(path, convention)
    reading = read_query_log(path)
    assert reading.problems == () and reading.rows == 3, reading.problems
    first, zh, _ = reading.entries
    assert [e.question for e in reading.entries] == [q for q, *_ in ASKED]
    # The retrieval span's own start: a microsecond into its request.
    assert first.timestamp == START + dt.timedelta(microseconds=1)
    assert zh.timestamp == START + dt.timedelta(hours=1, microseconds=1)
    # Who asked sits on the root span; the retrieval span reads it from its trace.
    assert (first.user, first.role, first.session) == ("ana", "engineer", "s-ana")
    assert [e.failed for e in reading.entries] == [False, True, False]
    expected = rag.rank(first.question)
    assert [h.score for h in first.hits] == [s for _, s in expected]
    if convention == "genai":  # chunk ids: offsets into the document
        assert [(s.doc_id, s.start, s.end) for s in first.returned] == [(p.doc_id, p.start, p.end) for p, _ in expected]
    else:  # content only: nothing to name until it is anchored
        assert first.returned == () and [h.text for h in first.hits] == [p.text for p, _ in expected]


def test_one_json_document_reads_as_its_lines_do(tmp_path: Path) -> None:
    lines = tmp_path / "traces.jsonl"
    rag = traced(lines, "genai")
    document = tmp_path / "export.json"
    rag.exporter.write_document(document)
    assert document.read_text(encoding="utf-8").count("\n") > 50  # pretty-printed: one request, many lines
    as_lines, as_document = read_query_log(lines), read_query_log(document)
    assert [(e.question, e.timestamp, e.hits) for e in as_document.entries] == [
        (e.question, e.timestamp, e.hits) for e in as_lines.entries
    ]


def test_structured_documents_in_proto_field_names_read_as_the_json_string_does(tmp_path: Path) -> None:
    lines = tmp_path / "traces.jsonl"
    rag = traced(lines, "genai")
    structured = tmp_path / "collector.json"
    rag.exporter.write_structured(structured)
    text = structured.read_text(encoding="utf-8")
    assert '"resource_spans"' in text and '"kvlist_value"' in text and '"stringValue"' not in text
    as_lines, as_structured = read_query_log(lines), read_query_log(structured)
    assert as_structured.problems == () and len(as_structured.entries) == 3
    assert [e.hits for e in as_structured.entries] == [e.hits for e in as_lines.entries]
    assert [e.user for e in as_structured.entries] == ["ana", "bo", "cy"]


def test_openinference_content_is_anchored_into_the_sample_queue(tmp_path: Path, tiny_set: Path) -> None:
    path = tmp_path / "prod.otlp.jsonl"
    rag = traced(path, "openinference")
    out = tmp_path / "set"
    result = run("sample", path, "--docs", tiny_set, out, "--n", "5", "--fold", "0.6")
    assert result.returncode == 0, result.stderr
    assert "3 rows, 0 skipped" in result.stdout and "2 distinct questions (1 with failures)" in result.stdout
    documents = {d.doc_id: d for d in read_set(tiny_set).documents}
    items, problems = read_queue(out, documents)
    assert not problems and len(items) == 2
    by_text = {item.question: item for item in items}
    english = by_text[ASKED[0][0]]
    assert english.tags["frequency"] == 2 and english.tags["role"] == "engineer" and english.tags["users"] == 2
    ranked = {(p.doc_id, p.start, p.end) for p, _ in rag.rank(ASKED[0][0])}
    assert {(s.doc_id, s.start, s.end) for s in english.returned} == ranked
    assert by_text[ASKED[1][0]].tags["failure"] is True


def test_bad_spans_are_one_line_each_and_skipped(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    rag = traced(path, "openinference", [("What burst does RateLimiter allow by default?", "ana", "", False)])
    with rag.tracer.start_as_current_span("retriever") as span:  # no question text: capture was off
        span.set_attribute("openinference.span.kind", "RETRIEVER")
    with rag.tracer.start_as_current_span("retriever") as span:
        span.set_attribute("openinference.span.kind", "RETRIEVER")
        span.set_attribute("input.value", "Which score?")
        span.set_attribute("retrieval.documents.0.document.id", "en")
        span.set_attribute("retrieval.documents.0.document.score", "high")
    with open(path, "a", encoding="utf-8") as handle:
        handle.write('{"resourceSpans": [\n')  # a request cut short by a crash
    reading = read_query_log(path)
    assert len(reading.entries) == 1 and reading.rows == 4
    first, second, third = reading.problems
    assert first.startswith(f"{path}:4: span ") and "field 'input.value': missing or empty question text" in first
    assert "field 'retrieval.documents.0.document.score': 'high' is not a finite number" in second
    assert third.startswith(f"{path}:6: invalid JSON")
    result = run("sample", path, "--docs", tmp_path / "nowhere", tmp_path / "out", "--n", "2")
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_a_file_that_is_no_export_is_one_line_and_exit_2(tmp_path: Path, tiny_set: Path) -> None:
    path = tmp_path / "broken.otlp.json"
    path.write_text('{"resourceSpans": [}\n', encoding="utf-8")
    result = run("sample", path, "--docs", tiny_set, tmp_path / "out")
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().count("\n") == 0 and "not an OTLP JSON trace export" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_weekly_replay_reads_a_trace_file(tmp_path: Path, small_demo: Path) -> None:
    questions = [json.loads(line) for line in (small_demo / "questions.jsonl").read_text().splitlines()][:6]
    documents = {d.doc_id: d.text for d in read_set(small_demo).documents}
    path = tmp_path / "week.jsonl"
    asked = [(q["question"], f"u{i}", q["tags"].get("role", ""), False) for i, q in enumerate(questions)]
    traced(path, "genai", asked, documents)
    result = run(path, f"labelset.path={small_demo}", f"reports_dir={tmp_path}", "--since", "30d",
                 module=("evalkit", "replay"))  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "6 rows, 0 skipped" in result.stdout and "replayed the 6 most asked" in result.stdout
    history = [json.loads(line) for line in (tmp_path / "replay" / "history.jsonl").read_text().splitlines()]
    assert history[-1]["questions"] == 6 and history[-1]["log"] == str(path)


_WRONG: tuple[object, ...] = ("x", 5, 1.5, True, None, [], {}, ["x"], {"k": "v"})


def _paths(value: object, path: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """Every place in a JSON tree (object members and list items), parents before children."""
    places = [path] if path else []
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        places += _paths(child, (*path, key))
    return places


def _at(tree: object, path: tuple[object, ...]) -> object:
    for key in path:
        tree = tree[key]  # type: ignore[index]
    return tree


def _replaced(tree: object, path: tuple[object, ...], new: object) -> object:
    copy = json.loads(json.dumps(tree))
    *parents, last = path
    holder = copy
    for key in parents:
        holder = holder[key]  # type: ignore[index]
    holder[last] = new  # type: ignore[index]
    return copy


@pytest.mark.parametrize("convention", ["genai", "openinference"])
def test_every_wrong_type_at_every_level_of_real_sdk_output_is_one_line_and_skips_only_its_span(
    tmp_path: Path, convention: str
) -> None:
    """The SDK's own export, each place in it given each wrong JSON type in turn: never an exception but the
    file-level one-line ValueError, every problem one line naming file, line and span, and no span lost but
    the one (or the batch) the wrong type sits in."""
    source = tmp_path / "traces.jsonl"
    traced(source, convention, asked=ASKED[:1])
    request = json.loads(source.read_text(encoding="utf-8").splitlines()[0])
    clean = read_query_log(source)
    assert clean.problems == () and len(clean.entries) == 1
    mutated = tmp_path / "mutated.otlp.jsonl"
    tried = 0
    for path in _paths(request):
        for wrong in _WRONG:
            mutated.write_text(json.dumps(_replaced(request, path, wrong)) + "\n", encoding="utf-8")
            tried += 1
            try:
                reading = read_query_log(mutated)
            except ValueError as exc:  # the file as a whole is not an OTLP export (resourceSpans itself wrong)
                assert "\n" not in str(exc) and str(mutated) in str(exc), (path, wrong, exc)
                assert path == ("resourceSpans",), (path, wrong, exc)
                continue
            for problem in reading.problems:
                assert "\n" not in problem and problem.startswith(f"{mutated}:1: span "), (path, wrong, problem)
            assert len(reading.entries) <= 1
            if not reading.entries and wrong is not None and type(wrong) is not type(_at(request, path)):
                assert reading.problems, (path, wrong)  # a type changed and the span went: it is said why
    assert tried > 500


def test_a_resource_spans_item_that_is_not_an_object_is_one_line_from_labels_sample(tmp_path: Path) -> None:
    path = tmp_path / "t.otlp.jsonl"
    path.write_text('{"resourceSpans": ["x"]}\n', encoding="utf-8")
    result = run("sample", path, tmp_path / "out", "--docs", REPO / "labelsets" / "demo")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0 and result.stderr.strip(), result.stderr
    assert "t.otlp.jsonl:1: span ?: field 'resourceSpans[0]': expected an object" in result.stderr  # why, not only that


def test_a_double_value_that_is_text_names_file_line_span_and_field(tmp_path: Path) -> None:
    source = tmp_path / "traces.jsonl"
    traced(source, "genai", asked=ASKED[:1])
    text = source.read_text(encoding="utf-8")
    request = json.loads(text.splitlines()[0])
    span = request["resourceSpans"][0]["scopeSpans"][0]["spans"][-1]
    span["attributes"].append({"key": "gen_ai.request.temperature", "value": {"doubleValue": "high"}})
    bad = tmp_path / "bad.otlp.jsonl"
    bad.write_text(json.dumps(request) + "\n", encoding="utf-8")
    reading = read_query_log(bad)
    assert len(reading.problems) == 1
    assert reading.problems[0].startswith(f"{bad}:1: span {span['spanId']}: field '")
    assert "doubleValue" in reading.problems[0] and "'high' is not a number" in reading.problems[0]
