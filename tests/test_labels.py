"""``python -m evalkit.labels``: validate, stats, health, import (SQuAD, ragas, HF) and lossless round trips."""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from evalkit.labels.health import label_health
from evalkit.labels.hf_format import hf_rows, import_hf, write_hf
from evalkit.labels.load import tolerant_load
from evalkit.labels.locate import build_locator, locate
from evalkit.labels.ragas_format import import_ragas, ragas_rows, write_rows
from evalkit.labels.read import LabelSet, load_labelset
from evalkit.labels.similarity import jaccard, normalise, shingles, similar_pairs
from evalkit.labels.squad_format import import_squad
from evalkit.labels.stats import label_stats
from evalkit.labels.write import write_labelset
from evalkit.records import Document, Question
from tests.conftest import DEMO, REPO, TINY_DOCS, evidence, shared_set, write_set


def run_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "evalkit.labels", *map(str, args)], cwd=REPO, env=env, capture_output=True, text=True
    )


def gold(question: Question) -> tuple:
    """Everything a question labels (not its line number)."""
    return (
        question.id,
        question.question,
        question.answers,
        question.answerable,
        question.evidence,
        question.evidence_mode,
        dict(question.tags),
        question.source_passage,
    )


# --------------------------------------------------------------------------
# validate
# --------------------------------------------------------------------------


def test_validate_a_broken_set_prints_one_line_per_problem_and_exits_2(tiny_set: Path) -> None:
    lines = (tiny_set / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    stale = json.loads(lines[0])
    stale["evidence"][0]["text"] = "25"
    unknown = json.loads(lines[1])
    unknown["evidence"][0]["doc_id"] = "missing-doc"
    (tiny_set / "questions.jsonl").write_text("\n".join([json.dumps(stale), json.dumps(unknown), "{oops"]) + "\n")
    result = run_cli("validate", tiny_set)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    problems = result.stdout.splitlines()
    assert len(problems) == 3
    assert problems[0].endswith(
        "questions.jsonl:1: field 'evidence[0]': stale label: question 'q-en' expects '25' "
        "at en[49:51], document has '20'"
    )
    assert "questions.jsonl:2: field 'evidence[0]': question 'q-zh' cites unknown doc 'missing-doc'" in problems[1]
    assert "questions.jsonl:3: invalid JSON" in problems[2]
    assert "3 problem(s)" in result.stderr


def test_validate_the_demo_set_and_warn_about_a_changed_document(tmp_path: Path, tiny_set: Path) -> None:
    assert run_cli("validate", DEMO).returncode == 0
    # Edit a document after docs.jsonl was written, keeping the labelled span intact: a warning, not a failure.
    (tiny_set / "docs" / "en.md").write_text(TINY_DOCS["en"] + "More text.\n", encoding="utf-8", newline="")
    (tiny_set / "docs" / "orphan.md").write_text("not listed\n", encoding="utf-8")
    result = run_cli("validate", tiny_set)
    assert result.returncode == 0, result.stdout + result.stderr
    warnings = [line for line in result.stdout.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 2
    assert "field 'sha256': doc 'en' changed since docs.jsonl was written" in warnings[0]
    assert "orphan.md: not listed in docs.jsonl" in warnings[1]
    assert "ok: " in result.stdout


# --------------------------------------------------------------------------
# stats
# --------------------------------------------------------------------------


def test_stats_of_the_tiny_set_worked_by_hand(tiny_set: Path) -> None:
    labelset = load_labelset(tiny_set)
    stats = label_stats(labelset.name, labelset.documents, labelset.questions)
    assert stats.n_questions == 3 and stats.n_documents == 2
    assert stats.doc_chars == len(TINY_DOCS["en"]) + len(TINY_DOCS["zh"])
    assert dict(stats.by_language) == {"en": 2, "zh-Hans": 1}
    assert dict(stats.answerable) == {"answerable": 2, "unanswerable": 1}
    assert dict(stats.evidence_mode) == {"any": 2, "none": 1}
    assert dict(stats.unanswerable_kind) == {"not_in_corpus": 1}
    assert dict(stats.by_kind) == {"(unset)": 3}
    # Evidence spans "20" and "六百元": 2 and 3 characters.
    assert (stats.evidence_chars.n, stats.evidence_chars.min, stats.evidence_chars.max) == (2, 2, 3)
    assert stats.evidence_chars.median == stats.evidence_chars.mean == 2.5
    assert stats.docs_with_evidence == ("en", "zh") and stats.docs_never_used == ()
    assert dict(stats.questions_per_doc) == {"en": 1, "zh": 1}
    lines = {c.tag: c.line() for c in stats.composition}
    assert lines["lang"] == "lang: en 67% / zh-Hans 33%"
    assert lines["unanswerable_kind"] == "unanswerable_kind: (unset) 67% / not_in_corpus 33%"
    assert "custom_tag" not in lines  # list values: no composition line

    result = run_cli("stats", tiny_set, "--json")
    assert result.returncode == 0
    data = json.loads(result.stdout)
    assert data["by_language"] == {"en": 2, "zh-Hans": 1}
    assert data["evidence_chars"] == {"n": 2, "min": 2, "median": 2.5, "mean": 2.5, "max": 3}
    table = run_cli("stats", tiny_set).stdout
    assert "language" in table and "en 2 (67%) / zh-Hans 1 (33%)" in table


def test_stats_of_the_demo_set_show_the_composition_lines() -> None:
    labelset = load_labelset(DEMO)
    stats = label_stats(labelset.name, labelset.documents, labelset.questions)
    lines = {c.tag: c.line() for c in stats.composition}
    assert lines["kind"] == "kind: frequent 50% / known_error 50%"
    assert dict(stats.evidence_mode) == {"any": 213, "none": 23, "all": 18}
    assert dict(stats.unanswerable_kind) == {"near_miss": 16, "not_in_corpus": 4, "outdated_only": 3}


# --------------------------------------------------------------------------
# import --from squad
# --------------------------------------------------------------------------

PARA_1 = "The Normans were the people who gave their name to Normandy, a region in France."
PARA_2 = "Rollo agreed to swear fealty to King Charles III. Rollo founded the duchy in 911."
SQUAD = {
    "version": "v2.0",
    "data": [
        {
            "title": "Normans_test",
            "paragraphs": [
                {
                    "context": PARA_1,
                    "qas": [
                        {
                            "id": "q1",
                            "question": "In what country is Normandy located?",
                            "answers": [
                                {"text": "France", "answer_start": 73},
                                {"text": "France", "answer_start": 73},
                                {"text": "in France", "answer_start": 70},
                            ],
                            "is_impossible": False,
                        },
                        {
                            "id": "q2",
                            "question": "Who gave their name to France?",
                            "answers": [],
                            "plausible_answers": [{"text": "The Normans", "answer_start": 0}],
                            "is_impossible": True,
                        },
                    ],
                },
                {
                    "context": PARA_2,
                    "qas": [
                        {
                            "id": "q3",
                            "question": "When was the duchy founded?",
                            "answers": [{"text": "911", "answer_start": 5}, {"text": "911", "answer_start": 77}],
                        },
                        {"id": "q4", "question": "Who?", "answers": [{"text": "Rollo", "answer_start": 3}]},
                    ],
                },
            ],
        }
    ],
}


def test_squad_import_gives_exact_offsets_and_handles_is_impossible(tmp_path: Path) -> None:
    assert PARA_1[73:79] == "France" and PARA_2[77:80] == "911"
    result = import_squad(SQUAD, "tiny-squad.json", "article")
    (doc,) = result.documents
    heading = "# Normans test\n\n"
    assert doc.doc_id == "Normans_test"
    assert doc.text == heading + PARA_1 + "\n\n" + PARA_2 + "\n"
    by_id = {q.id: q for q in result.questions}
    assert set(by_id) == {"q1", "q2", "q3"}
    q1 = by_id["q1"]
    assert [(e.start, e.end, e.text) for e in q1.evidence] == [
        (len(heading) + 73, len(heading) + 79, "France"),
        (len(heading) + 70, len(heading) + 79, "in France"),
    ]
    assert q1.answers == ("France", "in France") and q1.evidence_mode == "any" and q1.answerable
    q2 = by_id["q2"]
    assert (q2.answerable, q2.evidence, q2.evidence_mode) == (False, (), "none")
    assert q2.tags["unanswerable_kind"] == "squad2_adversarial"
    assert q2.tags["plausible_spans"] == [{"doc_id": doc.doc_id, "start": 16, "end": 27, "text": "The Normans"}]
    assert q2.source_passage[0].text == PARA_1
    q3 = by_id["q3"]
    offset = len(heading) + len(PARA_1) + 2
    assert [(e.start, e.text) for e in q3.evidence] == [(offset + 77, "911")]
    assert doc.text[q3.evidence[0].start : q3.evidence[0].end] == "911"
    # A misplaced answer is reported and dropped, never moved; q4 is left with none and is skipped.
    assert any("'911' is not at answer_start 5" in line for line in result.reports)
    assert any("question 'q4' has no answer that matches its paragraph; skipped" in line for line in result.reports)
    assert result.questions[0].tags["lang"] == "en"

    paragraphs = import_squad(SQUAD, "tiny-squad.json", "paragraph")
    assert [d.doc_id for d in paragraphs.documents] == ["Normans_test__p000", "Normans_test__p001"]
    q1 = next(q for q in paragraphs.questions if q.id == "q1")
    assert (q1.evidence[0].doc_id, q1.evidence[0].start) == ("Normans_test__p000", len(heading) + 73)

    source = tmp_path / "tiny-squad.json"
    source.write_text(json.dumps(SQUAD), encoding="utf-8")
    cli = run_cli("import", "--from", "squad", source, tmp_path / "out", "--unit", "paragraph")
    assert cli.returncode == 1, cli.stderr  # written, with reported rows
    assert "imported 3 questions (2 answerable, 1 unanswerable) over 2 documents" in cli.stdout
    assert sum("q4" in line for line in cli.stderr.splitlines()) == 1
    written = load_labelset(tmp_path / "out")
    assert [gold(q) for q in written.questions] == [gold(q) for q in paragraphs.questions]
    docs_index = [json.loads(line) for line in (tmp_path / "out" / "docs.jsonl").read_text().splitlines()]
    assert all(len(r["sha256"]) == 64 and r["n_chars"] > 0 for r in docs_index)


# --------------------------------------------------------------------------
# import --from ragas
# --------------------------------------------------------------------------

RAGAS_DOCS = {
    "policy": "# Hotels\n\nThe hotel cap in Berlin is 220 EUR per night.\nIn Paris the cap is 250 EUR.\n",
    "faq": "Q: Who approves trips?\nA: Your line manager approves trips up to 2,500 EUR.\n",
}


def _ragas_rows() -> list[dict]:
    return [
        {  # exact context, reference inside it
            "user_input": "What is the hotel cap in Berlin?",
            "reference": "220 EUR",
            "reference_contexts": ["The hotel cap in Berlin is 220 EUR per night."],
        },
        {  # whitespace differs: located after normalising, offsets in the original text
            "user_input": "Who approves trips?",
            "reference": "Your line manager",
            "reference_contexts": ["Q:  Who approves trips?  A: Your line manager approves trips up to 2,500 EUR."],
        },
        {  # not in the corpus: reported, not guessed
            "user_input": "What is the cap in Rome?",
            "reference": "200 EUR",
            "reference_contexts": ["The hotel cap in Rome is 200 EUR per night."],
        },
        {  # the reference is free text: the whole contexts are the evidence, all of them needed
            "user_input": "Compare the caps.",
            "reference": "Paris is 30 EUR dearer than Berlin.",
            "reference_contexts": ["The hotel cap in Berlin is 220 EUR per night.", "In Paris the cap is 250 EUR."],
        },
        {"user_input": "What is the parking allowance?", "reference": "", "reference_contexts": []},
    ]


def _plain_docs(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for doc_id, text in RAGAS_DOCS.items():
        (root / f"{doc_id}.md").write_text(text, encoding="utf-8", newline="")
    return root


def test_ragas_import_locates_contexts_and_reports_the_one_it_cannot(tmp_path: Path) -> None:
    docs = [Document(doc_id, text, f"docs/{doc_id}.md", doc_id) for doc_id, text in RAGAS_DOCS.items()]
    source = write_rows(_ragas_rows(), tmp_path / "testset.jsonl")
    result = import_ragas(source, docs)
    assert len(result.reports) == 1
    assert result.reports[0].startswith(f"{source}:3: field 'reference_contexts[0]': not found in the documents")
    assert "'ragas-00003' skipped" in result.reports[0]
    by_id = {q.id: q for q in result.questions}
    assert set(by_id) == {"ragas-00001", "ragas-00002", "ragas-00004", "ragas-00005"}
    first = by_id["ragas-00001"]
    policy = RAGAS_DOCS["policy"]
    assert [(e.doc_id, e.start, e.text) for e in first.evidence] == [("policy", policy.index("220 EUR"), "220 EUR")]
    assert first.source_passage[0].text == "The hotel cap in Berlin is 220 EUR per night."
    second = by_id["ragas-00002"]
    faq = RAGAS_DOCS["faq"]
    assert second.source_passage[0].start == 0 and second.source_passage[0].end == faq.index("EUR.") + 4
    assert second.source_passage[0].text == faq.rstrip("\n")  # the original text, its newline kept
    assert second.evidence[0].text == "Your line manager"
    fourth = by_id["ragas-00004"]
    assert fourth.evidence_mode == "all" and [e.doc_id for e in fourth.evidence] == ["policy", "policy"]
    assert fourth.evidence == fourth.source_passage
    fifth = by_id["ragas-00005"]
    assert (fifth.answerable, fifth.evidence_mode) == (False, "none")
    assert any("found with whitespace normalised" in note for note in result.notes)

    # CLI, and a CSV written the way ragas' to_csv writes lists (Python literals).
    csv_path = tmp_path / "testset.csv"
    with open(csv_path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["user_input", "reference_contexts", "reference"])
        writer.writeheader()
        for row in _ragas_rows():
            writer.writerow({**row, "reference_contexts": str(row["reference_contexts"])})
    cli = run_cli("import", "--from", "ragas", csv_path, tmp_path / "out", "--docs", _plain_docs(tmp_path / "docs"))
    assert cli.returncode == 1
    reported = [line for line in cli.stderr.splitlines() if not line.startswith("note: ")]
    assert reported == [line.replace(str(source), str(csv_path)).replace(":3:", ":4:") for line in result.reports]
    written = load_labelset(tmp_path / "out")
    assert len(written.questions) == 4 and {d.doc_id for d in written.documents} == {"policy", "faq"}


def test_locate_maps_a_whitespace_normalised_match_back_to_the_original() -> None:
    doc = Document("d", "alpha  beta\n\n gamma delta")
    locator = build_locator([Document("other", "beta gam"), doc])
    found = locate(locator, "beta gamma")
    assert (found.doc_id, found.start, found.end, found.how) == ("d", 7, 19, "whitespace")
    assert doc.text[found.start : found.end] == "beta\n\n gamma"
    assert locate(locator, "beta").doc_id == "other" and locate(locator, "beta").ambiguous
    assert locate(locator, "epsilon") is None


# --------------------------------------------------------------------------
# Round trips: export, then import, gives the same questions and spans
# --------------------------------------------------------------------------


def _sample(labelset: LabelSet, step: int) -> LabelSet:
    return dataclasses.replace(labelset, questions=labelset.questions[::step])


def _assert_same(expected: LabelSet | tuple[Question, ...], imported: tuple[Question, ...]) -> None:
    questions = expected.questions if isinstance(expected, LabelSet) else expected
    assert [gold(q) for q in imported] == [gold(q) for q in questions]


def test_round_trip_of_the_demo_set_through_the_cli(tmp_path: Path) -> None:
    out = tmp_path / "demo.jsonl"
    exported = run_cli("export", DEMO, "--to", "ragas", out)
    assert exported.returncode == 0, exported.stderr
    back = run_cli("import", "--from", "ragas", out, tmp_path / "demo-ragas", "--docs", DEMO)
    assert back.returncode == 0, back.stderr
    original, imported = load_labelset(DEMO), load_labelset(tmp_path / "demo-ragas")
    _assert_same(original, imported.questions)
    assert [(d.doc_id, d.text, dict(d.meta)) for d in imported.documents] == [
        (d.doc_id, d.text, dict(d.meta)) for d in original.documents
    ]
    assert all(
        len(row["reference_contexts"]) == len(row["reference_context_ids"])
        for row in map(json.loads, out.read_text(encoding="utf-8").splitlines())
    )
    exported = run_cli("export", DEMO, "--to", "hf", tmp_path / "demo-hf")
    assert exported.returncode == 0 and "save_to_disk" in exported.stdout
    result = import_hf(tmp_path / "demo-hf", original.documents)
    assert result.reports == ()
    _assert_same(original, result.questions)


def test_ragas_reads_the_export(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGAS_DO_NOT_TRACK", "true")
    dataset_schema = pytest.importorskip("ragas.dataset_schema")
    labelset = load_labelset(DEMO)
    path = write_rows(ragas_rows(labelset.documents, labelset.questions), tmp_path / "demo.jsonl")
    dataset = dataset_schema.EvaluationDataset.from_jsonl(path)
    first = dataset.samples[0]
    assert len(dataset.samples) == len(labelset.questions)
    assert first.user_input == labelset.questions[0].question
    assert first.reference == labelset.questions[0].answers[0]
    assert first.reference_contexts == [s.text for s in labelset.questions[0].source_passage]


@pytest.mark.parametrize(("name", "step"), [("squad2-en", 10), ("cmrc2018-zh", 5)])
def test_round_trip_of_a_sample_of_the_shared_sets(tmp_path: Path, name: str, step: int) -> None:
    labelset = _sample(load_labelset(shared_set(name)), step)
    for suffix in ("jsonl", "csv"):
        path = write_rows(ragas_rows(labelset.documents, labelset.questions), tmp_path / f"{name}.{suffix}")
        result = import_ragas(path, labelset.documents)
        assert result.reports == ()
        _assert_same(labelset, result.questions)
    for fmt in ("parquet", "arrow"):
        write_hf(hf_rows(labelset.documents, labelset.questions), tmp_path / f"{name}-{fmt}", fmt)
        result = import_hf(tmp_path / f"{name}-{fmt}", labelset.documents)
        assert result.reports == ()
        _assert_same(labelset, result.questions)


def test_hf_import_of_squad_style_rows_without_documents(tmp_path: Path) -> None:
    rows = [
        {
            "id": "a",
            "title": "T",
            "context": PARA_1,
            "question": "Where?",
            "answers": {"text": ["France"], "answer_start": [73]},
        },
        {"id": "b", "title": "T", "context": PARA_1, "question": "Who?", "answers": {"text": [], "answer_start": []}},
    ]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = import_hf(path)
    (doc,) = result.documents
    assert doc.text == PARA_1
    first, second = result.questions
    assert (first.evidence[0].start, first.evidence[0].text) == (73, "France")
    assert (second.answerable, second.evidence_mode, second.source_passage[0].end) == (False, "none", len(PARA_1))


# --------------------------------------------------------------------------
# health
# --------------------------------------------------------------------------

HEALTH_DOCS = {
    "handbook": "# Handbook\n\n"
    + " ".join(f"Rule {i}: employees must file form {i} within {i + 3} days of the event." for i in range(12))
    + "\n",
    "tiny": "# Note\n\nThe office closes at 6 pm.\n",
}


def _health_set(root: Path) -> Path:
    text = HEALTH_DOCS["handbook"]

    def q(qid: str, question: str, answer: str = "form 3", doc: str = "handbook") -> dict:
        return {
            "id": qid,
            "question": question,
            "answer": answer,
            "answerable": True,
            "evidence_mode": "any",
            "evidence": [evidence(doc, HEALTH_DOCS[doc], answer)],
            "tags": {"lang": "en", "kind": "frequent"},
        }

    questions = [
        q("dup-1", "Which form must employees file for rule 3?"),
        q("dup-2", "which form must employees file for rule 3"),  # equal once normalised
        q("near-1", "Within how many days must employees file form number 5 after the event happens?", "8 days"),
        q("near-2", "Within how many days must employees file form number 5 after the event happened?", "8 days"),
        q("copy", "Employees must file form 7 within 10 days of the event?", "10 days"),
        q("tiny", "When does the office close?", "6 pm", "tiny"),
        q("stale", "What is rule 11 about?", "form 11"),
        q("clean", "How long for form 2?", "5 days"),
    ]
    write_set(root, HEALTH_DOCS, questions)
    # The document changes under the label: "form 11" no longer sits where the span says.
    edited = text.replace("file form 11", "submit form 11")
    (root / "docs" / "handbook.md").write_text(edited, encoding="utf-8", newline="")
    assert text.index("form 3") == edited.index("form 3") and text.index("8 days") == edited.index("8 days")
    return root


def test_health_finds_planted_duplicates_near_duplicates_copies_trivial_and_stale_labels(tmp_path: Path) -> None:
    root = _health_set(tmp_path / "planted")
    labelset = tolerant_load(root)
    assert len(labelset.stale) == 1 and "stale label: question 'stale'" in labelset.stale[0]
    health = label_health(labelset.name, labelset.documents, labelset.questions, labelset.stale, labelset.problems)
    counts = {f.name: f.count for f in health.findings}
    assert counts == {"duplicates": 1, "near_duplicates": 1, "verbatim": 1, "trivial": 1, "stale": 1, "invalid": 1}
    assert "dup-1, dup-2" in health.finding("duplicates").examples[0]
    assert health.finding("near_duplicates").examples[0].startswith("near-1 ~ near-2 J=0.9")
    assert health.finding("verbatim").examples[0].startswith("copy: ")
    assert health.finding("trivial").examples[0].startswith("tiny: document tiny is tiny")
    # The stale question lost its only span: its record is reported, not crashed on.
    assert (
        "answerable question 'stale' has no evidence span (after dropping stale spans)"
        in health.finding("invalid").examples[0]
    )
    assert "kind: frequent 100%" in health.composition

    cli = run_cli("health", root, "--json")
    assert cli.returncode == 0, cli.stderr
    data = json.loads(cli.stdout)
    assert {name: f["count"] for name, f in data["findings"].items()} == counts
    assert run_cli("validate", root).returncode == 2


def test_similarity_join_is_exact_against_brute_force() -> None:
    rng = random.Random(7)
    base = ["".join(rng.choice("abcde ") for _ in range(rng.randint(5, 40))) for _ in range(60)]
    texts = base + [t[:-1] + "x" for t in base[:30]] + [t + "y" for t in base[30:]]
    for threshold in (0.6, 0.8, 0.9):
        sets = [shingles(t) for t in texts]
        brute = {
            (i, j)
            for i in range(len(texts))
            for j in range(i + 1, len(texts))
            if sets[i] and sets[j] and jaccard(sets[i], sets[j]) >= threshold
        }
        assert {(i, j) for i, j, _ in similar_pairs(texts, threshold)} == brute
    assert normalise("  What is  X? ") == "what is x"


def test_health_of_a_real_set_of_six_thousand_questions_finds_its_near_duplicates() -> None:
    # Its speed is a benchmark's to measure (tests never assert on wall time); what it finds is checked here.
    labelset = tolerant_load(shared_set("squad2-en"))
    health = label_health(labelset.name, labelset.documents, labelset.questions)
    assert health.n_questions == 6078 and health.finding("near_duplicates").count > 0


def test_write_refuses_to_replace_a_set_without_overwrite(tmp_path: Path, tiny_set: Path) -> None:
    labelset = load_labelset(tiny_set)
    write_labelset(tmp_path / "copy", labelset.documents, labelset.questions)
    with pytest.raises(FileExistsError, match="--overwrite"):
        write_labelset(tmp_path / "copy", labelset.documents, labelset.questions)
    write_labelset(tmp_path / "copy", labelset.documents, labelset.questions, overwrite=True)
    _assert_same(labelset, load_labelset(tmp_path / "copy").questions)
