"""production_log=: production's logged retrievals scored against the gold, beside the replica and the best config.

The acceptance: a traced production system (the OpenTelemetry SDK writing OTLP JSON) answers every labelled
question; the same system behind HTTP on 127.0.0.1 is swept as ``retriever=external``. Production's logged top-k
must score exactly what the external retriever's identical hits score, question by question. A production whose
logs disagree with the sweep's replica gets a "replica gap" line on the console, in review.json and in the report.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from evalkit.labels.read import read_set
from evalkit.run import files
from evalkit.run.review import read_review
from tests.conftest import REPO
from tests.loopback.retriever_server import Answer, RetrieverServer
from tests.otlp_rag import TracedRag
from tests.test_sweep import run_in_process

K = 3
SCORED = ["recall", "hit", "zero_hit", "context_precision", "precision", "mrr", "ndcg", "recall_trec",
          "n_returned", "leaked_units"]  # fmt: skip
QUIET = ["progress=false", "position=off", "answer_check=off", f"baseline.top_k={K}"]


def questions_of(labelset: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (labelset / "questions.jsonl").read_text(encoding="utf-8").splitlines()]


def traced_production(path: Path, labelset: Path, convention: str, worst: bool = False) -> TracedRag:
    """Production answers every labelled question once (and the first few twice, earlier), traced to ``path``."""
    documents = {d.doc_id: d.text for d in read_set(labelset).documents}
    rag = TracedRag(path, documents, convention, k=K, worst=worst)
    questions = questions_of(labelset)
    rag.short = {q["question"]: i % 3 for i, q in enumerate(questions[::10])}  # nothing, one hit, two hits
    for i, q in enumerate(questions[:5]):  # asked before as well: the latest retrieval is the one scored
        rag.ask(q["question"].upper(), (1_780_000_000 + i) * 10**9, f"u{i}")
    for i, q in enumerate(questions):
        rag.ask(q["question"], (1_790_000_000 + i) * 10**9, f"u{i}", q["tags"].get("role", ""))
    return rag


def as_external(rag: TracedRag, convention: str) -> Answer:
    """The same production behind the external retriever's contract: the very hits it logged."""

    def answer(queries: list[dict[str, Any]], k: int) -> list[list[dict[str, Any]]]:
        replies = []
        for query in queries:
            hits = rag.rank(query["question"])
            if convention == "genai":  # offsets, as the logged chunk ids carry
                replies.append([{"doc_id": p.doc_id, "start": p.start, "end": p.end, "score": s} for p, s in hits])
            else:  # text, as the logged content
                replies.append([{"text": p.text, "score": s} for p, s in hits])
        return replies

    return answer


@pytest.mark.parametrize("convention", ["genai", "openinference"])
def test_logged_top_k_scores_as_the_external_retriever_returning_the_same_hits(
    tmp_path: Path, small_demo: Path, convention: str
) -> None:
    log = tmp_path / "prod.jsonl"
    rag = traced_production(log, small_demo, convention)
    with RetrieverServer(as_external(rag, convention)) as server:
        run = run_in_process(
            [*QUIET, f"labelset.path={small_demo}", f"reports_dir={tmp_path}", "report=false", "retriever=external",
             f"retriever.url={server.url}/search", f"top_k={K}", f"pool_size={K}", "filters.enabled=false",
             f"production_log={log}"]
        )  # fmt: skip
    results = pd.read_parquet(run / files.RESULTS)
    external = results[results["top_k"] == K].set_index("question_id").sort_index()
    logged = pd.read_parquet(run / files.PRODUCTION_LOG_ROWS).set_index("question_id").sort_index()
    assert len(logged) == len(questions_of(small_demo)) == len(external)
    assert (logged["config_id"] == files.LOGGED_CONFIG).all()
    for column in SCORED:
        np.testing.assert_array_equal(logged[column].to_numpy(), external[column].to_numpy(), err_msg=column)
    answerable = logged[logged["answerable"]]
    assert 0 < answerable["recall"].mean() < 1 and answerable["hit"].sum() > 0  # a real, imperfect production
    assert set(logged["n_returned"]) == {0, 1, 2, K}, "short lists and empty ones are scored alike too"
    info = json.loads((run / files.PRODUCTION_LOG_JSON).read_text(encoding="utf-8"))
    assert info["format"] == "otlp" and info["matched"] == len(logged) and info["not_in_set"] == 0


def test_a_replica_that_is_not_production_gets_a_gap_line(
    tmp_path: Path, small_demo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "prod.otlp.jsonl"
    traced_production(log, small_demo, "genai", worst=True)  # production's index is broken; the replica's is not
    run = run_in_process(
        [*QUIET, f"labelset.path={small_demo}", f"reports_dir={tmp_path}", "sweep=quick", f"top_k=[{K},5]",
         "report=true", f"production_log={log}"]
    )  # fmt: skip
    review = read_review(run)
    assert review is not None and review.production_log is not None
    logged = review.production_log
    assert logged.replica_id == review.baseline_id and logged.matched == len(questions_of(small_demo))
    recall = next(m for m in logged.measures if m.name == "recall")
    assert recall.logged is not None and recall.replica is not None
    assert recall.logged.mean < recall.replica.mean and recall.logged_vs_replica is not None
    assert recall.logged_vs_replica.delta_high < 0 and "cluster" in recall.logged_vs_replica.test
    assert "recall" in logged.gap
    names = [m.name for m in logged.measures]
    assert names == ["recall", "hit", "zero_hit_answerable", "context_precision", "leakage"]
    told = capsys.readouterr().err
    assert f"replica gap: production's logged top-{K}" in told and "the replica is not production" in told
    assert f"{logged.matched} of {logged.matched} labelled questions found in it" in told
    html = (run / "index.html").read_text(encoding="utf-8")
    assert 'id="production-log"' in html and "Replica gap" in html


def test_a_log_that_cannot_be_read_stops_the_sweep_before_it_runs(tmp_path: Path, small_demo: Path) -> None:
    broken = tmp_path / "prod.otlp.json"
    broken.write_text('{"resourceSpans": [', encoding="utf-8")
    for value, message in ((broken, "not an OTLP JSON trace export"), (tmp_path / "none.jsonl", "is not a file")):
        result = subprocess.run(
            [sys.executable, "-m", "evalkit.sweep", f"labelset.path={small_demo}", f"reports_dir={tmp_path}/r",
             "sweep=quick", *QUIET, f"production_log={value}"],
            capture_output=True, text=True, cwd=REPO, timeout=300,
        )  # fmt: skip
        assert result.returncode == 2, result.stderr
        assert "production_log" in result.stderr and message in result.stderr and "Traceback" not in result.stderr
        assert not (tmp_path / "r").exists() or not any((tmp_path / "r").glob("*/summary.parquet"))


def test_a_jsonl_log_with_document_and_chunk_ids_is_scored_too(tmp_path: Path, tiny_set: Path) -> None:
    en = read_set(tiny_set).documents[0]
    answer = en.text.index("20")
    rows = [
        # the English question: first a miss (the heading chunk), then, later, the chunk holding the answer
        {"question": "What burst does RateLimiter allow by default?", "timestamp": "2026-11-01T10:00:00Z",
         "returned": ["en#0-13"]},
        {"question": "what burst does RateLimiter allow by default", "timestamp": "2026-11-02T10:00:00Z",
         "returned": [f"en#{answer - 10}-{answer + 12}", "gone-doc", "en#0-99999"]},
        # the Chinese one: the whole document by id
        {"question": "住宿标准是每晚多少钱？", "timestamp": "2026-11-02T11:00:00Z", "returned": ["zh"]},
        {"question": "Not a labelled question", "timestamp": "2026-11-02T12:00:00Z", "returned": ["en"]},
    ]  # fmt: skip
    log = tmp_path / "prod.jsonl"
    log.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    run = run_in_process(
        [*QUIET, f"labelset.path={tiny_set}", f"reports_dir={tmp_path}", "sweep=quick", "report=false",
         f"production_log={log}", "chunk_size=64", "chunk_overlap=0", "baseline.chunk_size=64",
         "baseline.chunk_overlap=0"]
    )  # fmt: skip
    info = json.loads((run / files.PRODUCTION_LOG_JSON).read_text(encoding="utf-8"))
    assert info["format"] == "query log" and info["entries"] == 4 and info["matched"] == 2
    assert info["not_in_set"] == 2, "an unknown document and a chunk past its document's end"
    logged = pd.read_parquet(run / files.PRODUCTION_LOG_ROWS).set_index("question_id")
    assert logged.loc["q-en", "hit"] == 1.0 and logged.loc["q-en", "n_returned"] == 1  # the latest retrieval
    assert logged.loc["q-zh", "hit"] == 1.0 and logged.loc["q-zh", "context_precision"] == 1.0
