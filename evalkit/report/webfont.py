"""The page's own CJK text in the packaged font: an embedded @font-face holding only the glyphs it uses.

The report is one self-contained file read on machines that may have no CJK font (a
fresh CI runner's headless browser), so the page carries the CJK characters it shows,
subset from the plots' font (:mod:`evalkit.report.fonts`) to just those characters,
as a WOFF (zlib; WOFF2 would need brotli) data URL. A page without CJK text carries
nothing. The page's CSS names the face first, so every reader sees the same CJK glyphs;
``unicode-range`` keeps Latin text with the page's own font stack.
"""

from __future__ import annotations

import base64
import io
import logging

from evalkit.report.fonts import FontStatus
from evalkit.report.html import CJK_FAMILY

CJK_RANGES = (
    (0x2E80, 0x2FDF),  # radicals
    (0x3000, 0x30FF),  # CJK punctuation, kana
    (0x3100, 0x31FF),  # bopomofo, strokes, kana extension
    (0x3400, 0x4DBF),  # extension A
    (0x4E00, 0x9FFF),  # unified ideographs
    (0xF900, 0xFAFF),  # compatibility ideographs
    (0xFE30, 0xFE4F),  # compatibility forms
    (0xFF00, 0xFFEF),  # full-width forms (，？：)
    (0x20000, 0x3134F),  # extensions B to G
)
"""Code points the face is for; Latin stays with the page's own font stack."""


def cjk_characters(text: str) -> list[int]:
    """The distinct CJK code points of ``text``, sorted."""
    return sorted({cp for cp in map(ord, set(text)) if any(lo <= cp <= hi for lo, hi in CJK_RANGES)})


def _ranges(codepoints: list[int]) -> str:
    """``unicode-range`` value: consecutive code points merged into ``U+A-B`` runs."""
    runs: list[list[int]] = []
    for cp in codepoints:
        if runs and cp == runs[-1][1] + 1:
            runs[-1][1] = cp
        else:
            runs.append([cp, cp])
    return ",".join(f"U+{lo:X}" if lo == hi else f"U+{lo:X}-{hi:X}" for lo, hi in runs)


def subset_woff(path: str, codepoints: list[int]) -> bytes:
    """The font at ``path`` reduced to ``codepoints`` (no hinting, default layout features), as WOFF."""
    from fontTools import subset

    # fontTools logs every subsetting step at INFO; under Hydra's logging that is a page of glyph names on
    # the console, in the middle of the sweep's own lines.
    logging.getLogger("fontTools").setLevel(logging.WARNING)

    options = subset.Options()
    options.flavor = "woff"
    options.hinting = False
    options.desubroutinize = True  # smaller once zlib-compressed
    options.name_IDs = [0, 1, 2, 13, 14]  # the OFL asks every copy to carry its copyright and licence notice
    font = subset.load_font(path, options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=codepoints)
    subsetter.subset(font)
    out = io.BytesIO()
    subset.save_font(font, out, options)
    return out.getvalue()


def font_face(text: str, font: FontStatus) -> str:
    """The @font-face rule for the CJK characters of ``text``; empty when there are none or no font."""
    codepoints = cjk_characters(text)
    if not codepoints or font.path is None:
        return ""
    data = base64.b64encode(subset_woff(font.path, codepoints)).decode("ascii")
    return (
        f'@font-face{{font-family:"{CJK_FAMILY}";src:url(data:font/woff;base64,{data}) format("woff");'
        f"unicode-range:{_ranges(codepoints)}}}"
    )
