"""The report's CJK font: Noto Sans SC from a pinned PyPI package, never a system font.

Matplotlib's default DejaVu Sans has no Chinese glyphs, and a fresh machine has no
CJK system font, so the font ships as a dependency (``pylopdf-fonts-zh-cn``, OFL-1.1).
:func:`cjk_font` registers it with matplotlib and names the family list the plots
use: DejaVu Sans first, Noto Sans SC as the per-glyph fallback. Whether a plot holds
text that neither font draws is matplotlib's to say (it warns per missing glyph):
:func:`missing_glyphs` collects those warnings so the report warns once, and only then.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "pylopdf-fonts-zh-cn"
"""The distribution that ships the font (pinned in pyproject.toml)."""
_MISSING = re.compile(r"Glyph (\d+) .*missing from font")
"""Matplotlib's warning for a character no font of the family list has (``_text_helpers``)."""


@dataclass(frozen=True)
class FontStatus:
    """Which font the plots use for Chinese, or None when the font package is not installed."""

    family: str | None
    """Registered family name."""
    path: str | None
    """The font file, inside the installed package."""

    @property
    def families(self) -> list[str]:
        """``font.family`` list: Latin from DejaVu Sans, CJK glyphs from the fallback."""
        return ["DejaVu Sans", self.family] if self.family else ["DejaVu Sans"]


def _packaged_font() -> Path | None:
    try:
        import pylopdf_fonts_zh_cn
    except ImportError:  # installed without its dependencies: the plots say so by glyph, not here
        return None
    path = Path(pylopdf_fonts_zh_cn.sans_path())
    return path if path.is_file() else None


@functools.cache
def cjk_font() -> FontStatus:
    """Register the packaged CJK font with matplotlib and name it (once per process)."""
    # Set before the import: on a fresh machine importing font_manager builds its cache and logs "generated
    # new fontManager" (Hydra's logging prints it). Noto Sans SC ships one weight here: matplotlib logs
    # "findfont: Failed to find font weight bold ..., now using 400" for every bold title, in the middle of
    # the console, while the regular weight renders fine.
    logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)
    from matplotlib import font_manager

    path = _packaged_font()
    if path is None:
        return FontStatus(family=None, path=None)
    font_manager.fontManager.addfont(str(path))
    return FontStatus(family=font_manager.FontProperties(fname=str(path)).get_name(), path=str(path))


@contextlib.contextmanager
def missing_glyphs() -> Iterator[set[str]]:
    """Collect the characters matplotlib could not draw inside the block (their warnings are not printed).

    Every other warning raised inside the block is shown as usual once the block ends.
    """
    seen: set[str] = set()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # every glyph, not once per source line
        try:
            yield seen
        finally:
            for w in caught:
                found = _MISSING.search(str(w.message))
                if found:
                    seen.add(chr(int(found.group(1))))
    for w in caught:
        if not _MISSING.search(str(w.message)):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)


def missing_glyphs_warning(characters: set[str]) -> str | None:
    """The report's one warning line for characters its plots could not draw, None when there are none."""
    if not characters:
        return None
    shown = " ".join(sorted(characters)[:12]) + (" …" if len(characters) > 12 else "")
    return (
        f"{len(characters)} character(s) in the plots have no glyph in DejaVu Sans or the CJK font "
        f"({PACKAGE}) and show as empty boxes: {shown}"
    )
