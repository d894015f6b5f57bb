"""``chunker=sentences``: whole sentences packed up to chunk_size characters, as an evalkit plugin.

The contract of a chunker: ``function(doc, spec)`` returns chunks whose text is exactly
``doc.text[start:end]`` (evalkit checks spans, so a chunker that drifts is refused, never scored).
"""

from __future__ import annotations

import re

from evalkit import Chunk, ChunkingSpec, Document

SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n{2,}")


def sentence_chunks(doc: Document, spec: ChunkingSpec) -> tuple[Chunk, ...]:
    """Sentences packed greedily up to ``chunk_size`` characters; a longer sentence is a chunk of its own."""
    bounds, start = [], 0
    for cut in SENTENCE_END.finditer(doc.text):
        bounds.append((start, cut.start()))
        start = cut.end()
    bounds.append((start, len(doc.text)))
    chunks: list[Chunk] = []
    first = last = None
    for begin, end in (b for b in bounds if doc.text[b[0] : b[1]].strip()):
        if first is not None and end - first > spec.chunk_size:
            chunks.append(_chunk(doc, first, last))
            first = None
        first = begin if first is None else first
        last = end
    if first is not None:
        chunks.append(_chunk(doc, first, last))
    return tuple(chunks)


def _chunk(doc: Document, start: int, end: int) -> Chunk:
    return Chunk(f"{doc.doc_id}#{start}-{end}", doc.doc_id, start, end, doc.text[start:end])
