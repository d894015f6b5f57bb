"""retriever=external: production's own retriever, as a Python function or an HTTP endpoint, scored like any config.

A "production retriever" that returns each question's gold (``tests/external/gold_retriever.py``) must
score recall 1.0 on the real shared sets, as offsets and as bare text anchored back, through a function
and through a real HTTP server on 127.0.0.1 that fails like a flaky endpoint does. A reply that cannot
be scored is one line naming the query and the field (exit 2); an endpoint that dies mid-run loses no
reply it gave, and the same command asks only for what is missing.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pytest

from evalkit.labels.read import load_labelset
from evalkit.records import Document, Question
from evalkit.retrieval.external.hits import ExternalHitError, SpanHit, anchor_hits, check_results
from evalkit.retrieval.external.pool import check_best_first, chunks_and_pool
from tests.conftest import REPO, shared_set
from tests.external import gold_retriever
from tests.loopback.faults import FaultPlan
from tests.loopback.retriever_server import RETRIED_KINDS, RetrieverServer
from tests.test_sweep import run_in_process

GRID = ["top_k=[1,5]", "pool_size=5", "progress=false", "report=false", "position=off", "answer_check=off"]
TARGET = "tests.external.gold_retriever"


@pytest.fixture
def gold_of(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Path], Path]]:
    def use(labelset: Path) -> Path:
        monkeypatch.setenv("EVALKIT_GOLD_LABELSET", str(labelset))
        return labelset

    yield use
    gold_retriever._labelset.cache_clear()


def summary_of(run: Path) -> pd.DataFrame:
    """The grid points by top_k (beside them: the calibration's advised threshold at every k, ``off_grid``)."""
    summary = pd.read_csv(run / "summary.csv")
    return summary[~summary["off_grid"].astype(bool)].set_index("top_k")


def assert_perfect(run: Path) -> None:
    at_5 = summary_of(run).loc[5]
    assert at_5["chunker"] == "external" and at_5["retriever"] == "external"
    assert at_5["recall"] == 1.0 and at_5["hit"] == 1.0, at_5[["recall", "hit"]]
    assert at_5["zero_hit_answerable"] == 0.0


def sweep_args(labelset: Path, tmp_path: Path, *extra: str) -> list[str]:
    return [*GRID, f"labelset.path={labelset}", f"reports_dir={tmp_path}", f"cache_path={tmp_path}/c.sqlite", *extra]


def test_a_function_returning_the_gold_offsets_scores_recall_one_on_squad(tmp_path: Path, gold_of) -> None:
    labelset = gold_of(shared_set("squad2-en"))
    run = run_in_process(sweep_args(labelset, tmp_path, "retriever=external", f"retriever.target={TARGET}:offsets"))
    assert_perfect(run)


def test_a_function_asking_for_documents_gets_the_sets_own_and_its_replies_are_keyed_by_them(
    tmp_path: Path, gold_of, small_demo: Path
) -> None:
    gold_retriever.CALLS.clear()
    target = ["retriever=external", f"retriever.target={TARGET}:offsets_seeing_documents", "retriever.batch_size=10"]
    # The gold at rank 1 (a demo question with more than five evidence spans keeps recall@5 just under 1).
    assert summary_of(run_in_process(sweep_args(gold_of(small_demo), tmp_path / "a", *target))).loc[1, "hit"] == 1.0
    asked = len(load_labelset(small_demo).questions)
    assert sum(n for _, n in gold_retriever.CALLS) == asked and len(gold_retriever.CALLS) > 1
    assert len({ids for ids, _ in gold_retriever.CALLS}) == 1, "the same list on every call: index it once"
    # Another set: the same questions, one document longer. Its replies are not the first set's.
    other = tmp_path / "other"
    shutil.copytree(small_demo, other)
    first = json.loads((other / "docs.jsonl").read_text(encoding="utf-8").splitlines()[0])
    with open(other / first["path"], "a", encoding="utf-8") as doc:
        doc.write("\nA sentence this set's copy added.\n")
    gold_retriever.CALLS.clear()
    cache = f"cache_path={tmp_path}/a/c.sqlite"  # the first run's cache
    assert summary_of(run_in_process([*sweep_args(gold_of(other), tmp_path / "b", *target), cache])).loc[1, "hit"] == 1
    assert sum(n for _, n in gold_retriever.CALLS) == asked, "asked again: the documents are part of the key"


def test_an_endpoint_returning_bare_chinese_text_through_faults_scores_recall_one(
    tmp_path: Path, gold_of, capsys: pytest.CaptureFixture[str]
) -> None:
    labelset = gold_of(shared_set("cmrc2018-zh"))
    faults = FaultPlan(rate=0.3, kinds=RETRIED_KINDS, seed=3)
    with RetrieverServer(gold_retriever.passage_text, faults) as server:
        args = ["retriever=external", f"retriever.url={server.url}/search", "retriever.retry_base_delay_s=0"]
        run = run_in_process(sweep_args(labelset, tmp_path, *args))
    assert sum(server.faults.injected.values()) > 0, "the plan injected faults the client retried through"
    assert server.faults.paid_twice == 0, "no batch was answered twice"
    assert sorted(server.answered) == sorted(q.id for q in load_labelset(labelset).questions)
    assert_perfect(run)
    # Every query's extra hit is a sentence no document holds: counted and reported, never scored.
    questions = load_labelset(labelset).questions
    answerable = sum(1 for q in questions if q.answerable)
    told = capsys.readouterr().err
    assert f"{len(questions)} queries ({len(questions)} asked, 0 from the cache), {answerable} hits scored" in told
    assert f"{len(questions)} text hits of {len(questions)} questions are in no document" in told


@pytest.mark.slow
@pytest.mark.parametrize(("name", "form"), [("squad2-en", "passage_text"), ("cmrc2018-zh", "offsets")])
def test_every_other_set_and_form_scores_recall_one(tmp_path: Path, gold_of, name: str, form: str) -> None:
    labelset = gold_of(shared_set(name))
    run = run_in_process(sweep_args(labelset, tmp_path, "retriever=external", f"retriever.target={TARGET}:{form}"))
    assert_perfect(run)
    with RetrieverServer(getattr(gold_retriever, form)) as server:
        over_http = run_in_process(
            sweep_args(labelset, tmp_path / "http", "retriever=external", f"retriever.url={server.url}")
        )
    assert_perfect(over_http)


@pytest.mark.parametrize("filters", ["true", "false"])
def test_a_retriever_that_finds_nothing_gives_zero_hit_rows_and_a_report(
    tmp_path: Path, gold_of, small_demo: Path, filters: str
) -> None:
    """No hits is a result: every answerable question a miss, every unanswerable one a correct abstention."""
    gold_of(small_demo)
    args = ["retriever=external", f"retriever.target={TARGET}:nothing", f"filters.enabled={filters}", "report=true"]
    run = run_in_process(sweep_args(small_demo, tmp_path, *args))
    summary = summary_of(run)
    assert (summary["zero_hit_answerable"] == 1.0).all() and (summary["zero_hit_unanswerable"] == 1.0).all()
    assert (summary["recall"] == 0.0).all() and (summary["n_chunks"] == 0).all()
    results = pd.read_parquet(run / "results.parquet")
    assert (results["n_returned"] == 0).all() and len(results) == len(summary) * results["question_id"].nunique()
    assert (run / "index.html").stat().st_size > 10_000


@pytest.mark.parametrize("filters", ["true", "false"])
def test_a_retriever_plugin_that_finds_nothing_completes_with_zero_hits(
    tmp_path: Path, small_demo: Path, filters: str
) -> None:
    from tests.test_plugins import fake_distribution, python_with

    site = tmp_path / "site"
    fake_distribution(site, "team-search", "[evalkit.retrievers]\nempty = team_empty:search\n",
                      {"team_empty": "def search(queries, k):\n    return [[] for _ in queries]\n"})  # fmt: skip
    argv = ["evalkit.sweep", "retriever=empty", "position=off",
    "answer_check=off", "progress=false", "report=false", "run_id=e",
            f"labelset.path={small_demo}", f"reports_dir={tmp_path}/r", f"filters.enabled={filters}"]  # fmt: skip
    done = python_with(site, f"import sys; sys.argv = {argv!r}\nfrom evalkit.sweep import main; main()\n", tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = pd.read_csv(tmp_path / "r" / "e" / "summary.csv")
    assert (summary["zero_hit_answerable"] == 1.0).all() and (summary["zero_hit_unanswerable"] == 1.0).all()


def test_a_retriever_that_finds_nothing_for_some_queries_scores_the_rest(
    tmp_path: Path, gold_of, small_demo: Path
) -> None:
    gold_of(small_demo)
    run = run_in_process(
        sweep_args(small_demo, tmp_path, "retriever=external", f"retriever.target={TARGET}:every_other")
    )
    rows = pd.read_parquet(run / "results.parquet")
    at_5 = rows[(rows.top_k == 5) & rows.answerable]
    found = at_5["question_id"].map(lambda q: sum(map(ord, q)) % 2 == 1)
    assert (at_5.loc[found, "hit"] == 1.0).all() and (at_5.loc[~found, "n_returned"] == 0).all()
    assert 0 < found.sum() < len(at_5)


def test_the_gate_finds_an_external_runs_production_without_being_told(
    tmp_path: Path, gold_of, small_demo: Path
) -> None:
    """The README's "Evaluate your production retriever" case, gated as the issue wrote it: no --baseline-config.
    Production (config.yaml's baseline: 512/64, top_k 5) is the external config at top_k 5, its own chunking."""
    gold_of(small_demo)
    run = run_in_process(sweep_args(small_demo, tmp_path, "retriever=external", f"retriever.target={TARGET}:offsets"))
    gate = [
        sys.executable,
        "-m",
        "evalkit.gate",
        "--run",
        str(run),
        "--candidate-config",
        "external|external|none|k1|t0",
    ]
    done = subprocess.run(gate, capture_output=True, text=True, cwd=REPO, timeout=600)
    assert done.returncode in (0, 1), done.stderr  # a verdict, not "none is the manifest's baseline" (exit 2)
    verdict = json.loads((run / "gate.json").read_text(encoding="utf-8"))
    assert verdict["baseline"]["config_id"] == "external|external|none|k5|t0", verdict["baseline"]
    assert verdict["candidate"]["config_id"] == "external|external|none|k1|t0"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalkit.sweep", *args], capture_output=True, text=True, cwd=REPO, timeout=600
    )


def test_a_dead_endpoint_is_one_line_and_the_same_command_asks_only_what_is_missing(tmp_path: Path, gold_of) -> None:
    labelset = gold_of(shared_set("cmrc2018-zh"))
    ids = [q.id for q in load_labelset(labelset).questions]
    base = sweep_args(labelset, tmp_path, "retriever=external", "retriever.batch_size=100", "retriever.max_retries=0")
    dying = RetrieverServer(gold_retriever.offsets, dead_after=5).start()
    try:
        url = f"{dying.url}/search"
        first = cli(*base, f"retriever.url={url}", "retriever.max_concurrency=1")
    finally:
        dying.stop()
    assert first.returncode == 2, first.stderr
    last = first.stderr.strip().splitlines()[-1]
    assert last.startswith("evalkit: ") and f"retriever.url {url}" in last and "HTTP 500" in last, first.stderr
    assert "Traceback" not in first.stderr
    assert len(dying.answered) == 500 and dying.dead_replies >= 1  # the next batch may have left already
    # Production is back at the same address: the replies it gave are cached under it, so only the rest is asked.
    healthy = RetrieverServer(gold_retriever.offsets)
    healthy.port = int(url.split(":")[2].split("/")[0])
    with healthy:
        second = cli(*base, f"retriever.url={url}")
    assert second.returncode == 0, second.stderr
    assert sorted(healthy.answered) == sorted(set(ids) - set(dying.answered))
    assert_perfect(next(p for p in tmp_path.iterdir() if (p / "summary.csv").exists()))


def test_a_dry_run_counts_the_queries_it_would_send_and_sends_none(tmp_path: Path, gold_of) -> None:
    labelset = gold_of(shared_set("cmrc2018-zh"))
    n = len(load_labelset(labelset).questions)
    with RetrieverServer(gold_retriever.offsets) as server:
        args = sweep_args(labelset, tmp_path, "retriever=external", f"retriever.url={server.url}", "dry_run=true")
        planned = cli(*args)
    assert planned.returncode == 0, planned.stderr
    assert server.answered == [] and server.faults.total == 0, "a dry run never calls production"
    assert f"{n} queries to ask for 5 hits each, 0 cached" in planned.stdout + planned.stderr


def test_a_reply_that_cannot_be_scored_is_one_line_naming_query_and_field(tmp_path: Path, gold_of) -> None:
    labelset = gold_of(shared_set("cmrc2018-zh"))
    result = cli(*sweep_args(labelset, tmp_path, "retriever=external", f"retriever.target={TARGET}:reversed_offsets"))
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    second = load_labelset(labelset).questions[1].id
    assert f"query {second!r}, hit 0: end:" in lines[-1] and "is not after start" in lines[-1], result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr


# The contract, hit by hit (pure functions: every way a hit can be wrong names its query, rank and field).

DOCS = (
    Document("a", "Travel must be booked through the portal.\nMeals are capped at 60 EUR."),
    Document("b", "差旅需提前预订。餐费上限为六十欧元。"),
)
Q = (Question("q-1", "where?", (), False, (), "none"), Question("q-2", "how much?", (), False, (), "none"))

BAD_HITS = {
    "negative start": ({"doc_id": "a", "start": -1, "end": 5, "score": 1.0}, "start: -1 is negative"),
    "reversed": ({"doc_id": "a", "start": 9, "end": 3, "score": 1.0}, "end: 3 is not after start 9"),
    "past the end": ({"doc_id": "b", "start": 0, "end": 99, "score": 1.0}, "end: 99 is past the end of 'b'"),
    "unknown doc": ({"doc_id": "zz", "start": 0, "end": 3, "score": 1.0}, "doc_id: 'zz' is not a document"),
    "numeric doc": ({"doc_id": 7, "start": 0, "end": 3, "score": 1.0}, "doc_id: 7 is not a string"),
    "no score": ({"doc_id": "a", "start": 0, "end": 3}, "score: missing"),
    "nan score": ({"doc_id": "a", "start": 0, "end": 3, "score": math.nan}, "score: nan is not a finite number"),
    "string score": ({"doc_id": "a", "start": 0, "end": 3, "score": "0.9"}, "score: '0.9' is not a finite number"),
    "bool score": ({"doc_id": "a", "start": 0, "end": 3, "score": True}, "score: True is not a finite number"),
    "float offset": ({"doc_id": "a", "start": 0.5, "end": 3, "score": 1.0}, "start: 0.5 is not a whole number"),
    "no end": ({"doc_id": "a", "start": 0, "score": 1.0}, "end: None is not a whole number"),
    "empty text": ({"text": "  ", "score": 1.0}, "text: '  ' is not a non-empty string"),
    "not an object": (["a", 0, 3], "expected an object"),
}


@pytest.mark.parametrize("case", sorted(BAD_HITS))
def test_a_hit_that_cannot_be_scored_names_query_rank_and_field(case: str) -> None:
    hit, message = BAD_HITS[case]
    good = {"doc_id": "a", "start": 0, "end": 6, "score": 2.0}
    with pytest.raises(ExternalHitError) as caught:
        anchor_hits(Q, [[good], [good, hit]], DOCS, "retriever.url http://127.0.0.1:1/x")
    text = str(caught.value)
    assert text.startswith("retriever.url http://127.0.0.1:1/x: query 'q-2', hit 1: "), text
    assert message in text and "\n" not in text


def test_text_hits_anchor_exactly_or_with_white_space_normalised_and_the_rest_are_counted() -> None:
    results = [
        [{"text": "Meals are  capped\nat 60 EUR.", "score": 0.9}, {"text": "not in any document", "score": 0.5}],
        [
            {"text": "餐费上限为六十欧元", "score": 0.8, "doc_id": "b"},
            {"doc_id": "a", "start": 0, "end": 6, "score": 0.1},
        ],
    ]
    anchored = anchor_hits(Q, results, DOCS, "here")
    meals = DOCS[0].text.index("Meals")
    assert anchored.hits[0] == (SpanHit("a", meals, len(DOCS[0].text), 0.9),)
    assert anchored.hits[1][0] == SpanHit("b", 8, 17, 0.8) and anchored.hits[1][1] == SpanHit("a", 0, 6, 0.1)
    assert anchored.unanchored == (1, 0) and anchored.anchored_text == 2
    chunks, pool = chunks_and_pool(anchored, DOCS, 3)
    assert [(c.doc_id, c.start, c.end) for c in chunks] == [("a", 0, 6), ("a", meals, len(DOCS[0].text)), ("b", 8, 17)]
    assert pool.indices.tolist() == [[1, -1, -1], [2, 0, -1]] and pool.scores[1, :2].tolist() == [0.8, 0.1]


def test_scores_that_rise_down_the_list_are_refused_with_the_hint_about_distances() -> None:
    low, high = {"doc_id": "a", "start": 0, "end": 6, "score": 0.2}, {"doc_id": "b", "start": 0, "end": 4, "score": 0.7}
    rising = [[low, high]]
    anchored = anchor_hits(Q[:1], rising, DOCS, "here")
    with pytest.raises(ExternalHitError, match=r"query 'q-1', hit 1: score: 0.7 is above hit 0's 0.2.*negative"):
        check_best_first(Q[:1], anchored, "here")


def test_a_reply_with_the_wrong_number_of_lists_is_refused() -> None:
    with pytest.raises(ExternalHitError, match="2 queries asked, 1 lists of hits returned"):
        check_results([[]], 2, "here")
    with pytest.raises(ExternalHitError, match="the hits of query #1 are dict, not a list"):
        check_results([[], {}], 2, "here")
