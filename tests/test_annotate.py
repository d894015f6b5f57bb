"""The annotation store and server: exact spans, atomic saves, locks, and the guards (token, origin, paths)."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalkit.curate.annotate.api import AnnotationApi
from evalkit.curate.annotate.checks import in_one_sentence
from evalkit.curate.annotate.server import AnnotationServer
from evalkit.curate.annotate.store import STATE, AnnotationStore
from evalkit.curate.queue import QueueItem, write_queue
from evalkit.labels.read import read_set
from evalkit.labels.validate import validate
from tests.conftest import REPO, write_set

EN = "# Limits\n\nThe RateLimiter allows a burst of 20 requests per second. Retries back off.\n\nA second block."
ZH = "# 报销\n\n😀 住宿标准为每晚不超过六百元。出差需提前三天申请。𠀋字在扩展区。\n"


def annotation_set(root: Path, n_questions: int = 4, extra_docs: dict[str, str] | None = None) -> Path:
    write_set(root, {"en": EN, "zh": ZH, **(extra_docs or {})}, [])
    items = [
        QueueItem(f"q{i}", f"Question {i % 3 if i == 3 else i} <img src=x onerror=alert(1)>?", {"source": "log"})
        for i in range(n_questions)
    ]
    write_queue(root, items)
    return root


def span(doc: str, text: str, needle: str) -> dict:
    start = text.index(needle)
    return {"doc_id": doc, "start": start, "end": start + len(needle), "text": needle}


def lines(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / "questions.jsonl").read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def server(tmp_path: Path):
    root = annotation_set(tmp_path / "set")
    server = AnnotationServer(AnnotationApi(AnnotationStore(root)))
    server.start()
    yield server
    server.shutdown()
    server.server_close()


def request(server: AnnotationServer, path: str, body: dict | None = None, token: bool = True, **headers: str):
    url = f"http://127.0.0.1:{server.port}{path}"
    if token:
        headers.setdefault("X-Evalkit-Token", server.token)
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers.setdefault("Content-Type", "application/json")
    req = urllib.request.Request(url, data=data, headers=headers, method="POST" if body is not None else "GET")
    try:
        with urllib.request.urlopen(req, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null") if "json" in response.headers.get(
                "Content-Type", ""
            ) else response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def test_saved_spans_are_exact_and_the_set_validates(server: AnnotationServer) -> None:
    root = server.api.store.root
    status, saved = request(
        server, "/api/edit", {"id": "q0", "op": "add_span", **span("en", EN, "a burst of 20 requests")}
    )
    assert status == 200 and saved["saved"] and saved["entry"]["status"] == "labelled"
    assert saved["trivial"] is True  # one span inside one sentence: the method's rule
    status, error = request(
        server, "/api/edit", {"id": "q1", "op": "add_span", "doc_id": "zh", "start": 3, "end": 6, "text": "wrong"}
    )
    assert status == 422 and "does not equal" in error["error"]
    two = [span("zh", ZH, "六百元"), span("zh", ZH, "𠀋字")]
    for part in two:
        assert request(server, "/api/edit", {"id": "q1", "op": "add_span", **part})[0] == 200
    assert request(server, "/api/edit", {"id": "q2", "op": "unanswerable"})[0] == 200
    assert request(server, "/api/edit", {"id": "q3", "op": "skip"})[0] == 200
    records = {r["id"]: r for r in lines(root)}
    assert set(records) == {"q0", "q1", "q2"}
    assert records["q1"]["evidence_mode"] == "all" and records["q1"]["tags"]["multi_hop"] is True
    assert records["q1"]["tags"]["trivial"] is False
    assert records["q2"]["evidence_mode"] == "none" and records["q2"]["answerable"] is False
    for record in records.values():
        for e in record["evidence"]:
            text = {"en": EN, "zh": ZH}[e["doc_id"]]
            assert e["text"] == text[e["start"] : e["end"]]
    assert [e["start"] for e in records["q1"]["evidence"]] == [ZH.index("六百元"), ZH.index("𠀋字")]  # code points
    assert validate(root).ok, validate(root).problems
    # undo takes back this question's last change only
    assert request(server, "/api/edit", {"id": "q1", "op": "undo"})[1]["entry"]["evidence"] == [
        {**two[0], "text": "六百元"}
    ]
    assert request(server, "/api/edit", {"id": "q1", "op": "mode", "mode": "any"})[1]["entry"]["evidence_mode"] == "any"
    status, question = request(server, "/api/question?id=q3")
    assert status == 200 and [d["id"] for d in question["duplicates"]] == ["q0"]  # the same text as q0


def test_requests_without_the_token_or_from_elsewhere_are_refused(server: AnnotationServer) -> None:
    assert request(server, "/api/state", token=False)[0] == 403
    assert request(server, "/api/state", token=False, **{"X-Evalkit-Token": "guess"})[0] == 403
    assert request(server, f"/api/state?token={server.token}", token=False)[0] == 200
    assert request(server, "/api/state", Origin="http://evil.example")[0] == 403
    assert request(server, "/api/state", Host="evil.example")[0] == 403
    assert request(server, "/api/state", **{"Sec-Fetch-Site": "cross-site"})[0] == 403
    assert request(server, "/api/state", Origin=f"http://127.0.0.1:{server.port}")[0] == 200
    edit = {"id": "q0", "op": "unanswerable"}
    assert request(server, "/api/edit", edit, token=False)[0] == 403
    assert request(server, "/api/edit", edit, Origin="http://evil.example")[0] == 403
    assert request(server, "/api/edit", edit, **{"Content-Type": "text/plain"})[0] == 415  # no simple-form CSRF
    assert lines(server.api.store.root) == []  # nothing refused was written
    status, page = request(server, f"/?token={server.token}", token=False)
    assert status == 200 and server.token in page


def test_path_traversal_is_refused(tmp_path: Path) -> None:
    root = annotation_set(tmp_path / "set")
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret", encoding="utf-8")
    index = (root / "docs.jsonl").read_text(encoding="utf-8")
    evil = {"doc_id": "evil", "path": "../secret.txt", "title": "evil"}
    (root / "docs.jsonl").write_text(index + json.dumps(evil) + "\n", encoding="utf-8")
    store = AnnotationStore(root)
    assert "evil" not in store.documents and any("outside the labelled set" in p for p in store.problems)
    server = AnnotationServer(AnnotationApi(store))
    server.start()
    try:
        for path in ("/../secret.txt", "/app.js/../../secret.txt", "/%2e%2e/secret.txt", "/docs/en.md", "/docs.jsonl"):
            assert request(server, path)[0] == 404, path
        for doc_id in ("evil", "../secret.txt", "../../etc/passwd", "/etc/passwd"):
            status, body = request(server, f"/api/doc?id={doc_id}")
            assert status == 404 and "top secret" not in json.dumps(body)
        status, _ = request(
            server, "/api/edit", {"id": "q0", "op": "add_span", "doc_id": "evil", "start": 0, "end": 3, "text": "top"}
        )
        assert status == 422
    finally:
        server.shutdown()
        server.server_close()


def test_killing_the_server_mid_session_loses_nothing_saved(tmp_path: Path) -> None:
    root = annotation_set(tmp_path / "set", n_questions=30)
    process = subprocess.Popen(
        [sys.executable, "-m", "evalkit.labels", "annotate", str(root)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        url = ""
        while "token=" not in url:
            url = process.stdout.readline()
            assert url or process.poll() is None, process.stderr.read()
        url = url.split()[-1]
        port, token = int(url.split(":")[2].split("/")[0]), url.split("token=")[1]
        fake = AnnotationServer.__new__(AnnotationServer)
        fake.port, fake.token = port, token
        needles = ["a burst of 20 requests", "Retries back off", "second block", "六百元", "三天", "𠀋字"]
        saved = {}
        for i in range(30):
            doc, text = ("en", EN) if i % 2 else ("zh", ZH)
            needle = [n for n in needles if n in text][i % 3]
            status, _ = request(fake, "/api/edit", {"id": f"q{i}", "op": "add_span", **span(doc, text, needle)})
            assert status == 200
            saved[f"q{i}"] = needle
    finally:
        os.kill(process.pid, signal.SIGKILL)  # no shutdown, no flush: the edits must already be on disk
        process.wait(timeout=30)
    assert {r["id"]: r["evidence"][0]["text"] for r in lines(root)} == saved
    assert validate(root).ok
    assert len(json.loads((root / STATE).read_text(encoding="utf-8"))["entries"]) == 30
    assert not [p for p in root.iterdir() if p.name.endswith(".tmp")]  # no temporary file left behind


def test_a_kill_between_the_two_renames_is_repaired_on_reopening(tmp_path: Path) -> None:
    root = annotation_set(tmp_path / "set")
    store = AnnotationStore(root)
    store.edit("q0", "add_span", span("en", EN, "20 requests"))
    before = (root / "questions.jsonl").read_text(encoding="utf-8")
    store.edit("q1", "add_span", span("zh", ZH, "六百元"))
    (root / "questions.jsonl").write_text(before, encoding="utf-8")  # as if killed after the state's rename
    AnnotationStore(root)
    assert [r["id"] for r in lines(root)] == ["q0", "q1"]


def _writer(root: str, offset: int, n: int) -> None:
    store = AnnotationStore(root)
    for i in range(offset, offset + n):
        store.edit(f"q{i}", "add_span", span("en", EN, "20 requests") if i % 2 else span("zh", ZH, "六百元"))
        store.edit(f"q{i}", "notes", {"notes": f"writer {offset}"})


def test_two_concurrent_writers_do_not_corrupt_the_set(tmp_path: Path) -> None:
    root = annotation_set(tmp_path / "set", n_questions=40)
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_writer, args=(str(root), offset, 20)) for offset in (0, 20)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(timeout=300)
        assert writer.exitcode == 0
    records = lines(root)
    assert sorted(r["id"] for r in records) == sorted(f"q{i}" for i in range(40))
    assert all(r["tags"]["notes"] == f"writer {0 if int(r['id'][1:]) < 20 else 20}" for r in records)
    assert validate(root).ok
    # two tabs on one server, the same question: both spans are kept (edits apply to what is on disk)
    store = AnnotationStore(root)
    store.edit("q0", "add_span", span("zh", ZH, "三天"))
    AnnotationStore(root).edit("q0", "add_span", span("zh", ZH, "𠀋字"))
    assert [e["text"] for e in lines(root)[0]["evidence"]] == ["六百元", "三天", "𠀋字"]


def test_an_existing_label_survives_until_it_is_edited(tmp_path: Path, tiny_set: Path) -> None:
    store = AnnotationStore(tiny_set)  # no queue: the set's own questions are queued
    assert [i.id for i in store.items] == ["q-en", "q-zh", "q-none"]
    original = (tiny_set / "questions.jsonl").read_text(encoding="utf-8")
    store.edit("q-zh", "skip")
    assert [r["id"] for r in lines(tiny_set)] == ["q-en", "q-none"]
    store.edit("q-zh", "undo")
    assert sorted(r["id"] for r in lines(tiny_set)) == sorted(json.loads(x)["id"] for x in original.splitlines())
    assert read_set(tiny_set).problems == ()


def test_sentence_rule() -> None:
    text = "Hotel: 220 EUR per night. Meals are extra.\n| a | b |\n住宿六百元。出差三天。"
    assert in_one_sentence(text, 7, 24)
    assert not in_one_sentence(text, 7, 36)
    assert in_one_sentence(text, text.index("六百元"), text.index("六百元") + 4)  # a final 。 does not count
    assert not in_one_sentence(text, text.index("六百元"), text.index("三天"))


ALPHABET = st.sampled_from(list("abc XYZ.\n\r\t住宿标准六百元。？😀𠀋\u0301é"))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(ALPHABET, min_size=2, max_size=300), data=st.data())
def test_any_selection_saved_is_an_exact_slice(tmp_path_factory: pytest.TempPathFactory, text: str, data) -> None:
    if not text.strip():
        text = "住" + text
    root = tmp_path_factory.mktemp("prop")
    write_set(root, {"d": text}, [])
    write_queue(root, [QueueItem("q", "Where?", {})])
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    if not text[start:end].strip():
        return  # nothing but white space: the page has nothing to save
    server = AnnotationServer(AnnotationApi(AnnotationStore(root)))
    server.start()
    try:
        status, saved = request(
            server,
            "/api/edit",
            {"id": "q", "op": "add_span", "doc_id": "d", "start": start, "end": end, "text": text[start:end]},
        )
    finally:
        server.shutdown()
        server.server_close()
    assert status == 200
    on_disk = read_set(root)
    assert on_disk.problems == ()
    (evidence,) = on_disk.questions[0].evidence
    assert evidence.text == text[evidence.start : evidence.end] == saved["entry"]["evidence"][0]["text"]
    assert start <= evidence.start < evidence.end <= end and evidence.text == evidence.text.strip()
