"""Fuzz the newer surfaces: an external retriever's HTTP replies, its URL, the LanceDB store, ONNX model folders.

Every bad reply comes from a real HTTP server on 127.0.0.1 writing raw bytes (wrong statuses, wrong JSON
types, missing fields, NaN scores, huge, deep, trickled, reset, cut short, the wrong content type), after
it has answered the first query cleanly. Each case runs the sweep's entry point in process on a three-
question set and asserts its exit code, one error line naming the retriever, no traceback, and nothing
lost (the clean reply stays cached). Corrupted stores must heal with one warning and the clean pool;
bad model folders must be one line naming the file, exit 2.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tests.loopback.raw_http import RawHttpServer, Request, response
from tests.test_fuzz import DOC_A, DOC_B, GOOD_DOCS, GOOD_QUESTIONS, run_sweep

Behaviour = Callable[[socket.socket, Request], None]
GOLD = {
    "q1": [{"doc_id": "a", "start": 33, "end": 35, "score": 1.0}],
    "q2": [{"doc_id": "b", "start": 11, "end": 14, "score": 0.9}],
    "q3": [],
}
TRANSPORT = ["retriever.batch_size=1", "retriever.max_concurrency=1", "retriever.max_retries=1",
             "retriever.retry_base_delay_s=0", "retriever.retry_max_delay_s=0", "retriever.timeout_s=1",
             "retriever.max_reply_mb=0.05"]  # fmt: skip
"""One query a request, one request at a time (the first query is answered before any bad reply), a 1 s
deadline and a 50 KiB cap, so every case is quick."""
CAP = int(0.05 * 1024 * 1024)


@pytest.fixture(scope="module")
def tiny_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tiny-set")
    (root / "docs").mkdir()
    (root / "docs" / "a.md").write_text(DOC_A, encoding="utf-8")
    (root / "docs" / "b.md").write_text(DOC_B, encoding="utf-8")
    (root / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in GOOD_DOCS), encoding="utf-8")
    (root / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in GOOD_QUESTIONS), encoding="utf-8")
    return root


def base_args(labelset: Path, tmp_path: Path) -> list[str]:
    return [f"labelset.path={labelset}", f"reports_dir={tmp_path}/reports", f"cache_path={tmp_path}/c.sqlite",
            "progress=false", "report=false", "position=off",
            "answer_check=off", "top_k=[1]", "pool_size=2"]  # fmt: skip


def gold_body(request: Request) -> bytes:
    return json.dumps({"results": [GOLD[q["id"]] for q in request.json["queries"]]}).encode()


def first_clean(bad: Behaviour) -> Behaviour:
    """Answer query q1 with its gold, every other request with ``bad``."""

    def reply(sock: socket.socket, request: Request) -> None:
        ids = [q.get("id") for q in request.json["queries"]] if isinstance(request.json, dict) else []
        if ids == ["q1"]:
            sock.sendall(response("200 OK", gold_body(request)))
        else:
            bad(sock, request)

    return reply


# The bad replies: each a function of the connected socket.


def raw(data: bytes) -> Behaviour:
    return lambda sock, request: sock.sendall(data)


def status(line: str, body: bytes, content_type: str = "application/json") -> Behaviour:
    return raw(response(line, body, content_type))


def ok(body: str | bytes, content_type: str = "application/json") -> Behaviour:
    return status("200 OK", body.encode() if isinstance(body, str) else body, content_type)


def hits(*hit: dict[str, Any] | str) -> Behaviour:
    return ok(json.dumps({"results": [list(hit)]}))


def trickle(head: bytes, rest: bytes = b"x" * 200, every_s: float = 0.5) -> Behaviour:
    def reply(sock: socket.socket, request: Request) -> None:
        sock.sendall(head)
        for byte in rest:
            time.sleep(every_s)
            sock.sendall(bytes([byte]))

    return reply


def silent(sock: socket.socket, request: Request) -> None:
    sock.recv(1)  # until the client gives up and hangs up


def reset(sock: socket.socket, request: Request) -> None:
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close sends a RST


def hang_up(sock: socket.socket, request: Request) -> None:
    sock.shutdown(socket.SHUT_RDWR)


def chunked(pieces: list[bytes]) -> Behaviour:
    def reply(sock: socket.socket, request: Request) -> None:
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        for piece in pieces:
            sock.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        sock.sendall(b"0\r\n\r\n")

    return reply


def until_close(body: bytes) -> Behaviour:
    """No Content-Length: the body ends when the connection does."""
    return raw(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n" + body)


HIT = {"doc_id": "a", "start": 0, "end": 5, "score": 1.0}
DEEP_IN_A_HIT = '{"results": [[{"doc_id": "a", "start": 0, "end": 5, "score": 1, "x": ' + "[" * 70 + "]" * 70 + "}]]}"
FAILS: dict[str, tuple[Behaviour, str]] = {
    # statuses: a retry is spent on the retryable ones, the rest are one line at once
    "400 bad request": (status("400 Bad Request", b'{"error": "bad query"}'), "HTTP 400"),
    "404 as text": (status("404 Not Found", b"no such route", "text/plain"), "HTTP 404"),
    "500 twice": (status("500 Internal Server Error", b"boom"), "HTTP 500"),
    "503 asking for an hour": (raw(b"HTTP/1.1 503 Busy\r\nRetry-After: 3600\r\nContent-Length: 0\r\n\r\n"), "HTTP 503"),
    "302 to a file URL": (raw(b"HTTP/1.1 302 Found\r\nLocation: file:///etc/passwd\r\nContent-Length: 0\r\n\r\n"),
                          "HTTP 302"),
    "401 as an HTML page": (status("401 Unauthorized", b"<html><body>\n<h1>login</h1>\n</body></html>", "text/html"),
                            "HTTP 401"),
    # bodies that are not JSON (retried: a proxy's hiccup), then not the reply's shape (one line at once)
    "not JSON": (ok("hello"), "not JSON"),
    "an HTML page": (ok("<html><body>maintenance</body></html>", "text/html"), "not JSON"),
    "invalid UTF-8": (ok(b"\xff\xfe{\x00"), "not JSON"),
    "an empty body": (ok(b""), "not JSON"),
    "JSON cut short": (ok('{"results": [['), "not JSON"),
    "a JSON list": (ok("[]"), "expected an object with 'results'"),
    "JSON null": (ok("null"), "expected an object with 'results'"),
    "a JSON number": (ok("42"), "expected an object with 'results'"),
    "no results field": (ok('{"hits": []}'), "expected an object with 'results'"),
    "results an object": (ok('{"results": {}}'), "expected one list of hits per query, got dict"),
    "results a string": (ok('{"results": "none"}'), "expected one list of hits per query, got str"),
    "results null": (ok('{"results": null}'), "expected one list of hits per query, got NoneType"),
    "two lists for one query": (ok('{"results": [[], []]}'), "1 queries asked, 2 lists of hits returned"),
    "no lists": (ok('{"results": []}'), "1 queries asked, 0 lists of hits returned"),
    "hits an object": (ok('{"results": [{}]}'), "the hits of query #0 are dict, not a list"),
    # hits that cannot be scored: one line naming the query, the rank and the field
    "a hit that is a string": (hits("a"), "hit 0: expected an object"),
    "no score": (hits({"doc_id": "a", "start": 0, "end": 5}), "score: missing"),
    "NaN score": (ok('{"results": [[{"doc_id": "a", "start": 0, "end": 5, "score": NaN}]]}'), "score: nan is not"),
    "infinite score": (ok('{"results": [[{"doc_id": "a", "start": 0, "end": 5, "score": -Infinity}]]}'),
                       "score: -inf is not"),
    "string score": (hits({**HIT, "score": "0.9"}), "score: '0.9' is not a finite number"),
    "bool score": (hits({**HIT, "score": True}), "score: True is not a finite number"),
    "null doc_id": (hits({**HIT, "doc_id": None}), "doc_id: None is not a string"),
    "unknown doc_id": (hits({**HIT, "doc_id": "zz"}), "doc_id: 'zz' is not a document"),
    "offsets past the end": (hits({**HIT, "end": 9999}), "end: 9999 is past the end of 'a'"),
    "float offsets": (hits({**HIT, "start": 0.5}), "start: 0.5 is not a whole number"),
    "reversed offsets": (hits({**HIT, "start": 5, "end": 1}), "end: 1 is not after start 5"),
    "scores rising down the list": (hits({**HIT, "score": 0.1}, {**HIT, "end": 9, "score": 0.8}), "is above hit 0's"),
    # deep, huge, slow
    "JSON 20k deep": (ok(b"[" * 20_000 + b"]" * 20_000), "nested deeper than 64 levels"),
    "a hit 70 deep": (ok(DEEP_IN_A_HIT), "nested deeper than 64 levels"),
    "a gigabyte declared": (raw(response("200 OK", b'{"results": [[', length=10**9)), "declares 1,000,000,000 bytes"),
    "huge, chunked": (chunked([b'{"results": ["' + b"x" * 20_000] * 8), f"passed the {CAP:,} byte cap"),
    "huge, until close": (until_close(b'{"results": ["' + b"x" * 400_000 + b'"]}'), f"passed the {CAP:,} byte cap"),
    "a body trickled a byte every 0.5 s": (trickle(b"HTTP/1.1 200 OK\r\nContent-Length: 200\r\n\r\n"),
                                         "no whole reply within timeout_s=1 s"),
    "headers trickled a byte every 0.5 s": (trickle(b"", b"HTTP/1.1 200 OK\r\n" * 10), "no whole reply within"),
    "a server that never answers": (silent, "no whole reply within timeout_s=1 s"),
    # broken connections: retried once, then one line
    "reset before replying": (reset, "failed after 2 attempts"),
    "hung up before replying": (hang_up, "failed after 2 attempts"),
    "body shorter than declared": (raw(response("200 OK", b'{"results": []', length=500)), "failed after 2 attempts"),
    "garbage status line": (raw(b"SPEAK FRIEND\r\n\r\n"), "failed after 2 attempts"),
    "bad chunk size": (raw(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"), "failed after 2 attempts"),
}  # fmt: skip
PASSES: dict[str, Behaviour] = {
    "valid JSON sent as text/plain": ok('{"results": [[]]}', "text/plain"),
    "no hits for the query": ok('{"results": [[]]}'),
    "a text hit in no document": hits({"text": "no document says this", "score": 0.4}),
    "extra fields beside results": ok('{"results": [[]], "took_ms": 3, "debug": {"shard": [1, 2]}}'),
    "a hit with extra fields": hits({**HIT, "chunk_id": "c-9", "meta": {"acl": ["all"]}}),
    "chunked, under the cap": chunked([b'{"results": ', b"[[]]}"]),
}


def cached_replies(cache: Path) -> int:
    with sqlite3.connect(cache) as db:
        return int(db.execute("SELECT count(*) FROM entries WHERE namespace = 'external'").fetchone()[0])


def one_error(lines: list[str]) -> str:
    """The run's one error line (info lines may precede it; nothing else, no traceback)."""
    errors = [line for line in lines if line.startswith("evalkit: error: ")]
    assert len(errors) == 1, lines
    assert all(line.startswith("evalkit: ") for line in lines), lines
    assert not any("Traceback" in line or "internal error" in line for line in lines), lines
    return errors[0]


@pytest.mark.parametrize("case", sorted(FAILS))
def test_a_bad_reply_is_one_line_exit_2_and_the_replies_before_it_stay_cached(
    tmp_path: Path, tiny_set: Path, case: str
) -> None:
    bad, message = FAILS[case]
    with RawHttpServer(first_clean(bad)) as server:
        url = server.url
        code, lines = run_sweep(
            [*base_args(tiny_set, tmp_path), "retriever=external", f"retriever.url={url}", *TRANSPORT]
        )
    assert code == 2, (case, lines)
    error = one_error(lines)
    assert f"retriever.url {url}" in error and message in error, (case, error)
    assert cached_replies(tmp_path / "c.sqlite") == 1, "the clean reply before the bad one is kept"


@pytest.mark.parametrize("case", sorted(PASSES))
def test_an_odd_but_valid_reply_is_scored(tmp_path: Path, tiny_set: Path, case: str) -> None:
    with RawHttpServer(first_clean(PASSES[case])) as server:
        code, lines = run_sweep(
            [*base_args(tiny_set, tmp_path), "retriever=external", f"retriever.url={server.url}", *TRANSPORT]
        )
    assert code == 0, (case, lines)
    assert not any("Traceback" in line or "error" in line for line in lines), lines
    rows = pd.read_parquet(next((tmp_path / "reports").glob("*/results.parquet")))
    assert sorted(rows["question_id"]) == ["q1", "q2", "q3"] and cached_replies(tmp_path / "c.sqlite") == 3
    assert rows.set_index("question_id").loc["q1", "hit"] == 1.0  # the clean reply, scored


def test_a_reply_100k_deep_under_the_cap_is_one_line_not_a_recursion_error(tmp_path: Path, tiny_set: Path) -> None:
    deep = b'{"results": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with RawHttpServer(first_clean(ok(deep))) as server:
        url = server.url
        args = [*base_args(tiny_set, tmp_path), "retriever=external", f"retriever.url={url}", *TRANSPORT]
        code, lines = run_sweep([*args, "retriever.max_reply_mb=1"])
    assert code == 2 and "nested deeper than 64 levels" in one_error(lines), lines
    assert cached_replies(tmp_path / "c.sqlite") == 1


def test_replies_in_flight_when_one_fails_are_kept(tmp_path: Path, tiny_set: Path) -> None:
    """Three batches at once: q2 fails at once, q1 and q3 answer later; their replies are cached, not dropped."""

    def reply(sock: socket.socket, request: Request) -> None:
        if request.json["queries"][0]["id"] == "q2":
            sock.sendall(response("400 Bad Request", b"no"))
            return
        time.sleep(0.5)
        sock.sendall(response("200 OK", gold_body(request)))

    with RawHttpServer(reply) as server:
        url = server.url
        args = [*base_args(tiny_set, tmp_path), "retriever=external", f"retriever.url={url}", *TRANSPORT]
        code, lines = run_sweep([*args, "retriever.max_concurrency=3"])
    assert code == 2 and "HTTP 400" in one_error(lines), lines
    assert cached_replies(tmp_path / "c.sqlite") == 2


@pytest.mark.parametrize("filters", ["true", "false"])
def test_an_endpoint_with_no_hits_for_any_query_gives_zero_hit_rows(
    tmp_path: Path, tiny_set: Path, filters: str
) -> None:
    with RawHttpServer(ok('{"results": [[]]}')) as server:
        url = server.url
        args = [*base_args(tiny_set, tmp_path), "retriever=external", f"retriever.url={url}", *TRANSPORT]
        code, lines = run_sweep([*args, f"filters.enabled={filters}"])
    assert code == 0, lines
    summary = pd.read_csv(next((tmp_path / "reports").glob("*/summary.csv")))
    assert (summary["zero_hit_answerable"] == 1.0).all() and (summary["zero_hit_unanswerable"] == 1.0).all()


def test_a_refused_connection_is_one_line(tmp_path: Path, tiny_set: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on: bound, never listening
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/search"
        code, lines = run_sweep([*base_args(tiny_set, tmp_path), "retriever=external", f"retriever.url={url}",
                                 *TRANSPORT])  # fmt: skip
    assert code == 2 and "ConnectionRefusedError" in one_error(lines), lines


BAD_URLS = ["file:///etc/passwd", "not-a-url", "ftp://127.0.0.1/search", "http://", "http://127.0.0.1:99999/x",
            "https:/search", "javascript:void", "//127.0.0.1:8080/search"]  # fmt: skip


@pytest.mark.parametrize("url", BAD_URLS)
def test_a_url_that_is_not_http_is_refused_with_the_config_before_any_work(
    tmp_path: Path, tiny_set: Path, url: str
) -> None:
    code, lines = run_sweep([*base_args(tiny_set, tmp_path), "retriever=external", f"retriever.url={url}"])
    assert code == 2, lines
    assert len(lines) == 1 and lines[0].startswith("evalkit: error: retriever.url: "), lines
    assert not (tmp_path / "reports").exists() and not (tmp_path / "c.sqlite").exists(), "nothing made"


# The other requests evalkit makes itself: the MLflow server's health check and the CI recipe's PR comment.

HEALTH_FAILS: dict[str, tuple[Behaviour, str]] = {
    "a health check trickled": (trickle(b"HTTP/1.1 200 OK\r\nContent-Length: 200\r\n\r\n"), "timeout_s=1 s"),
    "a server that never answers": (silent, "no whole reply within timeout_s=1 s"),
    "a 500 on /health": (status("500 Internal Server Error", b"down"), "HTTP 500 on /health"),
    "a reset": (reset, "no MLflow server answers"),
}


@pytest.mark.parametrize("case", sorted(HEALTH_FAILS))
def test_a_tracking_server_that_does_not_answer_in_time_is_one_line(tmp_path: Path, case: str) -> None:
    pytest.importorskip("mlflow")
    from evalkit.tracking.mlflow_log import TrackingError, check_ready
    from evalkit.tracking.settings import TrackerSettings

    bad, message = HEALTH_FAILS[case]
    with RawHttpServer(bad) as server:
        uri = server.url.removesuffix("/search")
        with pytest.raises(TrackingError) as caught:
            check_ready(TrackerSettings(name="mlflow", uri=uri, timeout_s=1.0), tmp_path)
    text = str(caught.value)
    assert text.startswith(f"tracker.uri: no MLflow server answers at {uri}") and message in text, text
    assert "\n" not in text


def github(listed: bytes, write: Behaviour) -> Behaviour:
    """The comments API: GET lists ``listed``, POST and PATCH answer with ``write``."""

    def reply(sock: socket.socket, request: Request) -> None:
        if request.line.startswith("GET "):
            sock.sendall(response("200 OK", listed))
        else:
            write(sock, request)

    return reply


PR_CASES: dict[str, tuple[Behaviour, int, str]] = {
    "created": (github(b"[]", status("201 Created", b"{}")), 0, "created the gate comment"),
    "updated": (github(b'[{"id": 7, "body": "<!-- evalkit-gate -->old"}]', ok("{}")), 0, "updated the gate comment"),
    "a read-only token": (github(b"[]", status("403 Forbidden", b'{"message": "no"}')), 0, "read-only token"),
    "a 500 on the write": (github(b"[]", status("500 Internal Server Error", b"oops")), 2, "500 from"),
    "a listing that is not JSON": (ok("<html>"), 2, "not JSON"),
    "a listing that is an object": (ok('{"message": "Bad credentials"}'), 2, "expected a list of comments"),
    "a listing that is too deep": (ok(b"[" * 20_000 + b"]" * 20_000), 2, "nested deeper"),
    "a reset": (reset, 2, "could not post gate.md"),
}


@pytest.mark.parametrize("case", sorted(PR_CASES))
def test_the_pr_comment_answers_every_reply_with_one_line(
    tmp_path: Path, case: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from evalkit.project.pr_comment import main

    gate = tmp_path / "gate.md"
    gate.write_text("gate: PASS\n", encoding="utf-8")
    behaviour, code, message = PR_CASES[case]
    with RawHttpServer(behaviour) as server:
        for name, value in {"GITHUB_TOKEN": "t", "GITHUB_REPOSITORY": "o/r", "PR_NUMBER": "3",
                            "GITHUB_API_URL": server.url.removesuffix("/search")}.items():  # fmt: skip
            monkeypatch.setenv(name, value)
        assert main([str(gate)]) == code, capsys.readouterr().err
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("evalkit-gate: ") and message in err[0], err


def test_the_pr_comment_refuses_an_api_url_that_is_not_http(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from evalkit.project.pr_comment import main

    gate = tmp_path / "gate.md"
    gate.write_text("gate: PASS\n", encoding="utf-8")
    for name, value in {"GITHUB_TOKEN": "t", "GITHUB_REPOSITORY": "o/r", "PR_NUMBER": "3",
                        "GITHUB_API_URL": "file:///etc"}.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    assert main([str(gate)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not an http:// or https:// URL" in err[0], err


# Corrupted stores: moved aside with one warning, rebuilt, the clean pool.

STORE_EXTRA = ("manifests deleted", "marker not an object", "marker is a folder")


def _store_corruption(name: str) -> Callable[[Path], None]:
    from tests.test_vectorstore import STORE_CORRUPTIONS, _marker, _table

    extra: dict[str, Callable[[Path], None]] = {
        "manifests deleted": lambda store: shutil.rmtree(_table(store) / "_versions"),
        "marker not an object": lambda store: _marker(store).write_text("[1, 2]", encoding="utf-8"),
        "marker is a folder": lambda store: (_marker(store).unlink(), _marker(store).mkdir()),  # type: ignore[func-returns-value]
    }
    return {**STORE_CORRUPTIONS, **extra}[name]


STORE_CASES = ["data file deleted", "data file truncated", "data file random bytes", "garbage manifest",
               "marker not JSON", "marker lies", "table folder is a file", "store folder is a file",
               *STORE_EXTRA]  # fmt: skip


@pytest.mark.parametrize("case", STORE_CASES)
def test_a_corrupted_store_heals_with_one_warning_and_the_clean_pool(
    tmp_path: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("lancedb", reason='the vectorstore extra is not installed: pip install -e ".[vectorstore]"')
    from evalkit.retrieval.pools import DenseIndex, QueryVectors, dense_pool
    from evalkit.retrieval.vectorstore import store_pool

    rng = np.random.default_rng(11)
    vectors = rng.standard_normal((400, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index, asked = DenseIndex("m@1", 16, vectors), QueryVectors("m@1", vectors[rng.integers(0, 400, 30)])
    from evalkit.retrieval.vectorstore import StoreTable

    table = StoreTable(tmp_path / "cache" / "vectorstore", "recursive-s300-o0-0123456789abcdef")
    exact = dense_pool(index, asked, 10)
    store_pool(index, asked, 10, table)
    capsys.readouterr()
    _store_corruption(case)(table.folder)
    healed = store_pool(index, asked, 10, table)
    warned = capsys.readouterr().err.strip().splitlines()
    assert len(warned) == 1 and warned[0].startswith("evalkit: warning: the vector store "), warned
    aside = [p for p in [*table.folder.iterdir(), *table.folder.parent.iterdir()] if ".corrupt-" in p.name]
    assert any(str(p) in warned[0] for p in aside), (warned, aside)  # kept, and named
    assert np.array_equal(healed.indices, exact.indices) and np.array_equal(healed.scores, exact.scores)
    store_pool(index, asked, 10, table)
    assert capsys.readouterr().err == "", "healed for good: the rebuilt table is reused without a word"


# Bad model folders for embedder=onnx: one line naming the file and what was expected, exit 2.

VOCABULARY = ["[PAD]", "[UNK]", "red", "green", "blue", "apple", "burst", "limit"]


def graph(folder: Path, output_shape: list[Any], output_type: str = "FLOAT", inputs: str = "ids") -> None:
    """A one-node graph: a Gather from a table (token-level vectors), its declared output as asked."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    width = output_shape[-1] if isinstance(output_shape[-1], int) else 1
    table = np.ones((len(VOCABULARY), width), dtype=np.float32 if output_type == "FLOAT" else np.int64)
    kind = getattr(TensorProto, output_type)
    declared = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"])]
    nodes = [helper.make_node("Gather", ["table", "input_ids"], ["out"])]
    if inputs == "float":  # a valid graph that takes float features (cast to ids inside)
        declared = [helper.make_tensor_value_info("input_ids", TensorProto.FLOAT, ["batch", "tokens"])]
        nodes = [helper.make_node("Cast", ["input_ids"], ["ids"], to=TensorProto.INT64),
                 helper.make_node("Gather", ["table", "ids"], ["out"])]  # fmt: skip
    made = helper.make_graph(nodes, "bad", declared, [helper.make_tensor_value_info("out", kind, output_shape)],
                             [numpy_helper.from_array(table, "table")])  # fmt: skip
    model = helper.make_model(made, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(folder / "model.onnx"))


def tokenizer(folder: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers

    made = Tokenizer(models.WordLevel({word: i for i, word in enumerate(VOCABULARY)}, unk_token="[UNK]"))
    made.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    made.save(str(folder / "tokenizer.json"))


def _nanoranker(name: str) -> Path:
    nanoranker = pytest.importorskip("nanoranker")
    return Path(nanoranker.__file__).parent / "resources" / name


def reranker_graph(folder: Path) -> None:
    (folder / "model.onnx").symlink_to(_nanoranker("reranker_nn_v2.onnx"))


def use_graph(folder: Path) -> None:
    (folder / "model.onnx").symlink_to(_nanoranker("universal-sentence-encoder-multilingual.onnx"))


BAD_FOLDERS: dict[str, tuple[Callable[[Path], None], str, str]] = {
    "the bundled reranker's graph": (reranker_graph, "model.onnx", "takes input (tensor(float)); an embedder takes"),
    "the reranker's graph with a tokenizer": (lambda f: (reranker_graph(f), tokenizer(f)), "model.onnx",
                                              "an embedder takes integer inputs"),
    "a tokenizer.json that is not JSON": (lambda f: (use_graph(f), (f / "tokenizer.json").write_text("{oops")),
                                          "tokenizer.json", "is not a Hugging Face tokenizer.json"),
    "a tokenizer.json that is other JSON": (lambda f: (use_graph(f), (f / "tokenizer.json").write_text('{"a": 1}')),
                                            "tokenizer.json", "is not a Hugging Face tokenizer.json"),
    "a tokenizer.json of random bytes": (lambda f: (use_graph(f), (f / "tokenizer.json").write_bytes(os.urandom(300))),
                                         "tokenizer.json", "is not a Hugging Face tokenizer.json"),
    "token ids without a tokenizer": (lambda f: graph(f, ["batch", "tokens", 4]), "model.onnx",
                                      "an embedder takes one string input"),
    "a model of random bytes": (lambda f: (f / "model.onnx").write_bytes(os.urandom(2000)), "model.onnx",
                                "does not load"),
    "an empty model file": (lambda f: (f / "model.onnx").write_bytes(b""), "model.onnx", "does not load"),
    "a model folder named model.onnx": (lambda f: (f / "model.onnx").mkdir(), "", "has no model.onnx"),
    "one number per text": (lambda f: (graph(f, ["batch", "tokens", 1]), tokenizer(f)), "model.onnx",
                            "dim at least 2"),
    "a 4-D output": (lambda f: (graph(f, ["batch", "tokens", 2, 4]), tokenizer(f)), "model.onnx", "of shape"),
    "an integer output": (lambda f: (graph(f, ["batch", "tokens", 4], "INT64"), tokenizer(f)), "model.onnx",
                          "gives float vectors"),
    "float token ids": (lambda f: (graph(f, ["batch", "tokens", 4], inputs="float"), tokenizer(f)), "model.onnx",
                        "an embedder takes integer inputs"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BAD_FOLDERS))
def test_a_bad_onnx_model_folder_is_one_line_naming_the_file(tmp_path: Path, tiny_set: Path, case: str) -> None:
    make, file, message = BAD_FOLDERS[case]
    folder = tmp_path / "model"
    folder.mkdir()
    make(folder)
    args = [*base_args(tiny_set, tmp_path), "retriever=dense", "embedder=onnx", f"embedder.path={folder}",
            "chunk_size=[64]", "chunk_overlap=[0]"]  # fmt: skip
    code, lines = run_sweep(args)
    assert code == 2, (case, lines)
    error = one_error(lines)
    assert str(folder / file).rstrip("/") in error and message in error, (case, error)


def test_the_surface_fuzz_is_large_enough() -> None:
    cases = len(FAILS) + len(PASSES) + 2 + len(BAD_URLS) + len(STORE_CASES) + len(BAD_FOLDERS)
    cases += len(HEALTH_FAILS) + len(PR_CASES) + 4
    assert cases >= 50, cases
