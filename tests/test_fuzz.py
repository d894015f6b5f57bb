"""Fuzz: seeded broken labelled sets and configs. Each must stop before any work with exit 2 and one line per
problem (naming file, line and field where there is one): no traceback, nothing silently accepted, nothing
written outside the run folder; and `labels validate` must accept exactly the sets the sweep accepts.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from evalkit.labels.__main__ import main as labels_main
from evalkit.overrides import composition_error
from evalkit.pipeline.config import CONF_DIR
from evalkit.sweep import sweep

DOC_A = "Alpha policy.\nThe burst limit is 20 requests.\n"
DOC_B = "年假政策。\n员工每年有十五天年假。\n"
GOOD_DOCS = [
    {"doc_id": "a", "path": "docs/a.md", "title": "A", "meta": {"effective_date": "2026-01-01", "acl": ["all"]}},
    {"doc_id": "b", "path": "docs/b.md", "title": "B", "meta": {}},
]
GOOD_QUESTIONS = [
    {"id": "q1", "question": "What is the burst limit?", "answers": ["20"], "answerable": True,
     "evidence": [{"doc_id": "a", "start": 33, "end": 35, "text": "20"}], "evidence_mode": "any",
     "tags": {"lang": "en"}},
    {"id": "q2", "question": "每年有几天年假？", "answers": ["十五天"], "answerable": True,
     "evidence": [{"doc_id": "b", "start": 11, "end": 14, "text": "十五天"}], "evidence_mode": "any",
     "tags": {"lang": "zh"}},
    {"id": "q3", "question": "Who founded the company?", "answers": [], "answerable": False, "evidence": [],
     "evidence_mode": "none", "tags": {"lang": "en"}},
]  # fmt: skip

Mutation = Callable[[random.Random, list[dict], list[dict], Path], None]


def _question(rng: random.Random, questions: list[dict]) -> dict:
    return questions[rng.randrange(2)]  # an answerable one


def _set_field(field: str, *values: object) -> Mutation:
    def mutate(rng: random.Random, docs: list[dict], questions: list[dict], root: Path) -> None:
        _question(rng, questions)[field] = rng.choice(values)

    return mutate


def _doc_field(field: str, *values: object) -> Mutation:
    def mutate(rng: random.Random, docs: list[dict], questions: list[dict], root: Path) -> None:
        docs[0][field] = rng.choice(values)

    return mutate


def _meta(field: str, *values: object) -> Mutation:
    def mutate(rng: random.Random, docs: list[dict], questions: list[dict], root: Path) -> None:
        docs[rng.randrange(2)]["meta"] = {field: rng.choice(values)}

    return mutate


def _evidence(field: str, *values: object) -> Mutation:
    def mutate(rng: random.Random, docs: list[dict], questions: list[dict], root: Path) -> None:
        _question(rng, questions)["evidence"][0][field] = rng.choice(values)

    return mutate


def _drop(field: str) -> Mutation:
    def mutate(rng: random.Random, docs: list[dict], questions: list[dict], root: Path) -> None:
        _question(rng, questions).pop(field)

    return mutate


def _duplicate_id(rng: random.Random, docs: list[dict], questions: list[dict], root: Path) -> None:
    questions[1]["id"] = rng.choice(["q1", " q1", "q1 ", "q1\t"])


def _duplicate_doc(rng: random.Random, docs: list[dict], questions: list[dict], root: Path) -> None:
    docs[1]["doc_id"] = rng.choice(["a", "a ", " a"])


def _only_unanswerable(rng: random.Random, docs: list[dict], questions: list[dict], root: Path) -> None:
    del questions[:2]


def _not_utf8(rng: random.Random, docs: list[dict], questions: list[dict], root: Path) -> None:
    (root / "docs" / "a.md").write_bytes(rng.choice([b"\xff\xfe\x00bad", b"caf\xe9\n", b"\x80" * 8]))


def _empty_doc(rng: random.Random, docs: list[dict], questions: list[dict], root: Path) -> None:
    (root / "docs" / "b.md").write_text(rng.choice(["", "   \n", "\u200b\u200b"]), encoding="utf-8")


def _bad_json_line(rng: random.Random, docs: list[dict], questions: list[dict], root: Path) -> None:
    questions.insert(rng.randrange(len(questions) + 1), {"__raw__": rng.choice(["{", "[1, 2]", "nope", '"x"'])})


def _raw_line(*lines: str) -> Mutation:
    def mutate(rng: random.Random, docs: list[dict], questions: list[dict], root: Path) -> None:
        questions.insert(rng.randrange(len(questions) + 1), {"__raw__": rng.choice(lines)})

    return mutate


_GOOD_LINE = '"question": "Limit?", "answers": ["20"], "evidence_mode": "any", '
_SPAN = '"evidence": [{"doc_id": "a", "start": START, "end": 35}]'


def _unicode_clash(rng: random.Random, docs: list[dict], questions: list[dict], root: Path) -> None:
    """Two doc ids that are one id once normalised (NFC vs NFD of the same letters)."""
    docs[0]["doc_id"], docs[1]["doc_id"] = "caf\u00e9", rng.choice(["cafe\u0301", " caf\u00e9"])


def _missing_file(rng: random.Random, docs: list[dict], questions: list[dict], root: Path) -> None:
    (root / "delete-after-writing").write_text(rng.choice(["questions.jsonl", "docs/a.md"]), encoding="utf-8")


MUTATIONS: dict[str, Mutation] = {
    "question-empty": _set_field("question", "", "   ", "\u200b\u200c", None, 7, ["q"]),
    "question-surrogate": _set_field("question", "burst \ud800 limit?", "\udfff"),
    "id-bad": _set_field("id", "", None, 3, ["x"]),
    "mode-bad": _set_field("evidence_mode", "some", None, 1, "ALL"),
    "answerable-bad": _set_field("answerable", "yes", 1, None),
    "answers-bad": _set_field("answers", "20", [20], {"a": 1}),
    "tags-bad": _set_field("tags", "en", [1], 3),
    "as-of-bad": _set_field("tags", {"as_of": "2026-13-45"}, {"as_of": "soon"}, {"as_of": 20260101}),
    "evidence-missing": _drop("evidence"),
    "evidence-start": _evidence("start", -1, 10_000, "3", 1.5, True, None),
    "evidence-end": _evidence("end", 0, 10_000, "x", None),
    "evidence-doc": _evidence("doc_id", "zzz", "", None, 5),
    "evidence-stale": _evidence("text", "21", "twenty", ""),
    "duplicate-id": _duplicate_id,
    "duplicate-doc": _duplicate_doc,
    "only-unanswerable": _only_unanswerable,
    "doc-path-escape": _doc_field("path", "../../etc/passwd", "/proc/self/environ", "/etc/hostname", "docs/../../x"),
    "doc-path-missing": _doc_field("path", "docs/none.md", "", None, 3),
    "doc-id-bad": _doc_field("doc_id", "", None, 4),
    "doc-meta-bad": _doc_field("meta", "x", [1], 3),
    "date-bad": _meta("effective_date", "2026-02-30", "yesterday", 20260101, "01/02/2026"),
    "expires-bad": _meta("expires", "2026-99-01", "never", True),
    "acl-bad": _meta("acl", "all", 3, [1, 2], [""], {"role": "x"}),
    "not-utf8": _not_utf8,
    "empty-doc": _empty_doc,
    "bad-json": _bad_json_line,
    "missing-file": _missing_file,
    "id-control-char": _set_field("id", "q\x001", "\x00", "q1\x07", "q\x1b[31m"),
    "doc-id-control-char": _doc_field("doc_id", "a\x00", "\x00b", "a\x0b"),
    "doc-path-nul": _doc_field("path", "docs/a.md\x00.txt", "\x00"),
    "evidence-text-type": _evidence("text", 20, 2.0, ["20"], {"t": 1}, True),
    "superseded-bad": _meta("superseded_by", 5, "", ["b"], True, {"id": "b"}),
    "duplicate-key": _raw_line(
        '{"id": "q9", "id": "q10", ' + _GOOD_LINE + '"answerable": true}',
        '{"id": "q9", ' + _GOOD_LINE + '"answerable": true, "answerable": false}',
    ),
    "huge-number": _raw_line(
        '{"id": "q9", ' + _GOOD_LINE + _SPAN.replace("START", "9" * 5000) + "}",
        '{"id": "q9", ' + _GOOD_LINE + _SPAN.replace("START", "-" + "1" * 400) + "}",
    ),
    "deep-nesting": _raw_line("[" * 200_000, '{"id": ' + "[" * 50_000 + "]" * 50_000 + "}"),
    "unicode-id-clash": _unicode_clash,
    "title-type": _doc_field("title", 5, ["t"], {"x": 1}, True),
    "question-type": _set_field("question", 42, 4.2, True, {"q": 1}),
    "answers-item-type": _set_field("answers", [["20"]], [None], [True], [{"a": "20"}]),
    "evidence-type": _set_field("evidence", "a:33-35", {"doc_id": "a"}, 5, True),
}


def write_set(root: Path, seed: int) -> str:
    """A broken copy of the tiny good set; returns the mutation's name."""
    rng = random.Random(seed)
    docs, questions = json.loads(json.dumps(GOOD_DOCS)), json.loads(json.dumps(GOOD_QUESTIONS))
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.md").write_text(DOC_A, encoding="utf-8")
    (root / "docs" / "b.md").write_text(DOC_B, encoding="utf-8")
    name = sorted(MUTATIONS)[seed % len(MUTATIONS)]
    MUTATIONS[name](rng, docs, questions, root)

    def line(record: dict) -> str:
        raw = record.get("__raw__")
        return f"{raw}\n" if raw is not None else json.dumps(record, ensure_ascii=False) + "\n"

    (root / "docs.jsonl").write_text("".join(line(d) for d in docs), encoding="utf-8")
    text = "".join(line(q) for q in questions)
    # A lone surrogate reaches the file either as a JSON escape or as raw bytes no UTF-8 decoder accepts.
    errors = rng.choice(["surrogatepass", "backslashreplace"])
    (root / "questions.jsonl").write_text(text, encoding="utf-8", errors=errors)
    marker = root / "delete-after-writing"
    if marker.exists():
        (root / marker.read_text(encoding="utf-8")).unlink()
        marker.unlink()
    return name


def run_sweep(overrides: list[str]) -> tuple[int, list[str]]:
    """The sweep's entry point in process: (exit code, stderr lines); any exception but SystemExit fails the test."""
    err = io.StringIO()
    overrides = [*overrides, "answer_check=off"]  # the retrieval sweep's inputs; the answer check has its own tests
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        problem = composition_error(CONF_DIR, overrides)
        if problem is not None:
            print(f"evalkit: error: {problem}", file=err)
            return 2, err.getvalue().splitlines()
        with initialize_config_dir(version_base="1.3", config_dir=str(CONF_DIR)):
            cfg = compose(config_name="config", overrides=overrides)
        try:
            sweep(cfg)
        except SystemExit as exc:
            return int(exc.code or 0), err.getvalue().splitlines()
    return 0, err.getvalue().splitlines()


def validate(root: Path) -> int:
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        try:
            return labels_main(["validate", str(root)])
        except SystemExit as exc:
            return int(exc.code or 0)


def test_the_unbroken_set_is_valid(tmp_path: Path) -> None:
    """Every broken set is this one with one mutation: it must itself pass, or a case could fail for another reason."""
    root = tmp_path / "set"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.md").write_text(DOC_A, encoding="utf-8")
    (root / "docs" / "b.md").write_text(DOC_B, encoding="utf-8")
    (root / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in GOOD_DOCS), encoding="utf-8")
    (root / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in GOOD_QUESTIONS), encoding="utf-8")
    assert validate(root) == 0


N_BROKEN_SETS = 5 * len(MUTATIONS)  # every mutation drawn five times with its own seed


@pytest.mark.parametrize("seed", range(N_BROKEN_SETS))
def test_a_broken_labelled_set_stops_with_one_line_per_problem(tmp_path: Path, seed: int) -> None:
    root = tmp_path / "set"
    name = write_set(root, seed)
    reports = tmp_path / "reports"
    code, lines = run_sweep([f"labelset.path={root}", f"reports_dir={reports}", "sweep=quick", "progress=false"])
    assert code == 2, (name, lines)
    assert lines and all(line.startswith("evalkit: error: ") for line in lines), (name, lines)
    assert all(str(root) in line or "labelled set" in line for line in lines), (name, lines)
    written = sorted(p.name for p in reports.iterdir()) if reports.exists() else []
    assert written in ([], [".hydra"]), (name, written)
    assert {p.name for p in tmp_path.iterdir()} <= {"set", "reports"}, "nothing written outside the run folder"
    assert validate(root) == 2, f"{name}: labels validate accepted a set the sweep refuses"


BAD_VALUES = {
    "pool_size": ["0", "-3", "abc", "1.5", "nan", "2000", "true"],
    "relevance_tau": ["0", "-0.5", "1.5", "nan", "inf", "abc"],
    "seed": ["1.5", "-1", "abc", "true"],
    "retriever.bm25_k1": ["abc", "-1", "nan", "inf"],
    "retriever.bm25_b": ["5", "-0.1", "nan"],
    "budget_usd": ["nan", "-1", "abc", "inf"],
    "baseline.top_k": ["abc", "0", "1.5"],
    "threshold": ["nan", "inf", "abc", "[0,nan]"],
    "top_k": ["0", "[]", "abc", "[1,-2]"],
    "chunk_size": ["0", "abc", "-5", "1.5"],
    "dry_run": ["maybe", "2", "yes"],
    "filters": ["null"],
    "filters.as_of": ["2026-13-01", "soon"],
    "cost.queries_per_day": ["0", "-5", "abc"],
    "labelset.limit": ["0", "abc", "-1"],
    "run_id": ["../../x", "/abs", "a/b"],
    "labelset": ["null"],
    "chunk_overlap": ["-1", "abc", "1.5"],
    "baseline.chunk_size": ["abc", "0", "-512"],
    "baseline.chunk_overlap": ["abc", "-1"],
    "baseline.threshold": ["abc", "nan"],
    "objective.max_candidates": ["0", "abc", "-1"],
    "position.target_mde": ["0", "-0.1", "1.5", "abc"],
    "position.rounds": ["0", "abc", "1.5"],
    "position.pilot_questions": ["0", "-5", "abc"],
    "position.max_tokens": ["0", "abc"],
    "position.repeats": ["0", "abc"],
    "cost.system_tokens": ["-1", "abc"],
    "cost.output_tokens": ["-1", "abc"],
    "calibration.class_tag": ["null"],
    "filters.enabled": ["maybe"],
}
EXTERNAL = ["retriever=external", "retriever.url=http://127.0.0.1:9/x"]  # no target/url; url on a builtin retriever
TYPOS = ["chunk_szie=512", "+chunk_szie=512", "retriever.bm25_kl=1", "+cost.modle=x", "+foo=1", "retriever=hybird",
         "labelset=xquad-en", "chunker=semantik", "top_k=[1,2", "reranker=cohre", "sweep=quik"]  # fmt: skip
CONFIG_CASES = [f"{key}={value}" for key, values in BAD_VALUES.items() for value in values] + TYPOS + EXTERNAL


@pytest.mark.parametrize("override", CONFIG_CASES)
def test_a_bad_config_value_stops_with_one_line(tmp_path: Path, override: str) -> None:
    code, lines = run_sweep([f"reports_dir={tmp_path}", "sweep=quick", "progress=false", override])
    assert code == 2, (override, lines)
    assert len(lines) == 1 and lines[0].startswith("evalkit: error: "), (override, lines)
    key = override.lstrip("+").split("=")[0].split(".")[0]
    assert key in lines[0], (override, lines)
    assert not [p for p in tmp_path.iterdir() if p.name != ".hydra"], "a bad config must stop before any work"


@pytest.mark.parametrize("override", ["top_k=${oc.env:HOME}", "chunk_size=${oc.env:HOME}", "seed=${oc.env:PATH}"])
def test_an_environment_value_in_a_bad_override_is_never_echoed(tmp_path: Path, override: str) -> None:
    name = override.split(":")[1].rstrip("}")
    code, lines = run_sweep([f"reports_dir={tmp_path}", "sweep=quick", "progress=false", override])
    assert code == 2 and len(lines) == 1, (override, lines)
    assert os.environ[name] not in lines[0] and "${oc.env:" in lines[0], lines


def test_the_fuzz_suite_is_large_enough() -> None:
    assert N_BROKEN_SETS + len(CONFIG_CASES) >= 300 and len(MUTATIONS) >= 36
