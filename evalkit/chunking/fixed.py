"""The ``fixed`` chunker: the naive baseline of evenly spaced character windows."""

from __future__ import annotations

from evalkit.chunking.engine import check_sizes, make_chunk
from evalkit.chunking.text_cuts import NON_SPACE
from evalkit.records import Chunk, ChunkingSpec, Document


def fixed_chunks(doc: Document, spec: ChunkingSpec) -> tuple[Chunk, ...]:
    """Naive baseline: windows of ``chunk_size`` every ``chunk_size - chunk_overlap`` characters.

    Windows are not trimmed or moved to word boundaries; whitespace-only
    windows are skipped. The last window may be shorter.
    """
    check_sizes(spec)
    text, size = doc.text, spec.chunk_size
    stride = size - spec.chunk_overlap
    chunks = []
    for start in range(0, len(text), stride):
        end = min(start + size, len(text))
        if NON_SPACE.search(text, start, end):
            chunks.append(make_chunk(doc, start, end))
        if end == len(text):
            break
    return tuple(chunks)
