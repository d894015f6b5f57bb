"""The ``parent_child`` chunker: small children to retrieve, each pointing at its larger parent."""

from __future__ import annotations

from evalkit.chunking.engine import Grid, check_sizes, cut, make_chunk
from evalkit.chunking.text_cuts import text_levels
from evalkit.records import Chunk, ChunkingSpec, Document, Span


def parent_child_chunks(doc: Document, spec: ChunkingSpec) -> tuple[Chunk, ...]:
    """Small children for retrieval, each pointing at the larger parent to return.

    Parents are the ``recursive`` chunks of ``chunk_size`` / ``chunk_overlap``.
    Children are recursive chunks of ``child_size`` (default
    ``chunk_size // 4``) with no overlap. Parents overlap, children do not:
    the text two parents share is cut into children of the earlier parent
    only, so each child is retrieved once and lies inside its ``parent``
    (a :class:`Span` carrying the parent's text).
    """
    check_sizes(spec)
    text = doc.text
    grid = Grid(text, text_levels(text))
    child_size = spec.child_size or max(1, spec.chunk_size // 4)
    chunks: list[Chunk] = []
    covered = 0
    for start, end in cut(grid, 0, len(text), spec.chunk_size, spec.chunk_overlap):
        parent = Span(doc.doc_id, start, end, text[start:end])
        for s, e in cut(grid, max(start, covered), end, child_size, 0):
            chunks.append(make_chunk(doc, s, e, parent=parent))
        covered = end
    return tuple(chunks)
