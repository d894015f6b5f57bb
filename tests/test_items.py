"""Item analysis: questions that never discriminate between configs, and suspect gold, found on planted labels.

The statistics are checked on matrices worked out by hand; then wrong labels are planted in a cut of the
bundled demo set (gold moved to random text of another document, or to an 800-character stretch of the
wrong section of the right document), a real sweep runs over 48 configs (four chunkings x top_k x bm25's
thresholds), and review.json, the report, the console and the queue command must name the planted questions.
"""

from __future__ import annotations

import json
import math
import random
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from evalkit.curate.annotate.store import AnnotationStore
from evalkit.curate.queue import read_queue
from evalkit.labels.load import read_documents
from evalkit.run.review import read_review
from evalkit.scoring.items import MIN_CONFIGS, item_analysis
from evalkit.scoring.registry import measure
from tests.conftest import REPO, demo_subset, shared_set
from tests.test_sweep import run_in_process

GRID = [
    "chunk_size=[128,256,512,1024]",
    "chunk_overlap=[0]",
    "top_k=[1,3,5]",
    "retriever=bm25",
    "baseline.chunk_overlap=0",  # production (512/k5) is in the grid: the run has a decision
    "progress=false",
    "report=true",
]
PLANTED_PER_KIND = 4
WRONG_SECTION_CHARS = 800


# ----- the statistics, by hand ----------------------------------------------------------------------------


def _results(scores: dict[str, list[float]]) -> pd.DataFrame:
    """Result rows of questions x configs: ``scores[qid][c]`` is the hit of config ``c``."""
    rows = [
        {"config_id": f"c{c}", "question_id": qid, "answerable": True, "hit": value, "recall": value}
        for qid, values in scores.items()
        for c, value in enumerate(values)
    ]
    return pd.DataFrame(rows)


def test_item_statistics_worked_out_by_hand() -> None:
    # Eight configs, better to the right on the rest of the set; "flip" is right only under the four worst.
    good = [0, 0, 1, 1, 1, 1, 1, 1]
    scores = {
        "a": good,
        "b": [0, 0, 0, 1, 1, 1, 1, 1],
        "c": [0, 0, 0, 0, 1, 1, 1, 1],
        "flip": [1, 1, 1, 1, 0, 0, 0, 0],
        "easy": [1] * 8,
        "lost": [0] * 8,
    }
    found = item_analysis(_results(scores), measure("hit"))
    assert (found.n_configs, found.n_questions, found.group_size) == (8, 6, 2)  # round(0.27 * 8) = 2
    flip = next(s for s in found.suspect if s.question_id == "flip")
    assert flip.reason == "negative" and (flip.p_upper, flip.p_lower) == (0.0, 1.0)
    # Rest score of each config for "flip": (a + b + c + easy + lost) / 5 = (1, 1, 2, 3, 4, 4, 4, 4) / 5.
    # By hand (the scale cancels): sum (x - 0.5)(r - 2.875) = -4.5, sum (x - 0.5)^2 = 2, sum (r - 2.875)^2 = 12.875,
    # so r = -4.5 / sqrt(25.75) = -0.8868.
    rest = [1, 1, 2, 3, 4, 4, 4, 4]
    x = [1, 1, 1, 1, 0, 0, 0, 0]
    mx, mr = sum(x) / 8, sum(rest) / 8
    expected = sum((a - mx) * (b - mr) for a, b in zip(x, rest, strict=True)) / math.sqrt(
        sum((a - mx) ** 2 for a in x) * sum((b - mr) ** 2 for b in rest)
    )
    assert flip.r == pytest.approx(expected) and expected == pytest.approx(-4.5 / math.sqrt(25.75))
    lost = next(s for s in found.suspect if s.question_id == "lost")
    assert lost.reason == "upper_miss" and lost.p_upper == 0.0
    assert {s.question_id for s in found.suspect} == {"flip", "lost"}
    assert {(s.question_id, s.reason) for s in found.never_discriminating} == {("easy", "always"), ("lost", "never")}
    assert all(math.isnan(s.r) for s in found.never_discriminating)


def test_a_lower_is_better_measure_reads_the_same_way() -> None:
    """Zero-hit on answerable questions (lower is better): the same questions, means in the measure's direction."""
    scores = {"a": [0, 0, 1, 1, 1, 1, 1, 1], "b": [0, 0, 0, 1, 1, 1, 1, 1], "flip": [1, 1, 1, 1, 0, 0, 0, 0]}
    scores |= {"easy": [1] * 8, "lost": [0] * 8}
    results = _results(scores).assign(zero_hit=lambda f: 1.0 - f["hit"])
    found = item_analysis(results, measure("zero_hit_answerable"))
    flip = next(s for s in found.suspect if s.question_id == "flip")
    assert flip.reason == "negative" and (flip.p_upper, flip.p_lower) == (1.0, 0.0)  # zero-hits under the best
    assert {(s.question_id, s.reason) for s in found.never_discriminating} == {("easy", "always"), ("lost", "never")}


def test_too_few_configs_give_no_analysis() -> None:
    few = _results({q: [1, 0, 1, 0, 1, 0, 1][: MIN_CONFIGS - 1] for q in ("a", "b", "c", "d")})
    found = item_analysis(few, measure("hit"))
    assert found.suspect == () and found.never_discriminating == ()
    assert "needs at least 8 configs" in found.skipped


def test_the_stuffed_gold_documents_answer_is_kept_only_when_it_is_another_answer() -> None:
    from evalkit.review.items import stuffed_answers

    rows = pd.DataFrame(
        [
            # q1: every stuffed answer wrong, none a refusal: another answer; its retrieve-5 row does not count
            ("q1", "stuff", True, "1944", False, False),
            ("q1", "stuff", True, "1945", False, False),
            ("q1", "retrieve-5", True, "1943", True, False),
            ("q2", "stuff", True, "1943", True, False),  # right once: the gold is what the document says
            ("q2", "stuff", True, "1944", False, False),
            ("q3", "stuff", True, "I cannot tell", False, True),  # a refusal is no other answer
            ("q4", "stuff", False, "", pd.NA, False),  # not sent (did not fit): nothing said
            ("q5", "retrieve-5", True, "x", False, False),  # not stuffed
        ],
        columns=["question_id", "arm", "sent", "answer", "correct", "refused"],
    ).astype({"correct": "boolean", "refused": "boolean"})
    assert stuffed_answers(rows) == {"q1": "1944"}
    assert stuffed_answers(None) == {} and stuffed_answers(rows.drop(columns="refused")) == {}


# ----- planted wrong labels, a real sweep -----------------------------------------------------------------


def _plant(root: Path) -> dict[str, str]:
    """Move the gold of some answerable questions to wrong text; returns planted id -> how."""
    index = [json.loads(line) for line in (root / "docs.jsonl").read_text(encoding="utf-8").splitlines()]
    docs = {d["doc_id"]: (root / d["path"]).read_text(encoding="utf-8") for d in index}
    questions = [json.loads(line) for line in (root / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    rng = random.Random(7)

    def wrong_section_starts(q: dict) -> list[int]:
        doc_id = q["evidence"][0]["doc_id"]
        text = docs[doc_id]
        taken = [(s["start"], s["end"]) for s in q["evidence"] + q.get("source_passage", []) if s["doc_id"] == doc_id]
        return [
            m.end()
            for m in re.finditer("\n", text)
            if m.end() + WRONG_SECTION_CHARS <= len(text)
            and all(m.end() + WRONG_SECTION_CHARS <= a - 50 or m.end() >= b + 50 for a, b in taken)
        ]

    answerable = [q for q in questions if q["answerable"] and q["evidence"]]
    rng.shuffle(answerable)
    sections = [q for q in answerable if wrong_section_starts(q)][:PLANTED_PER_KIND]
    others = [q for q in answerable if q not in sections][:PLANTED_PER_KIND]
    planted: dict[str, str] = {}
    for q in sections:
        doc_id = q["evidence"][0]["doc_id"]
        start = rng.choice(wrong_section_starts(q))
        span = (doc_id, start, start + WRONG_SECTION_CHARS)
        planted[q["id"]] = "wrong section"
        q["evidence"] = [{"doc_id": doc_id, "start": span[1], "end": span[2], "text": docs[doc_id][span[1] : span[2]]}]
    for q in others:
        cited = {s["doc_id"] for s in q["evidence"]}
        doc_id = rng.choice(sorted(d for d in docs if d not in cited))
        length = q["evidence"][0]["end"] - q["evidence"][0]["start"]
        start = rng.randrange(0, len(docs[doc_id]) - length)
        planted[q["id"]] = "random text"
        q["evidence"] = [
            {"doc_id": doc_id, "start": start, "end": start + length, "text": docs[doc_id][start : start + length]}
        ]
    for q in sections + others:
        q.pop("source_passage", None)  # the passage the old gold came from says nothing about the new one
    (root / "questions.jsonl").write_text(
        "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in questions), encoding="utf-8"
    )
    return planted


@pytest.fixture(scope="module")
def planted_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str], str]:
    """(run folder, labelled set, planted ids, the sweep's stderr)."""
    root = tmp_path_factory.mktemp("planted")
    labelset = demo_subset(root / "set")
    planted = _plant(labelset)
    capture = tmp_path_factory.mktemp("stderr") / "stderr.txt"
    stream = capture.open("w", encoding="utf-8")
    saved, sys.stderr = sys.stderr, stream
    try:
        run_dir = run_in_process([*GRID, f"labelset.path={labelset}", f"reports_dir={root / 'reports'}"])
    finally:
        sys.stderr = saved
        stream.close()
    return run_dir, labelset, planted, capture.read_text(encoding="utf-8")


def test_planted_wrong_labels_are_suspect_gold(planted_run: tuple[Path, Path, dict[str, str], str]) -> None:
    run_dir, _, planted, stderr = planted_run
    review = read_review(run_dir)
    assert review is not None and review.items is not None
    items = review.items
    assert items.n_configs == 48 and items.measure == "recall"
    flagged = {s.question_id for s in items.suspect}
    hits = flagged & planted.keys()
    precision, recall = len(hits) / max(len(flagged), 1), len(hits) / len(planted)
    by_kind = {k: sum(1 for q in hits if planted[q] == k) for k in sorted(set(planted.values()))}
    print(f"suspect gold on {len(planted)} planted labels: precision {precision:.2f}, recall {recall:.2f} {by_kind}")
    # Measured at this seed: precision 1.00 (6 of 6 flagged are planted), recall 0.75 (4 of 4 random text, 2 of 4
    # wrong section: the other two are found by some of the best configs, whose chunks lie inside the wide span).
    assert precision == 1.0, sorted(flagged - planted.keys())
    assert recall >= 0.75, by_kind
    assert by_kind["random text"] == PLANTED_PER_KIND
    never = {s.question_id for s in items.never_discriminating if s.reason == "never"}
    assert never <= planted.keys(), "every true question of the set is found by some config"
    # The report lists them; the console says how many.
    html = (run_dir / "index.html").read_text(encoding="utf-8")
    section = html[html.index('<section id="items"') :]
    section = section[: section.index("</section>")]
    suspect_part = section[: section.index("Never discriminating")]
    for qid in flagged:
        assert f"<td>{qid}</td>" in suspect_part, qid
    # Each with its second signal, gold elsewhere listed first.
    doubts = [s.doubt for s in items.suspect]
    assert all(d in ("wrong_span", "wrong_document", "hard") for d in doubts)
    assert doubts == sorted(doubts, key=lambda d: d == "hard")
    assert suspect_part.count("gold elsewhere: ") == sum(d != "hard" for d in doubts) > 0
    assert f"evalkit: items: {len(flagged)} suspect gold" in stderr, stderr[-2000:]


def _labels(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalkit.labels", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


def test_the_queue_command_sends_suspect_gold_to_the_annotation_page(
    planted_run: tuple[Path, Path, dict[str, str], str],
) -> None:
    run_dir, labelset, _, _ = planted_run
    review = read_review(run_dir)
    assert review is not None and review.items is not None
    suspect = [s.question_id for s in review.items.suspect]
    done = _labels("queue", "--suspect", str(run_dir))
    assert done.returncode == 0, done.stderr
    assert f"{len(suspect)} added to" in done.stdout
    documents = {d.doc_id: d for d in read_documents(labelset)}
    queued, problems = read_queue(labelset, documents)
    assert not problems and [i.id for i in queued] == suspect
    questions = {
        q["id"]: q for q in map(json.loads, (labelset / "questions.jsonl").read_text(encoding="utf-8").splitlines())
    }
    doubts = {s.question_id: s.doubt for s in review.items.suspect}
    for item in queued:
        assert item.tags["suspect_gold"] is True and item.tags["flagged_in"] == run_dir.name
        assert item.tags["item_doubt"] == doubts[item.id]
        gold = [(s["doc_id"], s["start"], s["end"]) for s in questions[item.id]["evidence"]]
        assert [(s.doc_id, s.start, s.end) for s in item.proposed] == gold, "the doubted gold is proposed"
        assert item.returned, "the focus config's chunks are shown beside it"
    # The annotation page's store serves them, each still holding its current label until changed.
    store = AnnotationStore(labelset)
    assert [i.id for i in store.items] == suspect
    # Again: nothing is queued twice.
    again = _labels("queue", "--suspect", "--never-discriminating", str(run_dir))
    assert again.returncode == 0, again.stderr
    assert [i.id for i in read_queue(labelset, documents)[0]][: len(suspect)] == suspect
    assert "0 added" in again.stdout or "already queued" in again.stdout


def test_the_queue_command_refuses_bad_input(
    tmp_path: Path, planted_run: tuple[Path, Path, dict[str, str], str]
) -> None:
    run_dir = planted_run[0]
    nothing = _labels("queue", str(run_dir))
    assert nothing.returncode == 2 and nothing.stderr.strip().count("\n") == 0
    assert "--suspect" in nothing.stderr
    missing = _labels("queue", "--suspect", str(tmp_path / "no-run"))
    assert missing.returncode == 2 and "not a folder" in missing.stderr and "Traceback" not in missing.stderr


# ----- the second signal on a real shared set: gold elsewhere vs a hard question ----------------------------

SQUAD_DOCS = 40
SQUAD_PER_KIND = 4


def _cut(source: Path, root: Path, n_docs: int) -> Path:
    """The first ``n_docs`` documents of a shared set and the questions that cite only them (a copy)."""
    docs = [json.loads(line) for line in (source / "docs.jsonl").read_text(encoding="utf-8").splitlines()][:n_docs]
    kept = {d["doc_id"] for d in docs}
    for doc in docs:
        (root / doc["path"]).parent.mkdir(parents=True, exist_ok=True)
        (root / doc["path"]).write_bytes((source / doc["path"]).read_bytes())
    (root / "docs.jsonl").write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    questions = []
    for line in (source / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        cited = {s["doc_id"] for s in q["evidence"] + q.get("source_passage", [])}
        if cited and cited <= kept:
            questions.append(line + "\n")
    (root / "questions.jsonl").write_text("".join(questions), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def squad_planted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], str]:
    """(run folder, planted id -> kind, the sweep's stderr) on a cut of squad2-en with three kinds planted."""
    from benchmarks.item_kinds import GRID as BENCH_GRID
    from benchmarks.item_kinds import plant

    root = tmp_path_factory.mktemp("squad-planted")
    labelset = _cut(shared_set("squad2-en"), root / "set", SQUAD_DOCS)
    planted = plant(labelset, SQUAD_PER_KIND, seed=7)
    capture = root / "stderr.txt"
    stream = capture.open("w", encoding="utf-8")
    saved, sys.stderr = sys.stderr, stream
    try:
        run_dir = run_in_process([*BENCH_GRID, f"labelset.path={labelset}", f"reports_dir={root / 'reports'}"])
    finally:
        sys.stderr = saved
        stream.close()
    return run_dir, planted, capture.read_text(encoding="utf-8")


def test_the_second_signal_tells_wrong_gold_from_hard_questions_on_squad(
    squad_planted: tuple[Path, dict[str, str], str],
) -> None:
    from benchmarks.item_kinds import score

    run_dir, planted, stderr = squad_planted
    assert sorted(planted.values()).count("near_miss") == SQUAD_PER_KIND and len(planted) == 3 * SQUAD_PER_KIND
    review = read_review(run_dir)
    assert review is not None and review.items is not None
    suspect = review.items.suspect
    assert suspect and all(s.doubt in ("wrong_span", "wrong_document", "hard") for s in suspect)
    figures = score([{"question_id": s.question_id, "doubt": s.doubt} for s in suspect], planted)
    caught = [s for s in suspect if planted.get(s.question_id, "near_miss") != "near_miss"]
    told = [s for s in caught if s.doubt in ("wrong_span", "wrong_document")]
    print(
        figures,
        [(planted[s.question_id], s.doubt, round(s.gold_overlap, 2), round(s.elsewhere_overlap, 2)) for s in caught],
    )
    # Measured at this seed (40 documents, 502 answerable questions, 48 configs): item analysis flags 23, 9 of
    # them planted (4/4 other-document, 4/4 same-document, 1/4 near-miss); the second signal calls 6 of them "gold
    # elsewhere", all 6 planted (3 other-document, 2 same-document, 1 near-miss), and 17 "hard", 14 unplanted.
    assert len(caught) == 8 and len(told) >= 5
    assert figures["elsewhere_precision"] >= 0.8 and figures["elsewhere_precision"] > 2 * figures["flag_precision"]
    assert figures["hard_unplanted"] >= figures["hard"] - 3  # what it calls hard is mostly not planted
    assert [s.doubt == "hard" for s in suspect] == sorted(s.doubt == "hard" for s in suspect), "elsewhere first"
    # ... and the console says which is which.
    elsewhere = figures["elsewhere"]
    assert f"suspect gold ({elsewhere} gold elsewhere, {figures['hard']} hard: no config retrieves it)" in stderr
