"""The report in a real browser (headless Chromium): sections render, drill-downs open, planted scripts stay inert.

Needs Debian's ``chromium`` (``/usr/bin/chromium``) and the ``playwright`` package, driven against that
binary (no ``playwright install``, no download). Skips, saying why, when either is missing.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from evalkit.report import Statistics, write_report
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
