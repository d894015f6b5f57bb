"""Reading and validating labelled sets: the real shared sets, and every kind of broken input."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from evalkit.labels.read import LabelsetError, load_labelset
from tests.conftest import REPO, shared_set


@pytest.mark.parametrize("name", ["squad2-en", "cmrc2018-zh"])
def test_shared_sets_load_as_they_are(name: str) -> None:
    labelset = load_labelset(shared_set(name))
    stats = json.loads((shared_set(name) / "stats.json").read_text(encoding="utf-8"))
    assert len(labelset.documents) == stats["docs"]
    assert len(labelset.questions) == stats["questions"]
    assert sum(not q.answerable for q in labelset.questions) == stats["unanswerable"]
    for question in labelset.questions:
        for span in question.evidence:
            assert labelset.document(span.doc_id).text[span.start : span.end] == span.text


def test_unknown_tags_are_kept(tiny_set: Path) -> None:
    labelset = load_labelset(tiny_set)
    by_id = {q.id: q for q in labelset.questions}
    assert by_id["q-en"].tags["custom_tag"] == [1, 2]
    assert by_id["q-en"].answers == ("20", "20 requests")
    assert by_id["q-none"].evidence_mode == "none" and not by_id["q-none"].answerable


def _break(tiny_set: Path) -> None:
    lines = (tiny_set / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    stale = json.loads(lines[0])
    stale["evidence"][0]["text"] = "25"  # the document says 20: a stale label
    unknown = json.loads(lines[1])
    unknown["evidence"][0]["doc_id"] = "missing-doc"
    duplicate = json.loads(lines[2])
    duplicate["id"] = "q-en"
    missing = {"id": "q-missing", "answerable": True, "evidence": []}
    broken = [json.dumps(stale), json.dumps(unknown), "{not json", json.dumps(duplicate), json.dumps(missing)]
    (tiny_set / "questions.jsonl").write_text("\n".join(broken) + "\n", encoding="utf-8")


def test_every_problem_is_reported_once_with_file_line_and_field(tiny_set: Path) -> None:
    _break(tiny_set)
    with pytest.raises(LabelsetError) as caught:
        load_labelset(tiny_set)
    problems = caught.value.problems
    text = "\n".join(problems)
    assert "questions.jsonl:1: field 'evidence[0]': stale label: question 'q-en'" in text
    assert "questions.jsonl:2: field 'evidence[0]': question 'q-zh' cites unknown doc 'missing-doc'" in text
    assert "questions.jsonl:3: invalid JSON" in text
    assert "questions.jsonl:4: field 'id': duplicate id 'q-en' (first on line 1; ids that differ only in" in text
    assert "questions.jsonl:5: field 'question': missing or empty" in text
    assert "questions.jsonl:5: field 'evidence_mode'" in text
    assert all("\n" not in p for p in problems)


def test_sweep_cli_reports_problems_one_per_line_with_exit_code_2(tiny_set: Path, tmp_path: Path) -> None:
    _break(tiny_set)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalkit.sweep",
            f"labelset.path={tiny_set}",
            "position=off",
            "answer_check=off",
            f"reports_dir={tmp_path}",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) >= 6 and all(line.startswith("evalkit: error: ") for line in lines)
    assert "Traceback" not in result.stderr


def test_missing_and_empty_sets_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(LabelsetError, match="does not exist"):
        load_labelset(tmp_path / "nowhere")
    (tmp_path / "empty" / "docs").mkdir(parents=True)
    (tmp_path / "empty" / "questions.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(LabelsetError, match=r"no documents|no questions"):
        load_labelset(tmp_path / "empty")


def test_bundled_demo_set_is_valid() -> None:
    labelset = load_labelset(REPO / "labelsets" / "demo")
    assert len(labelset.documents) >= 40 and len(labelset.questions) >= 120


def _break_documents(tiny_set: Path) -> None:
    """docs.jsonl naming a missing file and a duplicate id; a document that is not UTF-8."""
    index = [json.loads(line) for line in (tiny_set / "docs.jsonl").read_text(encoding="utf-8").splitlines()]
    index.append(dict(index[0], path="docs/gone.md"))
    index.append(dict(index[1], doc_id="extra", path="docs/latin1.md"))
    (tiny_set / "docs" / "latin1.md").write_bytes("Gebühr".encode("latin-1"))
    (tiny_set / "docs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in index), encoding="utf-8")


def _empty_questions(tiny_set: Path) -> None:
    (tiny_set / "questions.jsonl").write_text("\n", encoding="utf-8")


def _no_documents(tiny_set: Path) -> None:
    (tiny_set / "docs.jsonl").unlink()
    for file in (tiny_set / "docs").iterdir():
        file.unlink()
    (tiny_set / "docs").rmdir()


@pytest.mark.parametrize("breakage", [_break, _break_documents, _empty_questions, _no_documents])
def test_labels_validate_reports_exactly_the_problems_the_sweep_reports(
    tiny_set: Path, tmp_path: Path, breakage: Callable[[Path], None]
) -> None:
    breakage(tiny_set)
    sweep = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalkit.sweep",
            f"labelset.path={tiny_set}",
            "position=off",
            "answer_check=off",
            f"reports_dir={tmp_path}",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    validate = subprocess.run(
        [sys.executable, "-m", "evalkit.labels", "validate", str(tiny_set)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert sweep.returncode == 2 and validate.returncode == 2, (sweep.stderr, validate.stderr)
    said_by_sweep = [line.removeprefix("evalkit: error: ") for line in sweep.stderr.splitlines()]
    said_by_validate = [line for line in validate.stdout.splitlines() if not line.startswith("warning: ")]
    assert said_by_validate and said_by_validate == said_by_sweep


def test_a_set_cannot_read_files_outside_its_folder(tmp_path: Path) -> None:
    """docs.jsonl paths are confined to the set's folder: absolute, '..' and links out are refused before any work."""
    root = tmp_path / "evil"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.md").write_text("hello world\n", encoding="utf-8")
    (root / "docs" / "out.md").symlink_to("/etc/hostname")
    (root / "docs" / ".DS_Store").write_bytes(b"\x00\x01binary")
    lines = [
        {"doc_id": "a", "path": "docs/a.md"},
        {"doc_id": "env", "path": "/proc/self/environ"},
        {"doc_id": "pw", "path": "../../etc/passwd"},
        {"doc_id": "link", "path": "docs/out.md"},
    ]
    (root / "docs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    question = {
        "id": "q1",
        "question": "hello?",
        "answer": "hello",
        "answers": ["hello"],
        "answerable": True,
        "evidence": [{"doc_id": "a", "start": 0, "end": 5, "text": "hello"}],
        "evidence_mode": "any",
    }
    (root / "questions.jsonl").write_text(json.dumps(question) + "\n", encoding="utf-8")
    reports = tmp_path / "reports"
    result = subprocess.run(
        [sys.executable, "-m", "evalkit.sweep", f"labelset.path={root}", f"reports_dir={reports}"],
        capture_output=True, text=True, cwd=REPO, timeout=300,
    )  # fmt: skip
    assert result.returncode == 2 and "Traceback" not in result.stderr
    err = result.stderr.splitlines()
    assert any("docs.jsonl:2: field 'path'" in line and "absolute" in line for line in err)
    assert any("docs.jsonl:3: field 'path'" in line and "outside" in line for line in err)
    assert any("docs.jsonl:4: field 'path'" in line and "outside" in line for line in err)
    written = [p.name for p in reports.iterdir()] if reports.exists() else []
    assert written in ([], [".hydra"]), "nothing is computed or written for a refused set (Hydra's log folder aside)"
    (root / "docs.jsonl").unlink()  # without an index: hidden files and links out are not documents
    assert [d.doc_id for d in load_labelset(root).documents] == ["a"]


def test_run_id_stays_inside_reports_dir(tmp_path: Path) -> None:
    for bad in ("../../x", "/abs", "a/b"):
        result = subprocess.run(
            [sys.executable, "-m", "evalkit.sweep", f"reports_dir={tmp_path}", f"run_id='{bad}'", "sweep=quick"],
            capture_output=True, text=True, cwd=REPO, timeout=300,
        )  # fmt: skip
        assert result.returncode == 2 and "run_id" in result.stderr and "Traceback" not in result.stderr
    assert [p.name for p in tmp_path.iterdir()] in ([], [".hydra"])  # Hydra's own log folder only
