"""Chinese in the report without a system font: the plots draw it with the packaged Noto Sans SC, the page
embeds a subset of it, and the report warns only when a plot holds a character no font draws.

The browser tests look at what headless Chromium (Debian's ``/usr/bin/chromium``) actually shows: the pixels
of a Chinese plot label in a screenshot, and the font Chromium used for the page's own Chinese text.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path

import numpy as np
import pytest

from evalkit.report import plots, webfont
from evalkit.report.fonts import PACKAGE, FontStatus, cjk_font, missing_glyphs
from evalkit.review import Statistics, write_report
from tests.conftest import evidence, write_set
from tests.test_report import planted_run, run_sweep

FAST = Statistics(n_resamples=200)
LABEL = "差旅报销"
"""A tag value of the planted set: a y tick label of the labelled-set plot."""


def test_the_packaged_font_draws_chinese_and_no_system_font_is_needed() -> None:
    font = cjk_font()
    assert font.family == "Noto Sans SC" and font.path is not None
    assert PACKAGE.replace("-", "_") in Path(font.path).parts  # the pinned package's file, not the system's
    with missing_glyphs() as undrawn:
        plots.draw(lambda: plots.bars({"主题": {LABEL: 3.0, "休假": 2.0}}), font)
    assert undrawn == set()
    with missing_glyphs() as undrawn:  # the same plot with DejaVu Sans alone: matplotlib says what it lacks
        plots.draw(lambda: plots.bars({"主题": {LABEL: 3.0, "休假": 2.0}}), FontStatus(None, None))
    assert undrawn == set("主题差旅报销休假")


def test_the_web_font_holds_exactly_the_pages_cjk_characters() -> None:
    from fontTools.ttLib import TTFont

    font = cjk_font()
    assert webfont.font_face("recall@5 went up 3.2 points (n=120)", font) == ""  # English: nothing embedded
    text = "住宿标准是每晚多少钱？ recall 六百元。"
    css = webfont.font_face(text, font)
    assert css.startswith('@font-face{font-family:"evalkit CJK";src:url(data:font/woff;base64,')
    data = base64.b64decode(css.split("base64,")[1].split(")")[0])
    cmap = set(TTFont(io.BytesIO(data)).getBestCmap())
    assert cmap == {ord(c) for c in "住宿标准是每晚多少钱？六百元。"}
    assert webfont._ranges([0x3002, 0x4E00, 0x4E01, 0x4E02, 0x4E05]) == "U+3002,U+4E00-4E02,U+4E05"


def _korean_set(root: Path) -> Path:
    """Three questions whose ``topic`` tags are Hangul (no glyph in DejaVu Sans or Noto Sans SC) and Chinese."""
    docs = {"a": "# Leave\n\nEmployees get 28 days of annual leave. Carry-over is capped at 5 days.\n"}
    questions = [
        {
            "id": f"q{i}",
            "question": "How many days of annual leave do employees get?",
            "answers": ["28 days"],
            "answerable": True,
            "evidence": [evidence("a", docs["a"], "28 days")],
            "evidence_mode": "any",
            "tags": {"lang": "en", "topic": topic},
        }
        for i, topic in enumerate(["휴가", "休假", "leave"])
    ]
    return write_set(root, docs, questions)


def test_the_report_warns_once_naming_the_characters_no_font_draws(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = run_sweep(_korean_set(tmp_path / "set"), tmp_path / "reports", "chunk_size=[128]", "chunk_overlap=[0]")
    capsys.readouterr()
    write_report(run, statistics=FAST, progress=False)
    err = capsys.readouterr().err.strip().splitlines()
    warned = [line for line in err if "empty boxes" in line]
    assert len(warned) == 1 and warned[0].startswith("evalkit: warning: 2 character(s)"), err
    assert warned[0].endswith(": 가 휴") and PACKAGE in warned[0]


def test_an_english_report_prints_no_font_warning_and_embeds_no_font(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = {"a": "# Leave\n\nEmployees get 28 days of annual leave. Carry-over is capped at 5 days.\n"}
    question = {
        "id": "q0",
        "question": "How many days of annual leave do employees get?",
        "answers": ["28 days"],
        "answerable": True,
        "evidence": [evidence("a", docs["a"], "28 days")],
        "evidence_mode": "any",
        "tags": {"lang": "en", "topic": "leave"},
    }
    labelset = write_set(tmp_path / "set", docs, [question, {**question, "id": "q1", "tags": {"topic": "pay"}}])
    run = run_sweep(labelset, tmp_path / "reports", "chunk_size=[128]", "chunk_overlap=[0]")
    capsys.readouterr()
    html = write_report(run, statistics=FAST, progress=False).read_text(encoding="utf-8")
    assert capsys.readouterr().err == ""
    assert "@font-face" not in html


# ----- in a real browser ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_report(planted_run(tmp_path_factory.mktemp("fonts")), statistics=FAST, progress=False)


def _gray(png: bytes) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=float)


def _label_bitmap(text: str, font: FontStatus) -> np.ndarray:
    """``text`` as the report's plots draw a tick label (same style, size and DPI), cropped to its ink."""
    from matplotlib.figure import Figure

    def build() -> object:
        fig = Figure(figsize=(2.0, 0.5))
        fig.text(0.05, 0.3, text)  # the style's font.size: the tick labels' size
        return fig

    with missing_glyphs():  # the DejaVu-only control draws boxes on purpose: no warning lines
        image = _gray(base64.b64decode(plots.draw(build, font)))
    rows, cols = np.nonzero(image < 250)
    return image[rows.min() : rows.max() + 1, cols.min() : cols.max() + 1]


def _best_match(image: np.ndarray, template: np.ndarray) -> float:
    """Normalised cross-correlation of ``template``'s ink at its best position in ``image`` (1: identical).

    Not an exact pixel match: matplotlib places text at sub-pixel offsets, so the same label's antialiased
    edges differ by position.
    """
    from scipy.signal import fftconvolve

    ink, pattern = 255 - image, 255 - template
    pattern = pattern - pattern.mean()
    h, w = pattern.shape
    total = fftconvolve(ink, np.ones((h, w)), mode="valid")
    squares = fftconvolve(ink**2, np.ones((h, w)), mode="valid")
    cross = fftconvolve(ink, pattern[::-1, ::-1], mode="valid")
    spread = np.sqrt(np.maximum(squares - total**2 / (h * w), 1e-9) * float((pattern**2).sum()))
    return float((cross / spread).max())


def test_a_chinese_plot_label_shows_as_glyphs_in_a_chromium_screenshot(browser, report: Path, tmp_path: Path) -> None:
    """The labelled-set plot's tick label 差旅报销, as Chromium shows it, matches the label drawn in Noto Sans SC;
    the controls show the check reads the characters: the row of empty boxes DejaVu Sans alone draws, and
    the same characters in another order, do not match."""
    page = browser.new_page(viewport={"width": 1600, "height": 1000}, device_scale_factor=1)
    page.goto(report.as_uri())
    page.wait_for_load_state("load")
    plot = page.locator("section#labelset img.plot")
    assert plot.count() == 1
    page.add_style_tag(content="img.plot{max-width:none}")  # the plot wider than the column, shown unscaled
    natural, shown = plot.evaluate("img => [img.naturalWidth, img.clientWidth]")
    assert natural == shown  # shown 1:1, so a screenshot pixel is a plot pixel
    shot = plot.screenshot()
    (tmp_path / "labelset-plot.png").write_bytes(shot)
    page.close()
    image = _gray(shot)
    glyphs = _best_match(image, _label_bitmap(LABEL, cjk_font()))
    boxes = _best_match(image, _label_bitmap(LABEL, FontStatus(None, None)))
    shuffled = _best_match(image, _label_bitmap("报销差旅", cjk_font()))
    assert glyphs > 0.8, f"the label's glyphs are not in the screenshot (best match {glyphs:.2f})"
    assert boxes < 0.6 and shuffled < 0.6, (glyphs, boxes, shuffled)


def test_the_pages_chinese_text_is_drawn_with_the_embedded_font(browser, report: Path) -> None:
    """Chromium draws the page's Chinese with the embedded subset (a web font), every glyph of it: on a
    machine with no CJK font, without the subset it would draw boxes."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(report.as_uri())
    page.wait_for_load_state("load")
    page.evaluate("() => document.fonts.ready")
    probe = page.evaluate(
        """text => {
            const cells = [...document.querySelectorAll('section#labelset td')];
            const cell = cells.find(td => td.textContent.includes(text));
            cell.id = 'font-probe';
            return cell.textContent;
        }""",
        LABEL,
    )
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument")["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": "#font-probe"})["nodeId"]
    fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
    page.close()
    cjk = sum(1 for c in probe if webfont.cjk_characters(c))  # glyphs drawn, repeats included
    embedded = [f for f in fonts if f["isCustomFont"]]
    assert embedded and embedded[0]["familyName"] == "Noto Sans SC", fonts
    assert sum(f["glyphCount"] for f in embedded) == cjk, (probe, fonts)
