"""Candidate passages for a question: what production returned, and BM25 over the documents' blocks.

The page shows them so the annotator starts reading where the answer
probably is. Passages are the documents' blocks (text between blank lines),
long blocks cut at about :data:`MAX_PASSAGE` characters, so a document of
hundreds of thousands of characters is a few hundred passages, not one.
BM25 is evalkit's own (:class:`evalkit.retrieval.bm25.BM25Index`, the
multilingual tokeniser with jieba for Chinese), built once, on first use.
This is the one curation module that imports retrieval: a candidate list
ranked by a different BM25 than the sweep's would mislead.
"""

from __future__ import annotations

import itertools
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalkit.records import Document, Span

if TYPE_CHECKING:
    from evalkit.retrieval.bm25 import BM25Index

__all__ = ["Candidate", "Candidates", "passages"]

MAX_PASSAGE = 1200
_BREAK = re.compile(r"\n[ \t]*\n")


@dataclass(frozen=True)
class Candidate:
    """One passage worth reading for a question."""

    span: Span
    source: str
    """``production`` (the log says production returned it) or ``bm25``."""
    score: float = 0.0


def passages(doc: Document, limit: int = MAX_PASSAGE) -> list[Span]:
    """The blocks of a document as spans (exact slices), long ones cut at a line break or space near ``limit``."""
    out: list[Span] = []
    cuts = [0, *(m.end() for m in _BREAK.finditer(doc.text)), len(doc.text)]
    for start, end in itertools.pairwise(cuts):
        while start < end:
            stop = end if end - start <= limit else _cut(doc.text, start, start + limit)
            piece = doc.text[start:stop]
            if piece.strip():
                left = start + len(piece) - len(piece.lstrip())
                right = stop - (len(piece) - len(piece.rstrip()))
                out.append(Span(doc.doc_id, left, right, doc.text[left:right]))
            start = stop
    return out


def _cut(text: str, start: int, stop: int) -> int:
    for mark in ("\n", "。", ". ", " "):
        at = text.rfind(mark, start + (stop - start) // 2, stop)
        if at > start:
            return at + len(mark)
    return stop


class Candidates:
    """Ranks passages for questions; the index is built on the first call (thread-safe)."""

    def __init__(self, documents: Mapping[str, Document]) -> None:
        self.documents = documents
        self._spans: list[Span] = []
        self._index: BM25Index | None = None
        self._lock = threading.Lock()
        self._scoring = threading.Lock()  # set_queries then score_rows: one question at a time

    def _built(self) -> BM25Index:
        with self._lock:
            if self._index is None:
                from evalkit.retrieval.bm25 import BM25Index

                self._spans = [p for doc in self.documents.values() for p in passages(doc)]
                self._index = BM25Index([s.text for s in self._spans])
            return self._index

    def bm25(self, question: str, k: int = 5) -> list[Candidate]:
        """The ``k`` passages BM25 scores highest for ``question`` (none scoring 0)."""
        index = self._built()
        with self._scoring:
            index.set_queries([question])
            scores = index.score_rows(slice(0, 1))[0]
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:k]
        return [Candidate(self._spans[i], "bm25", float(scores[i])) for i in order if scores[i] > 0]

    def for_question(self, question: str, returned: Sequence[Span], k: int = 5) -> list[Candidate]:
        """Production's passages first (a whole returned document as its best BM25 block), then BM25's."""
        found: list[Candidate] = []
        ranked = self.bm25(question, k=max(k, 500))
        for span in returned[:3]:
            doc = self.documents.get(span.doc_id)
            if doc is None:
                continue
            if span.end > span.start:
                chunk = Span(span.doc_id, span.start, span.end, doc.text[span.start : span.end])
                found.append(Candidate(chunk, "production"))
                continue
            best = next((c.span for c in ranked if c.span.doc_id == span.doc_id), None)
            blocks = passages(doc) or [Span(doc.doc_id, 0, 0, "")]
            best = best or max(blocks, key=lambda b: len(b.text) >= 40)  # no BM25 match: its first real block
            found.append(Candidate(best, "production"))
        seen = {(c.span.doc_id, c.span.start) for c in found}
        found.extend(c for c in ranked[:k] if (c.span.doc_id, c.span.start) not in seen)
        return found
