"""``labels reanchor``: stale spans found again after real document edits, written back, the rest queued.

The tests edit the documents of a real labelled set on disk the way a quarter
edits them (a paragraph inserted above the answer, a reflow, NFD Unicode, a
deleted paragraph, a duplicated sentence, a typo fixed inside the span, a
changed number), in English and Chinese; run the real CLI in a subprocess;
then check the files it wrote, the annotation page's queue, and that a real
sweep accepts the set (it refused it before).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from evalkit.curate.queue import read_queue
from evalkit.curate.reanchor import FUZZY_FLOOR
from evalkit.labels.__main__ import main
from evalkit.labels.history import HISTORY
from evalkit.labels.parse import load_documents
from evalkit.labels.read import read_set
from evalkit.labels.validate import validate
from tests.conftest import REPO, evidence, write_set
from tests.test_sweep import run_in_process

# ----- the documents before and after the quarter's edits ----------------------------------------------------

ANSWER = "The RateLimiter allows a burst of 20 requests per second by default."
INSERTED = "## Changes in 2.0\n\nBursts are now configured per client; see the migration guide for details.\n\n"
LIMITS = f"# Rate limits\n\nEvery client is limited.\n\n{ANSWER}\nLonger bursts are rejected with HTTP 429.\n"

REFLOW_SENTENCE = "Retries use exponential backoff starting at 200 milliseconds and doubling up to 30 seconds."
RETRIES = f"# Retries\n\n{REFLOW_SENTENCE} Calls that still fail are logged.\n"
RETRIES_REFLOWED = (
    "# Retries\n\nRetries use exponential backoff starting at 200\nmilliseconds and doubling up to 30\n"
    "seconds.   Calls that still fail are logged.\n"
)

ZH_ANSWER = "住宿标准为每晚不超过六百元，超出部分由个人承担。"
ZH = f"# 差旅报销\n\n出差需提前三天申请。{ZH_ANSWER}交通费按实际发生报销。\n"
ZH_EDITED = (
    "# 差旅报销\n\n## 2026 年修订\n\n本节新增说明。\n\n"
    "出差需提前三天申请。住宿标准为每晚不超过六\n百元，超出部分\n由个人承担。交通费按实际发生报销。\n"
)

FR_ANSWER = "Les frais de séjour à l'étranger sont plafonnés à 150 € par nuit."
FR = f"# Déplacements\n\n{FR_ANSWER} Les reçus sont obligatoires.\n"

DELETED = "The archive keeps deleted tickets for ninety days before purging them."
SUPPORT = f"# Support\n\nTickets are answered within one working day.\n\n{DELETED}\n\nContact the desk by chat.\n"
SUPPORT_EDITED = "# Support\n\nTickets are answered within one working day.\n\nContact the desk by chat.\n"

DUPLICATED = "Passwords expire after ninety days."
SECURITY = f"# Security\n\nAccounts lock after five failed logins. {DUPLICATED}\n"
SECURITY_EDITED = f"# Security\n\n{DUPLICATED} Accounts lock after five failed logins. {DUPLICATED}\n"

TYPO = "Invoices are issued on the first buisness day of each month."
BILLING = f"# Billing\n\nPayment is due in thirty days.\n\n{TYPO}\n"
BILLING_EDITED = (
    f"# Billing\n\nPayment is due in thirty days. Late fees apply.\n\n{TYPO.replace('buisness', 'business')}\n"
)

ZH_TYPO = "报销申请须在出差结束后十五个工作曰内提交财务部门审核。"
ZH_BILLING = f"# 报销流程\n\n{ZH_TYPO}逾期不予受理。\n"
ZH_BILLING_EDITED = f"# 报销流程\n\n请使用新系统。\n\n{ZH_TYPO.replace('工作曰', '工作日')}逾期不予受理。\n"

NUMBER = "The free tier includes 500 API calls per month for every account."
PLANS = f"# Plans\n\n{NUMBER}\n"
PLANS_EDITED = f"# Plans\n\nPrices changed in May.\n\n{NUMBER.replace('500', '800')}\n"

UNCHANGED = "# Glossary\n\nA tenant is one customer organisation.\n"

BEFORE = {
    "limits": LIMITS,
    "retries": RETRIES,
    "zh-travel": ZH,
    "fr-travel": FR,
    "support": SUPPORT,
    "security": SECURITY,
    "billing": BILLING,
    "zh-billing": ZH_BILLING,
    "plans": PLANS,
    "glossary": UNCHANGED,
}
AFTER = {
    "limits": LIMITS.replace("# Rate limits\n\n", "# Rate limits\n\n" + INSERTED),
    "retries": RETRIES_REFLOWED,
    "zh-travel": ZH_EDITED,
    "fr-travel": unicodedata.normalize("NFD", FR),
    "support": SUPPORT_EDITED,
    "security": SECURITY_EDITED,
    "billing": BILLING_EDITED,
    "zh-billing": ZH_BILLING_EDITED,
    "plans": PLANS_EDITED,
    "glossary": UNCHANGED,
}


def question(qid: str, text: str, spans: list[dict], answers: list[str], mode: str = "any", lang: str = "en") -> dict:
    return {
        "id": qid,
        "question": text,
        "answer": answers[0],
        "answers": answers,
        "answerable": True,
        "evidence": spans,
        "evidence_mode": mode,
        "tags": {"lang": lang, "kind": "frequent"},
    }


QUESTIONS = [
    question("q-insert", "What burst does RateLimiter allow?", [evidence("limits", LIMITS, ANSWER)], ["20"]),
    question("q-reflow", "How do retries back off?", [evidence("retries", RETRIES, REFLOW_SENTENCE)], ["200 ms"]),
    question("q-zh", "住宿标准是多少？", [evidence("zh-travel", ZH, ZH_ANSWER)], ["六百元"], lang="zh-Hans"),
    question("q-nfd", "Quel est le plafond de séjour ?", [evidence("fr-travel", FR, FR_ANSWER)], ["150 €"], lang="fr"),
    question("q-deleted", "How long are deleted tickets kept?", [evidence("support", SUPPORT, DELETED)], ["90 days"]),
    question("q-dup", "When do passwords expire?", [evidence("security", SECURITY, DUPLICATED)], ["ninety days"]),
    question("q-typo", "When are invoices issued?", [evidence("billing", BILLING, TYPO)], ["first business day"]),
    question(
        "q-zh-typo", "报销申请的期限？", [evidence("zh-billing", ZH_BILLING, ZH_TYPO)], ["十五个工作日"], lang="zh-Hans"
    ),
    question("q-number", "How many calls are free?", [evidence("plans", PLANS, NUMBER)], ["500"]),
    question(
        "q-glossary", "What is a tenant?", [evidence("glossary", UNCHANGED, "one customer organisation")], ["one"]
    ),
    question(
        "q-multi",
        "How are bursts limited and rejected?",
        [evidence("limits", LIMITS, ANSWER), evidence("support", SUPPORT, DELETED)],
        ["20, HTTP 429"],
        mode="all",
    ),
    {
        "id": "q-none",
        "question": "What is the parking allowance?",
        "answers": [],
        "answerable": False,
        "evidence": [],
        "evidence_mode": "none",
        "tags": {"lang": "en"},
    },
]
RESTORED = {"q-insert", "q-reflow", "q-zh", "q-nfd", "q-dup", "q-typo", "q-zh-typo"}
QUEUED = {"q-deleted": "lost", "q-number": "lost", "q-multi": "lost"}


def edit_documents(root: Path) -> None:
    for doc_id, text in AFTER.items():
        (root / "docs" / f"{doc_id}.md").write_text(text, encoding="utf-8", newline="")


def reanchor(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "evalkit.labels", "reanchor", str(root), *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO, timeout=300)


def lines_by_id(path: Path) -> dict[str, str]:
    return {json.loads(line)["id"]: line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}


def write_kept(root: Path, docs: dict[str, str], questions: list[dict]) -> Path:
    """A set written and validated through the CLI, which keeps the documents as labelled in ``.history/``."""
    write_set(root, docs, questions)
    assert main(["validate", str(root)]) == 0 and (root / HISTORY).is_dir()
    return root


@pytest.fixture
def edited_set(tmp_path: Path) -> Path:
    root = write_kept(tmp_path / "quarterly", BEFORE, QUESTIONS)
    assert validate(root).ok and not validate(root).warnings
    edit_documents(root)
    return root


# ----- the whole loop through the CLI -------------------------------------------------------------------------

SWEEP = [
    "chunk_size=[256]",
    "chunk_overlap=[0]",
    "top_k=[1,3]",
    "retriever=bm25",
    "progress=false",
    "report=false",
    "position=off",
    "answer_check=off",
]


def test_the_edited_set_is_refused_then_reanchored_and_swept(
    edited_set: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = edited_set
    reading = read_set(root, "tolerant")
    outside = [line for line in reading.problems if "outside doc" in line]
    assert len(reading.stale) + len(outside) == 11  # every labelled span but the glossary's
    with pytest.raises(SystemExit) as refused:
        run_in_process([*SWEEP, f"labelset.path={root}", f"reports_dir={tmp_path / 'before'}"])
    assert refused.value.code == 2
    assert "stale label" in capsys.readouterr().err

    before = lines_by_id(root / "questions.jsonl")
    done = reanchor(root)
    assert done.returncode == 1, done.stderr  # written, but some spans need a person
    assert "Traceback" not in done.stderr
    assert (
        "11 span(s) looked at (11 stale): 0 unchanged (checked), 8 moved (context 6, exact 0, normalised 0, "
        "fuzzy 2), 0 ambiguous, 3 lost, 0 proposed" in done.stdout
    )
    assert "7 question(s) rewritten in questions.jsonl; 3 moved to queue.jsonl" in done.stdout
    old, new = LIMITS.index(ANSWER), AFTER["limits"].index(ANSWER)
    assert (
        f"q-insert evidence[0] limits [{old}:{old + len(ANSWER)}] -> [{new}:{new + len(ANSWER)}] context" in done.stdout
    )

    after = lines_by_id(root / "questions.jsonl")
    assert set(after) == RESTORED | {"q-glossary", "q-none"}
    assert after["q-glossary"] == before["q-glossary"] and after["q-none"] == before["q-none"]  # byte for byte
    documents = load_documents(root, [], [])
    for qid in RESTORED:
        record = json.loads(after[qid])
        assert record["tags"] == {"lang": record["tags"]["lang"], "kind": "frequent"}
        assert {k: v for k, v in record.items() if k != "evidence"} == {
            k: v for k, v in json.loads(before[qid]).items() if k != "evidence"
        }, "everything but the spans is kept"
        (span,) = record["evidence"]
        assert documents[span["doc_id"]].text[span["start"] : span["end"]] == span["text"]
    moved = {qid: json.loads(after[qid])["evidence"][0]["text"] for qid in RESTORED}
    assert moved["q-insert"] == ANSWER
    assert moved["q-reflow"] == REFLOW_SENTENCE.replace("200 ", "200\n").replace("30 ", "30\n")
    assert moved["q-zh"] == "住宿标准为每晚不超过六\n百元，超出部分\n由个人承担。"
    assert moved["q-nfd"] == unicodedata.normalize("NFD", FR_ANSWER)
    assert moved["q-dup"] == DUPLICATED
    assert json.loads(after["q-dup"])["evidence"][0]["start"] == SECURITY_EDITED.rindex(DUPLICATED)  # not the copy
    assert moved["q-typo"] == TYPO.replace("buisness", "business")
    assert moved["q-zh-typo"] == ZH_TYPO.replace("工作曰", "工作日")

    items, problems = read_queue(root, documents)
    assert not problems and {i.id: i.tags["reanchor"] for i in items} == QUEUED
    by_id = {i.id: i for i in items}
    assert "numbers differ ('500' -> '800')" in by_id["q-number"].tags["reanchor_note"]
    assert by_id["q-deleted"].question == "How long are deleted tickets kept?" and not by_id["q-deleted"].proposed
    # the multi-hop question keeps its moved span as a proposal; its lost one is the annotator's to find
    (proposed,) = by_id["q-multi"].proposed
    assert (proposed.doc_id, proposed.text) == ("limits", ANSWER)

    (report_path,) = root.glob("reanchor-*.json")
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert report["fuzzy_floor"] == FUZZY_FLOOR and report["counts"]["fuzzy"] == 2
    assert {q["id"] for q in report["queued"]} == set(QUEUED)
    assert json.loads(next(q for q in report["queued"] if q["id"] == "q-number")["original_line"]) == QUESTIONS[8]
    methods = {(s["question_id"], s["field"]): (s["status"], s["method"]) for s in report["spans"]}
    assert methods[("q-zh", "evidence[0]")] == ("moved", "context")
    assert methods[("q-zh-typo", "evidence[0]")] == ("moved", "fuzzy")

    check = validate(root)
    assert check.ok, check.problems
    assert not check.warnings, "docs.jsonl's sha256 and n_chars were refreshed for the edited documents"
    index = [json.loads(line) for line in (root / "docs.jsonl").read_text(encoding="utf-8").splitlines()]
    for record in index:
        text = AFTER[record["doc_id"]]
        assert record["sha256"] == hashlib.sha256(text.encode("utf-8")).hexdigest()

    capsys.readouterr()
    run_dir = run_in_process([*SWEEP, f"labelset.path={root}", f"reports_dir={tmp_path / 'after'}"])
    assert (run_dir / "results.parquet").is_file()
    assert "evalkit: items: " in capsys.readouterr().err, "the items line is printed with report=false too"

    again = reanchor(root)
    assert again.returncode == 0 and "nothing stale" in again.stderr


def test_dry_run_writes_nothing_and_json_reports(edited_set: Path) -> None:
    before = {p: p.read_bytes() for p in edited_set.rglob("*") if p.is_file()}
    done = reanchor(edited_set, "--dry-run", "--json")
    assert done.returncode == 1 and "dry run: nothing written" in done.stderr
    report = json.loads(done.stdout)
    assert report["counts"]["moved"] == 8 and report["counts"]["questions_queued"] == 3
    assert {p: p.read_bytes() for p in edited_set.rglob("*") if p.is_file()} == before


def test_every_span_found_exits_0(tmp_path: Path) -> None:
    root = write_kept(tmp_path / "moved", {"limits": LIMITS}, [QUESTIONS[0]])
    (root / "docs" / "limits.md").write_text(INSERTED + LIMITS, encoding="utf-8")
    done = reanchor(root)
    assert done.returncode == 0, done.stderr
    assert not (root / "queue.jsonl").exists() and validate(root).ok


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = reanchor(tmp_path / "nowhere")
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0 and "does not exist" in done.stderr
    (tmp_path / "empty").mkdir()
    done = reanchor(tmp_path / "empty")
    assert done.returncode == 2 and "questions.jsonl: missing" in done.stderr and "Traceback" not in done.stderr


def test_a_set_labelled_in_the_annotation_page_keeps_the_moved_spans(tmp_path: Path) -> None:
    """The page rebuilds questions.jsonl from annotations.json: reanchor moves the spans there too."""
    from evalkit.curate.annotate.store import AnnotationStore
    from evalkit.curate.queue import QueueItem, write_queue

    docs = {"limits": LIMITS, "security": SECURITY, "plans": PLANS}
    root = write_set(tmp_path / "paged", docs, [])
    write_queue(root, [QueueItem("q-insert", "What burst?"), QueueItem("q-dup", "When?"), QueueItem("q-no", "Free?")])
    store = AnnotationStore(root)  # the page keeps the documents as it labels them (.history/)
    spans = (("q-insert", "limits", ANSWER), ("q-dup", "security", DUPLICATED), ("q-no", "plans", NUMBER))
    for qid, doc_id, text in spans:
        store.edit(qid, "add_span", evidence(doc_id, docs[doc_id], text))
    edit_documents(root)

    done = reanchor(root)
    assert done.returncode == 1, done.stderr
    store = AnnotationStore(root)  # opening the page again rewrites questions.jsonl from its state
    lines = lines_by_id(root / "questions.jsonl")
    assert set(lines) == {"q-insert", "q-dup"}
    (moved,) = json.loads(lines["q-insert"])["evidence"]
    assert moved["start"] == AFTER["limits"].index(ANSWER) and moved["text"] == ANSWER
    (moved,) = json.loads(lines["q-dup"])["evidence"]
    assert moved["start"] == SECURITY_EDITED.rindex(DUPLICATED)  # the page's own span, not the copy above it
    entries, _, base = store.snapshot()
    assert "q-no" not in entries and "q-no" not in base, "the page asks for q-no again"
    assert [i.id for i in store.items] == ["q-insert", "q-dup", "q-no"]  # replaced in place, nothing appended
    assert store.item("q-no").tags["reanchor"] == "lost"
    assert validate(root).ok


def test_validate_points_at_reanchor(edited_set: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "evalkit.labels", "validate", str(edited_set)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert done.returncode == 2
    assert (
        "9 stale label(s): if the documents changed but still hold the labelled text, "
        f"`python -m evalkit.labels reanchor {edited_set}` finds it again" in done.stderr
    )


ZH_SHORT = "# 住宿\n\n住宿标准为每晚不超过六百元。\n"
ZH_SHORT_EDITED = "# 住宿\n\n旧标准为每晚五百元，现调整为六百元。\n\n住宿标准为每晚不超过\n六百元。\n"


def test_before_finds_ambiguous_spans_by_their_old_surroundings(tmp_path: Path) -> None:
    docs = {"security": SECURITY, "zh-short": ZH_SHORT}
    questions = [
        QUESTIONS[5],
        question("q-zh-short", "住宿标准？", [evidence("zh-short", ZH_SHORT, "六百元")], ["六百元"], lang="zh-Hans"),
    ]
    old = write_set(tmp_path / "as-labelled", docs, questions)
    root = write_set(tmp_path / "now", docs, questions)
    (root / "docs" / "security.md").write_text(SECURITY_EDITED, encoding="utf-8")
    (root / "docs" / "zh-short.md").write_text(ZH_SHORT_EDITED, encoding="utf-8")

    alone = json.loads(reanchor(root, "--dry-run", "--json").stdout)
    assert alone["counts"]["ambiguous"] == 2
    done = reanchor(root, "--before", str(old))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 moved (context 2, exact 0, normalised 0, fuzzy 0)" in done.stdout
    spans = {qid: json.loads(line)["evidence"][0] for qid, line in lines_by_id(root / "questions.jsonl").items()}
    assert spans["q-dup"]["start"] == SECURITY_EDITED.rindex(DUPLICATED)  # the sentence that was there, not its copy
    assert spans["q-zh-short"]["start"] == ZH_SHORT_EDITED.rindex("六百元")


def test_a_line_that_is_not_utf8_writes_nothing(edited_set: Path) -> None:
    with open(edited_set / "questions.jsonl", "ab") as handle:
        handle.write(b'{"id": "q-latin1", "question": "caf\xe9?"}\n')
    before = {p: p.read_bytes() for p in edited_set.rglob("*") if p.is_file()}
    done = reanchor(edited_set)
    assert done.returncode == 2 and "questions.jsonl:13: not UTF-8" in done.stderr and "Traceback" not in done.stderr
    after = {p: p.read_bytes() for p in edited_set.rglob("*") if p.is_file() and p.name != ".annotate.lock"}
    assert after == before  # the lock file the annotation page shares aside


def test_a_source_passage_not_found_again_is_dropped_not_queued(tmp_path: Path) -> None:
    record = question("q-passage", "What burst?", [evidence("limits", LIMITS, ANSWER)], ["20"])
    record["source_passage"] = [evidence("support", SUPPORT, DELETED), evidence("limits", LIMITS, "Every client")]
    root = write_kept(tmp_path / "passages", {"limits": LIMITS, "support": SUPPORT}, [record])
    edit_documents(root)
    done = reanchor(root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "source_passage[0] support" in done.stdout and "the source passage is dropped (it is no gold)" in done.stdout
    (line,) = lines_by_id(root / "questions.jsonl").values()
    after = json.loads(line)
    new = AFTER["limits"]
    assert after["evidence"] == [evidence("limits", new, ANSWER)]
    assert after["source_passage"] == [evidence("limits", new, "Every client")]
    assert validate(root).ok and not (root / "queue.jsonl").exists()


def test_a_typo_fixed_inside_an_extractive_answer_is_proposed_side_by_side_and_accepted_in_one_click(
    tmp_path: Path,
) -> None:
    """SQuAD-style: the span is the answer, so any edit inside it edits the answer: proposed, never taken."""
    from evalkit.curate.annotate.store import AnnotationStore

    old_answer = "the first buisness day of each month"
    text = f"# Billing\n\nInvoices are issued on {old_answer}. Payment is due in thirty days.\n"
    record = question("q-squad", "When are invoices issued?", [evidence("billing", text, old_answer)], [old_answer])
    root = write_kept(tmp_path / "squad-like", {"billing": text}, [record])
    edited = "# Billing\n\nNew rules apply.\n\n" + text.replace("buisness", "business").split("\n\n", 1)[1]
    (root / "docs" / "billing.md").write_text(edited, encoding="utf-8", newline="")

    done = reanchor(root)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 proposed" in done.stdout and not lines_by_id(root / "questions.jsonl")
    new_answer = old_answer.replace("buisness", "business")
    store = AnnotationStore(root)
    item = store.item("q-squad")
    assert item.tags["reanchor"] == "proposed"
    assert item.tags["reanchor_answer"] == f"{old_answer!r} -> {new_answer!r}"  # side by side on the page
    (proposed,) = item.proposed
    assert (proposed.start, proposed.text) == (edited.index(new_answer), new_answer)

    store.edit("q-squad", "accept_proposed")  # the one click ('a')
    (line,) = lines_by_id(root / "questions.jsonl").values()
    accepted = json.loads(line)
    assert accepted["answers"] == [new_answer] and accepted["evidence"][0]["text"] == new_answer
    assert validate(root).ok
