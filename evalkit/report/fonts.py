"""A CJK-capable font for the plots, found on the system and registered with matplotlib.

Matplotlib's default DejaVu Sans has no Chinese glyphs: labels would render
as empty boxes. :func:`cjk_font` looks for an installed font that has them
(Debian: ``fonts-wqy-microhei`` or ``fonts-noto-cjk``), registers it, and
returns the family list plots should use: DejaVu Sans first, the CJK font as
the per-glyph fallback. Without one it warns and the report says so.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from pathlib import Path

PREFERRED = (
    "wqy-microhei",
    "wqy-zenhei",
    "notosanscjk",
    "notosanssc",
    "sourcehansans",
    "droidsansfallback",
    "simhei",
    "msyh",
    "pingfang",
    "arphic",
    "uming",
    "ukai",
)
"""File-name fragments of common CJK fonts, tried first (lower case, no separators)."""
PROBE = "中文测试"


@dataclass(frozen=True)
class FontStatus:
    """Which font the plots use for Chinese, or why there is none."""

    family: str | None
    """Registered family name, None when no CJK font exists."""
    path: str | None
    warning: str | None
    """Set when Chinese labels will not render."""

    @property
    def families(self) -> list[str]:
        """``font.sans-serif`` list: Latin from DejaVu Sans, CJK glyphs from the fallback."""
        return ["DejaVu Sans", self.family] if self.family else ["DejaVu Sans"]


def _has_glyphs(path: str, text: str = PROBE) -> bool:
    from matplotlib.ft2font import FT2Font

    try:
        font = FT2Font(path)
        return all(font.get_char_index(ord(ch)) for ch in text)
    except (OSError, RuntimeError, ValueError):
        return False


def _candidates() -> list[str]:
    from matplotlib import font_manager

    paths = sorted(set(font_manager.findSystemFonts(fontext="ttf")))

    def rank(path: str) -> tuple[int, str]:
        name = Path(path).name.lower().replace("-", "").replace("_", "").replace(" ", "")
        hits = [i for i, frag in enumerate(PREFERRED) if frag.replace("-", "") in name]
        return (hits[0] if hits else len(PREFERRED), path)

    return sorted(paths, key=rank)


@functools.cache
def cjk_font() -> FontStatus:
    """Find, register and name a CJK-capable font (once per process)."""
    # Set before the import: on a fresh machine importing font_manager builds its cache and logs "generated
    # new fontManager" (Hydra's logging prints it). Most CJK fonts ship one weight: matplotlib logs
    # "findfont: Failed to find font weight bold ..., now using 400" for every bold title, in the middle of
    # the console, while the regular weight renders fine.
    logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)
    from matplotlib import font_manager

    for path in _candidates():
        if _has_glyphs(path):
            font_manager.fontManager.addfont(path)
            family = font_manager.FontProperties(fname=path).get_name()
            return FontStatus(family=family, path=path, warning=None)
    message = (
        "no CJK-capable font found: Chinese labels in the plots render as empty boxes "
        "(install one, e.g. `apt-get install fonts-wqy-microhei`)"
    )
    return FontStatus(family=None, path=None, warning=message)  # the report warns once the run has been read
