"""The ``code`` chunker: source code cut at top-level definitions, found by regex."""

from __future__ import annotations

import re
from bisect import bisect_right

from evalkit.chunking.engine import Grid, check_sizes, cut, make_chunk
from evalkit.chunking.text_cuts import text_levels, trim_end
from evalkit.records import Chunk, ChunkingSpec, Document

# Top-level definitions: lines at indentation 0. Names are captured where the
# syntax gives one. Prose rarely matches: each form needs its punctuation.
_DEFINITION = re.compile(
    r"^(?:"
    r"(?:async[ \t]+)?def[ \t]+(\w+)[ \t]*[(\[]"  # Python def
    r"|(?:export[ \t]+(?:default[ \t]+)?)?(?:abstract[ \t]+)?class[ \t]+(\w+)"
    r"[ \t]*(?:[:({<]|extends\b|implements\b)"  # Python / JS / TS class
    r"|(?:export[ \t]+(?:default[ \t]+)?)?(?:async[ \t]+)?function\b\*?[ \t]*(\w*)[ \t]*[(<]"
    r"|(?:export[ \t]+)?(?:const|let|var)[ \t]+(\w+)[ \t]*(?::[^=\n]*)?=[ \t]*(?:async[ \t]*)?"
    r"(?:function\b|\([^)\n]*\)[ \t]*(?::[^=\n]*)?=>|\w+[ \t]*=>)"  # JS arrow / function value
    r"|export[ \t]+(?:default[ \t]+)?(?:declare[ \t]+)?"
    r"(?:interface|type|enum|namespace|const|let|var)[ \t]+(\w+)"  # other JS / TS exports
    r"|export[ \t]+(?:default\b|\{|\*)()"
    r"|(?:interface|enum|namespace)[ \t]+(\w+)[ \t]*[{<]"  # TS
    r"|func[ \t]*(?:\([^)\n]*\)[ \t]*)?(\w+)[ \t]*[(\[]"  # Go func / method
    r"|type[ \t]+(\w+)(?:\[[^\]\n]*\])?[ \t]+(?:struct|interface|func|map|chan)\b"  # Go type
    r"|(?:pub(?:\([^)\n]*\))?[ \t]+)?(?:(?:async|const|unsafe)[ \t]+)*fn[ \t]+(\w+)"  # Rust fn
    r"|(?:pub(?:\([^)\n]*\))?[ \t]+)?(?:struct|enum|trait|mod)[ \t]+(\w+)[ \t]*[{<(;]"
    r"|impl\b(?:[ \t]*<[^>\n]*>)?[ \t]+([\w:]+)"
    r")",
    re.MULTILINE,
)
# Lines that belong to the definition below them: decorators, attributes,
# comments (not a "#!" shebang).
_ATTACHED = re.compile(r"@|#(?!!)|//|/\*|\*|[ \t]+\*")


def _definitions(text: str) -> tuple[list[int], list[str]]:
    """Start of each top-level definition (with its decorators and comments) and its name."""
    starts: list[int] = []
    names: list[str] = []
    floor = 0
    for match in _DEFINITION.finditer(text):
        start = match.start()
        while start > floor:
            above = text.rfind("\n", 0, start - 1) + 1
            if above < floor or not _ATTACHED.match(text, above, start):
                break
            start = above
        if starts and start <= starts[-1]:
            continue
        starts.append(start)
        names.append(next((g for g in match.groups() if g), ""))
        floor = match.start() + 1
    return starts, names


def _definition_path(starts: list[int], names: list[str], start: int, end: int) -> tuple[str, ...]:
    """Name of the definition covering most of ``[start, end)`` (none before the first)."""
    i = bisect_right(starts, start) - 1
    best, best_share = "", 0
    while True:
        low = starts[i] if i >= 0 else 0
        high = starts[i + 1] if i + 1 < len(starts) else end
        share = min(end, high) - max(start, low)
        if share > best_share:
            best, best_share = (names[i] if i >= 0 else ""), share
        i += 1
        if i >= len(starts) or starts[i] >= end:
            break
    return (best,) if best else ()


def code_chunks(doc: Document, spec: ChunkingSpec) -> tuple[Chunk, ...]:
    """Source code cut at top-level definitions; other text cut like ``recursive``.

    Definitions are found by regex on lines at indentation 0: Python
    ``def``/``class`` (with decorators), JS/TS ``function``/``class``/
    ``export``/arrow constants, Go ``func``/``type``, Rust ``fn``/``struct``/
    ``impl``. Comment and decorator lines right above a definition go with
    it. Small definitions are merged up to ``chunk_size``; a larger one is
    cut at blank lines, then lines. No overlap is carried across a
    definition boundary (the next definition starts a fresh chunk), and an
    overlap starts at a line start or not at all.
    ``section_path`` is ``(name,)`` of the definition covering most of the
    chunk (a definition runs to the next one), or ``()`` when most of it is
    text before the first definition or an unnamed one.
    """
    check_sizes(spec)
    text = doc.text
    starts, names = _definitions(text)
    boundaries = [trim_end(text, 0, s) for s in starts]
    # Overlap starts at a line start or not at all: half a statement helps no one.
    grid = Grid(text, (boundaries, *text_levels(text)), hard_levels=1, start_levels=3)
    spans = cut(grid, 0, len(text), spec.chunk_size, spec.chunk_overlap)
    return tuple(make_chunk(doc, s, e, section_path=_definition_path(starts, names, s, e)) for s, e in spans)
