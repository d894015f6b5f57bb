"""What a chunking returns to a question: its chunks, or their parents for parent-child.

Also the chunk table a finished chunk stage is stored as: spans and the few
fields a span cannot give back (section path, prefix, parent); the text is the
document's own slice, so a stored chunking reloads exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from evalkit.labels.read import LabelSet
from evalkit.records import Chunk, Span, span_id


@dataclass(frozen=True)
class Units:
    """What a chunking returns to the caller: chunk spans, or parent spans for parent-child."""

    ids: tuple[str, ...]
    doc_ids: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    texts: tuple[str, ...]
    """What a reranker reads: the chunk's embed text (with its prefix), or the parent's text."""

    @property
    def stored_chars(self) -> int:
        return int((self.ends - self.starts).sum())

    def span(self, i: int) -> Span:
        return Span(str(self.doc_ids[i]), int(self.starts[i]), int(self.ends[i]))


def units_of(chunks: Sequence[Chunk], labelset: LabelSet) -> tuple[Units, np.ndarray | None]:
    """Returned units and, for parent-child, the child -> parent index map."""
    if chunks and chunks[0].parent is not None:
        parent_ids: dict[str, int] = {}
        spans: list[Span] = []
        child_to_parent = np.empty(len(chunks), dtype=np.int64)
        for i, chunk in enumerate(chunks):
            parent = chunk.parent or Span(chunk.doc_id, chunk.start, chunk.end)
            pid = span_id(parent.doc_id, parent.start, parent.end)
            if pid not in parent_ids:
                parent_ids[pid] = len(spans)
                spans.append(parent)
            child_to_parent[i] = parent_ids[pid]
        texts = tuple(labelset.document(s.doc_id).text[s.start : s.end] for s in spans)
        return _units(tuple(parent_ids), spans, texts), child_to_parent
    spans = [Span(c.doc_id, c.start, c.end) for c in chunks]
    return _units(tuple(c.chunk_id for c in chunks), spans, tuple(c.embed_text for c in chunks)), None


def _units(ids: tuple[str, ...], spans: Sequence[Span], texts: tuple[str, ...]) -> Units:
    return Units(
        ids=ids,
        doc_ids=np.array([s.doc_id for s in spans], dtype=object),
        starts=np.array([s.start for s in spans], dtype=np.int64),
        ends=np.array([s.end for s in spans], dtype=np.int64),
        texts=texts,
    )


def chunk_table(chunks: Sequence[Chunk]) -> pd.DataFrame:
    """Chunks as a table (no text: it is the document's slice)."""
    return pd.DataFrame(
        {
            "chunk_id": [c.chunk_id for c in chunks],
            "doc_id": [c.doc_id for c in chunks],
            "start": np.array([c.start for c in chunks], dtype=np.int64),
            "end": np.array([c.end for c in chunks], dtype=np.int64),
            "section_path": [list(c.section_path) for c in chunks],
            "prefix": [c.prefix for c in chunks],
            "parent_doc_id": [c.parent.doc_id if c.parent else None for c in chunks],
            "parent_start": [c.parent.start if c.parent else -1 for c in chunks],
            "parent_end": [c.parent.end if c.parent else -1 for c in chunks],
        }
    )


def chunks_from_table(table: pd.DataFrame, labelset: LabelSet) -> tuple[Chunk, ...]:
    """The chunks :func:`chunk_table` stored, text sliced again from the documents.

    Read column by column (``tolist``), not row by row: iterating a stored table's Arrow-backed columns costs
    ~10x more, and every reused or chunked-ahead chunking of a large corpus comes through here.
    """
    texts = {doc.doc_id: doc.text for doc in labelset.documents}
    columns = [table[name].tolist() for name in _CHUNK_COLUMNS]
    chunks = []
    for chunk_id, doc_id, start, end, section, prefix, parent_doc, parent_start, parent_end in zip(*columns):
        parent = None if parent_doc is None else Span(parent_doc, int(parent_start), int(parent_end))
        chunks.append(
            Chunk(
                chunk_id=chunk_id,
                doc_id=doc_id,
                start=int(start),
                end=int(end),
                text=texts[doc_id][int(start) : int(end)],
                section_path=tuple(str(s) for s in section),
                prefix=prefix,
                parent=parent,
            )
        )
    return tuple(chunks)


_CHUNK_COLUMNS = (
    "chunk_id",
    "doc_id",
    "start",
    "end",
    "section_path",
    "prefix",
    "parent_doc_id",
    "parent_start",
    "parent_end",
)
"""The columns :func:`chunk_table` writes, in the order :func:`chunks_from_table` unpacks them."""
