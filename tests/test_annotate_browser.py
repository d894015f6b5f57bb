"""The annotation page in a real headless Chromium: select text with the mouse or by finding it, save, check disk.

Needs Debian's ``chromium`` and the ``playwright`` package, as tests/test_report_browser.py (no download).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from evalkit.curate.annotate.api import AnnotationApi
from evalkit.curate.annotate.server import AnnotationServer
from evalkit.curate.annotate.store import AnnotationStore
from evalkit.curate.queue import QueueItem, write_queue
from evalkit.curate.sampling import fold_key
from tests.conftest import DEMO, REPO, write_set

EN = "# Limits\n\nThe RateLimiter allows a burst of 20 requests per second. Retries back off.\n"
ZH = "# 报销\n\n😀𠀋 住宿标准为每晚不超过六百元。出差需提前三天申请。\n"
EVIL = '<img src=x onerror="window.__pwned=1"> What burst is allowed?'


class Served:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.server = AnnotationServer(AnnotationApi(AnnotationStore(root)))
        self.server.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def open_page(browser, served: Served):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(served.server.url)
    page.wait_for_selector("body[data-ready=true]")
    return page, errors


def mouse_select(page, needle: str) -> None:
    """Drag the mouse over ``needle`` in the document (a real selection, made as a person makes it)."""
    box = page.evaluate(
        """(needle) => {
            const node = document.getElementById('doc').firstChild;
            const at = node.data.indexOf(needle);
            const range = document.createRange();
            range.setStart(node, at); range.setEnd(node, at + needle.length);
            range.startContainer.parentElement.scrollIntoView({block: 'nearest'});
            const rects = range.getClientRects();
            const first = rects[0], last = rects[rects.length - 1];
            return {x0: first.left + 1, y0: first.top + first.height / 2,
                    x1: last.right - 1, y1: last.top + last.height / 2};
        }""",
        needle,
    )
    page.mouse.move(box["x0"], box["y0"])
    page.mouse.down()
    page.mouse.move(box["x1"], box["y1"], steps=8)
    page.mouse.up()
    assert page.evaluate("() => window.getSelection().toString()") == needle


def saved_lines(root: Path) -> dict[str, dict]:
    text = (root / "questions.jsonl").read_text(encoding="utf-8")
    return {r["id"]: r for r in map(json.loads, text.splitlines())}


def test_mouse_selections_in_english_and_chinese_are_saved_exactly(browser, tmp_path: Path) -> None:
    root = write_set(tmp_path / "set", {"en": EN, "zh": ZH}, [])
    write_queue(root, [QueueItem("q-en", EVIL, {"source": "log"}), QueueItem("q-zh", "住宿标准是多少？", {})])
    served = Served(root)
    try:
        page, errors = open_page(browser, served)
        assert page.locator("#qtext").text_content() == EVIL  # shown as text, never run
        assert page.evaluate("() => window.__pwned === undefined")
        page.select_option("#docsel", "en")
        mouse_select(page, "a burst of 20 requests")
        page.keyboard.press("s")
        page.wait_for_selector("#spans li q")
        page.locator("#qlist li", has_text="住宿标准").click()
        page.wait_for_function("() => document.getElementById('qtext').textContent.startsWith('住宿')")
        page.select_option("#docsel", "zh")
        mouse_select(page, "六百元")
        page.click("#save")
        page.wait_for_selector("#spans li q")
        assert errors == []
    finally:
        served.close()
    lines = saved_lines(root)
    (en,) = lines["q-en"]["evidence"]
    assert en["text"] == "a burst of 20 requests" == EN[en["start"] : en["end"]]
    (zh,) = lines["q-zh"]["evidence"]
    assert zh["text"] == "六百元" == ZH[zh["start"] : zh["end"]]
    assert zh["start"] == ZH.index("六百元")  # code points: the emoji and 𠀋 before it are one each, not two


def test_end_to_end_log_to_sample_to_annotate_to_validate(browser, tmp_path: Path) -> None:
    out = tmp_path / "set"
    sampled = subprocess.run(
        [sys.executable, "-m", "evalkit.labels", "sample", str(DEMO / "query_log.jsonl"), "--docs", str(DEMO),
         str(out), "--n", "8", "--seed", "1"],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )  # fmt: skip
    assert sampled.returncode == 1 and "sampled 8" in sampled.stdout, sampled.stderr
    demo = {
        fold_key(q["question"]): q for q in map(json.loads, (DEMO / "questions.jsonl").read_text("utf-8").splitlines())
    }
    served = Served(out)
    labelled: dict[str, str] = {}
    try:
        page, errors = open_page(browser, served)
        for item in served.server.api.store.items:
            page.locator(f"#qlist li[data-id='{item.id}']").click()
            page.wait_for_function("(q) => document.getElementById('qtext').textContent === q", arg=item.question)
            gold = demo[fold_key(item.question)]
            if not gold["evidence"]:
                page.keyboard.press("n")  # not in the documents
                page.wait_for_function(
                    "(id) => document.querySelector(`#qlist li[data-id='${id}']`).classList.contains('unanswerable')",
                    arg=item.id,
                )
                labelled[item.id] = ""
                continue
            evidence = gold["evidence"][0]
            page.select_option("#docsel", evidence["doc_id"])
            page.fill("#find", evidence["text"])
            page.press("#find", "Enter")  # the match is selected: the keyboard path
            page.press("#find", "Escape")
            page.keyboard.press("s")
            page.wait_for_function(
                "(id) => document.querySelector(`#qlist li[data-id='${id}']`).classList.contains('labelled')",
                arg=item.id,
            )
            labelled[item.id] = evidence["text"]
        assert errors == []
    finally:
        served.close()
    lines = saved_lines(out)
    assert set(lines) == set(labelled) and len(lines) == 8
    docs = {d["doc_id"]: d["path"] for d in map(json.loads, (out / "docs.jsonl").read_text("utf-8").splitlines())}
    for qid, text in labelled.items():
        if text:
            (span,) = lines[qid]["evidence"]
            body = (out / docs[span["doc_id"]]).read_text(encoding="utf-8")
            assert span["text"] == text.strip() == body[span["start"] : span["end"]]
        else:
            assert lines[qid]["evidence_mode"] == "none"
    check = subprocess.run(
        [sys.executable, "-m", "evalkit.labels", "validate", str(out)], capture_output=True, text=True, cwd=REPO
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert "ok:" in check.stdout and "8 questions" in check.stdout
