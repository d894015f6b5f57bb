"""Every ``labels`` command refuses a set it cannot read whole: exit 2, one line naming the problem, no traceback.

Each case breaks a copy of a small valid set in one way the loader of ``labels validate`` catches (a
document file missing, binary, empty or a folder; a document missing or renamed in ``docs.jsonl``; a
line of ``questions.jsonl`` that is not JSON; negative, reversed or fractional offsets); each command
that reads a set runs on it in process. None may report on documents it did not read ("nothing stale").
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from evalkit.labels.__main__ import main
from tests.conftest import write_set

DOCS = {
    "limits": "# Rate limits\n\nThe RateLimiter allows a burst of 20 requests per second by default.\n",
    "retries": "# Retries\n\nRetries back off from 200 ms up to 30 s.\n",
}


def _question(qid: str, doc_id: str, answer: str) -> dict:
    start = DOCS[doc_id].index(answer)
    span = {"doc_id": doc_id, "start": start, "end": start + len(answer), "text": answer}
    return {"id": qid, "question": f"What about {doc_id}?", "answer": answer, "answers": [answer],
            "answerable": True, "evidence": [span], "evidence_mode": "any", "tags": {"lang": "en"}}  # fmt: skip


QUESTIONS = [_question("q1", "limits", "20 requests"), _question("q2", "retries", "200 ms")]


def _docs_index(root: Path, change: Callable[[list[dict]], list[dict]]) -> None:
    path = root / "docs.jsonl"
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    path.write_text("".join(json.dumps(r) + "\n" for r in change(records)), encoding="utf-8")


def _offsets(start: object, end: object) -> Callable[[Path], None]:
    def breaks(root: Path) -> None:
        records = [dict(q) for q in QUESTIONS]
        records[0] = {**records[0], "evidence": [{**records[0]["evidence"][0], "start": start, "end": end}]}
        (root / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")

    return breaks


def _folder(path: Path) -> None:
    path.unlink()
    path.mkdir()


def _renamed(records: list[dict]) -> list[dict]:
    return [{**r, "doc_id": "limits-v2"} if r["doc_id"] == "limits" else r for r in records]


BREAKS: dict[str, Callable[[Path], None]] = {
    "document file missing": lambda root: (root / "docs" / "limits.md").unlink(),
    "document file binary": lambda root: (root / "docs" / "limits.md").write_bytes(b"\xff\xfe\x00binary\x00"),
    "document file empty": lambda root: (root / "docs" / "limits.md").write_text(""),
    "document file a folder": lambda root: _folder(root / "docs" / "limits.md"),
    "document missing in docs.jsonl": lambda root: _docs_index(root, lambda rs: rs[1:]),
    "document renamed in docs.jsonl": lambda root: _docs_index(root, _renamed),
    "questions.jsonl garbage": lambda root: (root / "questions.jsonl").write_text("{not json\n\x00\x01\n"),
    "negative offsets": _offsets(-5, 3),
    "reversed offsets": _offsets(30, 20),
    "fractional offsets": _offsets(10.5, 20),
}  # fmt: skip

COMMANDS: dict[str, Callable[[Path, Path], list[str]]] = {
    "validate": lambda root, tmp: ["validate", str(root)],
    "stats": lambda root, tmp: ["stats", str(root)],
    "health": lambda root, tmp: ["health", str(root)],
    "reanchor": lambda root, tmp: ["reanchor", str(root)],
    "reanchor --dry-run --json": lambda root, tmp: ["reanchor", str(root), "--dry-run", "--json"],
    "export": lambda root, tmp: ["export", str(root), "--to", "ragas", str(tmp / "out.jsonl")],
    "annotate": lambda root, tmp: ["annotate", str(root)],
    "add-failures": lambda root, tmp: ["add-failures", str(tmp / "no-run"), str(root)],
    "queue": lambda root, tmp: ["queue", "--suspect", str(tmp / "no-run"), str(root)],
    "generate": lambda root, tmp: ["generate", str(root), "--generator", "fake", "--cache", str(tmp / "c.sqlite")],
}


@pytest.fixture(scope="module")
def good_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = write_set(tmp_path_factory.mktemp("good") / "set", DOCS, QUESTIONS)
    assert main(["validate", str(root)]) == 0
    return root


@pytest.mark.parametrize("broken", sorted(BREAKS))
def test_every_labels_command_refuses_a_set_it_cannot_read_whole(
    good_set: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], broken: str
) -> None:
    for command, argv in COMMANDS.items():
        root = Path(shutil.copytree(good_set, tmp_path / f"{command}-set"))
        BREAKS[broken](root)
        capsys.readouterr()
        status = main(argv(root, tmp_path))
        out, err = capsys.readouterr()
        assert status == 2, f"{command} on {broken}: exit {status}\n{out}{err}"
        assert "Traceback" not in out + err and "nothing stale" not in out + err
        lines = [line for line in err.splitlines() if line.strip()]
        if command == "validate":  # validate lists every problem, then its verdict
            assert "not a valid labelled set" in lines[-1], err
        else:
            assert len(lines) == 1, f"{command} on {broken}: {err}"
            assert str(root) in lines[0], f"{command} on {broken}: the line names no file: {err}"
        assert out == "" or command == "validate", f"{command} on {broken} reported on a set it did not read: {out}"


def test_reanchor_on_the_demo_with_one_document_file_deleted_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.conftest import DEMO

    root = Path(shutil.copytree(DEMO, tmp_path / "demo", ignore=shutil.ignore_patterns(".history")))
    record = json.loads((root / "docs.jsonl").read_text(encoding="utf-8").splitlines()[0])
    (root / record["path"]).unlink()
    assert main(["reanchor", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and record["path"] in err and "nothing stale" not in err
