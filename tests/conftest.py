"""Shared fixtures: paths to the real labelled sets, and a small valid set written to disk."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_LABELSETS = REPO.parent / "shared" / "labelsets"
DEMO = REPO / "labelsets" / "demo"


def shared_set(name: str) -> Path:
    path = SHARED_LABELSETS / name
    if not (path / "questions.jsonl").exists():
        pytest.skip(f"shared labelled set {name} not found at {path} (it sits beside the checkout in ../shared)")
    return path


def write_set(root: Path, docs: dict[str, str], questions: list[dict]) -> Path:
    """Write a labelled set in the shared format (docs/, docs.jsonl, questions.jsonl)."""
    (root / "docs").mkdir(parents=True, exist_ok=True)
    index = []
    for doc_id, text in docs.items():
        path = root / "docs" / f"{doc_id}.md"
        path.write_text(text, encoding="utf-8", newline="")
        index.append(
            {
                "doc_id": doc_id,
                "path": f"docs/{doc_id}.md",
                "title": doc_id,
                "n_chars": len(text),
                "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
                "meta": {},
            }
        )
    (root / "docs.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in index), encoding="utf-8")
    (root / "questions.jsonl").write_text(
        "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in questions), encoding="utf-8"
    )
    return root


def evidence(doc_id: str, text: str, answer: str) -> dict:
    start = text.index(answer)
    return {"doc_id": doc_id, "start": start, "end": start + len(answer), "text": answer}


TINY_DOCS = {
    "en": "# Rate limits\n\nThe RateLimiter allows a burst of 20 requests per second by default.\n",
    "zh": "# 报销政策\n\n住宿标准为每晚不超过六百元。出差需提前三天申请。\n",
}


@pytest.fixture
def tiny_set(tmp_path: Path) -> Path:
    questions = [
        {
            "id": "q-en",
            "question": "What burst does RateLimiter allow by default?",
            "answer": "20",
            "answers": ["20", "20 requests"],
            "answerable": True,
            "evidence": [evidence("en", TINY_DOCS["en"], "20")],
            "evidence_mode": "any",
            "tags": {"lang": "en", "custom_tag": [1, 2]},
        },
        {
            "id": "q-zh",
            "question": "住宿标准是每晚多少钱？",
            "answer": "六百元",
            "answers": ["六百元"],
            "answerable": True,
            "evidence": [evidence("zh", TINY_DOCS["zh"], "六百元")],
            "evidence_mode": "any",
            "tags": {"lang": "zh-Hans"},
        },
        {
            "id": "q-none",
            "question": "What is the parking allowance?",
            "answer": "",
            "answers": [],
            "answerable": False,
            "evidence": [],
            "evidence_mode": "none",
            "tags": {"lang": "en", "unanswerable_kind": "not_in_corpus"},
        },
    ]
    return write_set(tmp_path / "tiny", TINY_DOCS, questions)


def demo_subset(root: Path, n_docs: int = 12) -> Path:
    """A smaller labelled set cut from the bundled demo set: its first documents and the questions they answer.

    Real documents and labels, few enough chunks that a sweep test embeds them in seconds.
    """
    import json as _json

    lines = (DEMO / "docs.jsonl").read_text(encoding="utf-8").splitlines()
    docs = [_json.loads(line) for line in lines if line.strip()]
    en = [d for d in docs if d.get("meta", {}).get("lang") == "en"][: n_docs // 2]
    zh = [d for d in docs if d.get("meta", {}).get("lang") != "en"][: n_docs - len(en)]
    kept = {d["doc_id"]: d for d in en + zh}
    (root / "docs").mkdir(parents=True, exist_ok=True)
    for doc in kept.values():
        target = root / doc["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((DEMO / doc["path"]).read_bytes())
    (root / "docs.jsonl").write_text(
        "".join(_json.dumps(d, ensure_ascii=False) + "\n" for d in kept.values()), encoding="utf-8"
    )
    questions = []
    for line in (DEMO / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        question = _json.loads(line)
        cited = {e["doc_id"] for e in question["evidence"] + question.get("source_passage", [])}
        if cited and cited <= kept.keys():
            questions.append(question)
        elif not question["evidence"] and len(questions) % 5 == 0:
            question["source_passage"] = []
            questions.append(question)
    (root / "questions.jsonl").write_text(
        "".join(_json.dumps(q, ensure_ascii=False) + "\n" for q in questions), encoding="utf-8"
    )
    return root


@pytest.fixture(scope="session")
def small_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_subset(tmp_path_factory.mktemp("demo-subset"))


CHROMIUM = os.environ.get("EVALKIT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def browser():
    """Debian's headless Chromium driven by playwright (no browser download); skips, saying why, without it.

    Tests install nothing: ``.ci/run`` installs Debian's ``chromium`` before the suite, a developer by hand.
    """
    import shutil

    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        pytest.skip(f"no Chromium at {CHROMIUM} (Debian: apt-get install chromium; .ci/run installs it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip package playwright not installed")
    with sync_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line saying what the suite skipped and why, skips with the same reason counted together.

    Skip reports reach the controlling process under pytest-xdist too, so the line counts every worker's.
    """
    reasons: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = getattr(report, "longrepr", None)
        reason = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else "unknown reason"
        reason = reason.removeprefix("Skipped: ")
        reasons[reason] = reasons.get(reason, 0) + 1
    if reasons:
        ranked = sorted(reasons.items(), key=lambda item: (-item[1], item[0]))
        said = "; ".join(f"{n} x {reason}" for reason, n in ranked)
        terminalreporter.write_line(f"skipped {sum(reasons.values())}: {said}")
