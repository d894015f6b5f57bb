"""The ``recursive`` chunker: LangChain-style recursive character splitting, span-exact."""

from __future__ import annotations

from evalkit.chunking.engine import Grid, check_sizes, cut, make_chunk
from evalkit.chunking.text_cuts import text_levels
from evalkit.records import Chunk, ChunkingSpec, Document


def recursive_chunks(doc: Document, spec: ChunkingSpec) -> tuple[Chunk, ...]:
    """Recursive character splitting (LangChain-style), span-exact.

    Separators, coarsest first: blank lines, line breaks, sentence ends
    (". ", "! ", "? ", 。！？；…｡ and kin), clause marks (，、,;:：), spaces,
    then single characters. Punctuation stays on the piece it ends. A chunk
    takes as many whole pieces of the coarsest separator present as fit, so
    a text with no separators at all (a long URL, a Chinese run without
    punctuation) falls back to character windows.
    """
    check_sizes(spec)
    grid = Grid(doc.text, text_levels(doc.text))
    spans = cut(grid, 0, len(doc.text), spec.chunk_size, spec.chunk_overlap)
    return tuple(make_chunk(doc, s, e) for s, e in spans)
