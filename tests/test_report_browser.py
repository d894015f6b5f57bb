"""The report in a real browser (headless Chromium): sections render, drill-downs open, planted scripts stay inert.

Needs Debian's ``chromium`` (``/usr/bin/chromium``) and the ``playwright`` package, driven against that
binary (no ``playwright install``, no download). Skips, saying why, when either is missing.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from evalkit.review import Statistics, write_report
from tests.test_report import planted_run

SECTIONS = ("recommendation", "configs", "diagnostics", "grid", "top-k", "zero-hit", "labelset", "questions")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_report(planted_run(tmp_path_factory.mktemp("browser")), statistics=Statistics(n_resamples=300))


def test_report_renders_and_planted_scripts_do_not_run(browser, report: Path, tmp_path: Path) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(report.as_uri())
    page.wait_for_load_state("load")

    assert "pwned" not in page.title() and page.title().startswith("evalkit review")
    assert page.evaluate("() => window.__pwned === undefined")
    assert errors == []
    assert [u for u in requests if not u.startswith(("file:", "data:"))] == []  # self-contained: no network

    for anchor in SECTIONS:
        assert page.locator(f"section#{anchor}").is_visible(), anchor
    images = page.locator("img.plot")
    assert images.count() >= 4
    assert all(
        page.evaluate("(img) => img.complete && img.naturalWidth > 0", images.nth(i).element_handle())
        for i in range(images.count())
    )

    # A drill-down opens on click and shows the planted text as text.
    evil = page.locator("details.q", has_text="q-evil")
    assert evil.count() == 1 and not evil.evaluate("d => d.open")
    evil.locator("summary").click()
    assert evil.evaluate("d => d.open")
    body = evil.locator(".qbody")
    assert body.is_visible()
    assert "<script>window.__pwned=1;" in body.inner_text()
    assert evil.locator("mark").count() >= 1 and evil.locator("table.data").count() >= 1
    assert evil.locator("script, img[onerror]").count() == 0

    # The filter narrows the table (textContent only).
    page.fill("#qfilter", "住宿标准")
    assert page.locator("details.q:not([hidden])").count() == 1
    assert page.locator("#qshown").inner_text() == "1"
    page.fill("#qfilter", "")

    assert page.evaluate("() => window.__pwned === undefined") and "pwned" not in page.title()
    shot = page.screenshot(full_page=False)
    from PIL import Image

    image = Image.open(io.BytesIO(shot)).convert("L")
    low, high = image.getextrema()
    assert high - low > 100 and sum(1 for n in image.histogram() if n) > 20  # not blank
    (tmp_path / "report.png").write_bytes(shot)
    page.close()


def _in_first_screen(page, selector: str, height: int) -> bool:
    box = page.locator(selector).first.bounding_box()
    return box is not None and box["y"] < height and box["height"] > 0


def test_first_screen_shows_the_decision_the_one_knob_table_and_the_cheaper_pick(
    browser, report: Path, tmp_path: Path
) -> None:
    """At 1366x900, without scrolling: the decision, the one-knob moves and the cheaper pick (issue: the page
    explains itself before any table of detail)."""
    width, height = 1366, 900
    page = browser.new_page(viewport={"width": width, "height": height})
    page.goto(report.as_uri())
    page.wait_for_load_state("load")
    card = page.locator("section#recommendation")
    assert card.locator(".big").first.is_visible()
    decision = card.locator(".big").first.inner_text()
    assert decision == "Keep production" or card.locator("p.note").first.inner_text().startswith("Recommended")
    for selector in ("section#recommendation .big", "#one-knob", "#cheaper-pick"):
        assert _in_first_screen(page, selector, height), f"{selector} is below the first screen"
    knobs = page.locator("#one-knob + div table tbody tr")
    assert knobs.count() == 5
    assert [knobs.nth(i).locator("td").first.inner_text() for i in range(5)] == [
        "chunk_size", "chunk_overlap", "top_k", "threshold", "reranker",
    ]  # fmt: skip
    shot = page.screenshot(full_page=False)
    from PIL import Image

    image = Image.open(io.BytesIO(shot))
    assert image.size == (width, height)
    (tmp_path / "first-screen.png").write_bytes(shot)
    page.close()
