"""``labels reanchor`` never moves a label onto another occurrence: real sets, tracked edits, offsets checked.

Every document of the bundled demo set and of the shared real sets (SQuAD 2.0
English, CMRC 2018 Chinese) is edited the way a quarter edits documents (a
paragraph inserted, white space reflowed, a typo fixed inside a labelled
answer, a labelled number changed **whose text occurs elsewhere in the
document**, a sentence deleted), each edit a replacement of a known range, so
the true new place of every old character is known. Then every span in an
edited document must be moved to its true place, reported unchanged after
the context check (at its true place), or queued for a person: 0 spans at a
wrong offset. The documents as labelled come from the set's own ``.history/``
(kept by ``labels validate``), not from ``--before``.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from evalkit.curate.reanchor import plan_reanchor
from evalkit.curate.reanchor.find import QUEUED, Found
from evalkit.labels.history import HISTORY
from tests.conftest import DEMO, REPO, shared_set

Edit = tuple[int, int, str, str]
"""(old start, old end, new text, kind) of one replacement."""


def apply(text: str, edits: list[Edit]) -> tuple[str, Callable[[int], int]]:
    """The edited text and the map of an old offset outside every edit to its new offset."""
    out, at = [], 0
    for start, end, new, _ in sorted(edits):
        out.extend([text[at:start], new])
        at = end
    out.append(text[at:])

    def moved(offset: int) -> int:
        return offset + sum(len(new) - (end - start) for start, end, new, _ in edits if end <= offset)

    return "".join(out), moved


def plan_edits(text: str, spans: list[tuple[int, int, str, tuple[str, ...]]], rng: random.Random) -> list[Edit]:
    """A quarter's edits of one document: non-overlapping replacements, at least one of each kind that fits."""
    edits: list[Edit] = []

    def free(start: int, end: int) -> bool:
        return all(end <= s or start >= e for s, e, _, _ in edits)

    def add(start: int, end: int, new: str, kind: str) -> bool:
        if free(start, end) and (start, end, new) != (start, end, text[start:end]):
            edits.append((start, end, new, kind))
            return True
        return False

    # a changed number whose text occurs elsewhere in the document (the silent wrong move of the old step)
    for start, _end, label, _ in rng.sample(spans, len(spans)):
        numbers = [m for m in re.finditer(r"\d+", label) if text.count(m.group()) > 1]
        if numbers:
            m = numbers[0]
            add(start + m.start(), start + m.end(), str(int(m.group()) + 1), "number")
            break
    # a typo fixed inside a labelled answer (on an extractive set the span is the answer)
    for start, _end, label, _ in rng.sample(spans, len(spans)):
        letters = [i for i, c in enumerate(label) if c.isalpha() and c.islower()]
        if len(label) >= 12 and letters:
            i = letters[len(letters) // 2]
            if add(start + i, start + i + 1, "x" if label[i] != "x" else "y", "typo"):
                break
    # a sentence deleted
    sentences = [m for m in re.finditer(r"[^.。\n]{20,}[.。] ?", text)]
    for m in rng.sample(sentences, len(sentences)):
        if add(m.start(), m.end(), "", "delete"):
            break
    # white space reflowed: a sentence break becomes a line break (same length)
    for m in rng.sample(list(re.finditer(r"\. (?=[A-Z])", text)), len(re.findall(r"\. (?=[A-Z])", text))):
        if add(m.start() + 1, m.end(), "\n", "reflow"):
            break
    # a paragraph inserted at a paragraph break (or at the start)
    breaks = [m.end() for m in re.finditer(r"\n\n", text)] or [0]
    at = rng.choice(breaks)
    add(at, at, "An inserted paragraph about 1943 and other matters.\n\n", "insert")
    return edits


def edit_set(root: Path, seed: int) -> tuple[dict[str, Callable[[int], int]], dict[str, list[Edit]]]:
    """Edit every document of the set at ``root`` in place; return the offset maps and the edits per document."""
    docs = [json.loads(line) for line in (root / "docs.jsonl").read_text(encoding="utf-8").splitlines()]
    spans: dict[str, list[tuple[int, int, str, tuple[str, ...]]]] = {d["doc_id"]: [] for d in docs}
    for line in (root / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        for item in record.get("evidence") or ():
            spans[item["doc_id"]].append((item["start"], item["end"], item["text"], tuple(record.get("answers") or ())))
    rng = random.Random(seed)
    maps, edits = {}, {}
    for doc in docs:
        path = root / doc["path"]
        text = path.read_text(encoding="utf-8")
        edits[doc["doc_id"]] = plan_edits(text, spans[doc["doc_id"]] or [(0, 1, text[:1], ())], rng)
        new, maps[doc["doc_id"]] = apply(text, edits[doc["doc_id"]])
        path.write_text(new, encoding="utf-8", newline="")
    return maps, edits


def verdicts(found: tuple[Found, ...], maps: dict, edits: dict) -> Counter[str]:
    """Each span's verdict against the truth: right, queued, or wrong (moved or left at a wrong offset).

    A span's core is its text without white space at its ends (an edit that only took a space before the
    label changed no fact; the normalised and context steps place the core).
    """
    out: Counter[str] = Counter()
    for f in found:
        span, move = f.span, maps[f.span.doc_id]
        lead = len(span.text) - len(span.text.lstrip())
        core = (span.start + lead, span.start + len(span.text.rstrip()))
        touched = [kind for s, e, _, kind in edits[span.doc_id] if s < core[1] and e > core[0]]
        if f.status in QUEUED:
            out["queued" if touched else "queued, untouched"] += 1
            continue
        if any(kind in ("number", "delete") for kind in touched):
            out["wrong: a changed fact taken"] += 1  # a changed number or a deleted sentence is never a place
            continue
        truths = {(move(span.start), move(span.end)), (move(core[0]), move(core[1]))}
        out["right" if (f.start, f.end) in truths else "wrong"] += 1
    return out


def labels(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "evalkit.labels", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=600)


def copy_set(source: Path, target: Path) -> Path:
    names = ("docs", "docs.jsonl", "questions.jsonl")
    target.mkdir()
    for name in names:
        (shutil.copytree if (source / name).is_dir() else shutil.copy)(source / name, target / name)
    return target


@pytest.mark.parametrize("name", ["demo", "squad2-en", pytest.param("cmrc2018-zh", marks=pytest.mark.slow)])
def test_no_span_lands_on_a_wrong_offset_after_tracked_edits(tmp_path: Path, name: str) -> None:
    root = copy_set(DEMO if name == "demo" else shared_set(name), tmp_path / name)
    assert labels("validate", str(root)).returncode == 0
    assert (root / HISTORY).is_dir()  # validate kept the documents as labelled
    maps, edits = edit_set(root, seed=len(name))
    n_spans = sum(1 for line in (root / "questions.jsonl").open() for _ in json.loads(line).get("evidence") or ())
    plan = plan_reanchor(root)
    got = verdicts(plan.found, maps, edits)
    assert {k for k in got if k.startswith("wrong")} == set(), got
    # every evidence span of the set sat in an edited document: every one was looked at (none unchecked)
    assert plan.counts()["unchecked"] == 0
    assert sum(1 for f in plan.found if f.span.field == "evidence") == n_spans
    kinds = Counter(kind for doc in edits.values() for *_, kind in doc)
    assert kinds["number"] > 0 and kinds["typo"] > 0 and kinds["delete"] > 0  # the edits did happen
    # and a label no edit touched follows its text: queued only when its text repeats and its surroundings went
    assert got["queued, untouched"] <= 0.01 * got["right"], got


def test_a_changed_year_is_never_moved_onto_the_other_occurrence(tmp_path: Path) -> None:
    """The issue's case: 1943 -> 1944 in one sentence, 1943 still in another; the label is queued, not moved."""
    old = "The war ended in 1943 for the navy. Talks began in 1943 in Cairo.\n"
    new = old.replace("ended in 1943", "ended in 1944")
    record = {
        "id": "q1",
        "question": "When did the war end for the navy?",
        "answer": "1943",
        "answers": ["1943"],
        "answerable": True,
        "evidence": [{"doc_id": "war", "start": 17, "end": 21, "text": "1943"}],
        "evidence_mode": "any",
        "tags": {"lang": "en"},
    }
    from tests.conftest import write_set

    root = write_set(tmp_path / "s", {"war": old}, [record])
    assert labels("validate", str(root)).returncode == 0
    (root / "docs" / "war.md").write_text(new, encoding="utf-8", newline="")
    (found,) = plan_reanchor(root).found
    assert found.status == "ambiguous" and "more than once" in found.reason
    # without the document as labelled, the one place is proposed, never taken
    shutil.rmtree(root / HISTORY)
    (found,) = plan_reanchor(root).found
    assert found.status == "ambiguous" and found.proposal == (new.index("1943", 30), new.index("1943", 30) + 4)


def test_a_damaged_history_copy_is_no_copy_and_a_read_only_set_keeps_none(tmp_path: Path) -> None:
    from evalkit.labels.history import recall, recorded_sha256, remember
    from evalkit.labels.load import read_documents
    from tests.conftest import write_set

    root = write_set(tmp_path / "s", {"a": "Alpha text here.\n"}, [])
    documents = read_documents(root)
    assert remember(root, documents) == ""
    (sha,) = recorded_sha256(root).values()
    assert recall(root, sha) == "Alpha text here.\n"
    (root / HISTORY / f"{sha}.txt.gz").write_bytes(b"\x1f\x8bnot gzip")
    assert recall(root, sha) is None  # a damaged copy is never taken for the document as labelled
    shutil.rmtree(root / HISTORY)
    (root / HISTORY).write_text("a file where the folder should be")  # as root, chmod would not stop a write
    note = remember(root, documents)
    assert note.startswith(f"note: no copy of the documents kept in {root / HISTORY}") and "--before" in note


def test_a_span_that_still_reads_right_in_a_changed_document_is_checked_and_moved(tmp_path: Path) -> None:
    """The issue's second case: another occurrence shifted onto the span's old offsets, so the label still reads
    right there; the document's sha256 changed, so its surroundings are checked and the label follows its own."""
    from tests.conftest import write_set

    old = "In 1943 war. In 1943 peace.\n"
    new = "Preface text " + old  # 13 characters: the war sentence's 1943 now sits where the peace one was
    start = old.index("1943", 5)
    assert new[start : start + 4] == "1943"
    record = {
        "id": "q1",
        "question": "When was peace?",
        "answer": "1943",
        "answers": ["1943"],
        "answerable": True,
        "evidence": [{"doc_id": "d", "start": start, "end": start + 4, "text": "1943"}],
        "evidence_mode": "any",
        "tags": {"lang": "en"},
    }
    root = write_set(tmp_path / "s", {"d": old}, [record])
    assert labels("validate", str(root)).returncode == 0
    (root / "docs" / "d.md").write_text(new, encoding="utf-8", newline="")
    (found,) = plan_reanchor(root).found
    assert (found.status, found.start, found.end) == ("moved", start + 13, start + 17), found
    # Without the document as labelled nothing can check it: it is counted unchecked, never called unchanged.
    shutil.rmtree(root / HISTORY)
    plan = plan_reanchor(root)
    assert plan.counts()["unchecked"] == 1 and not [f for f in plan.found if f.status in ("unchanged", "moved")]
