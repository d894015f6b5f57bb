"""The external retriever's hits as what every other retriever gives the sweep: units and a candidate pool.

The distinct spans it returned (over all queries) are the chunking, in document order; each query's
hits, best first, are its pool row, with the retriever's own scores for thresholds to slice. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from evalkit.records import Chunk, Document, Question, span_id
from evalkit.retrieval.external.hits import AnchoredHits, ExternalHitError
from evalkit.retrieval.pools import CandidatePool


def check_best_first(questions: Sequence[Question], anchored: AnchoredHits, where: str) -> None:
    """Thresholds keep a prefix of each list: its scores must not rise (higher is better, as similarities)."""
    for question, hits in zip(questions, anchored.hits, strict=True):
        for rank in range(1, len(hits)):
            if hits[rank].score > hits[rank - 1].score:
                raise ExternalHitError(
                    f"{where}: query {question.id!r}, hit {rank}: score: {hits[rank].score:g} is above hit "
                    f"{rank - 1}'s {hits[rank - 1].score:g}; return hits best first with higher-is-better scores "
                    "(a distance: send its negative)"
                )


def chunks_and_pool(
    anchored: AnchoredHits, documents: Sequence[Document], pool_size: int
) -> tuple[tuple[Chunk, ...], CandidatePool]:
    """The returned spans as chunks (document order) and each query's first ``pool_size`` distinct hits."""
    order = {doc.doc_id: i for i, doc in enumerate(documents)}
    texts = {doc.doc_id: doc.text for doc in documents}
    spans = sorted({(h.doc_id, h.start, h.end) for hits in anchored.hits for h in hits},
                   key=lambda s: (order[s[0]], s[1], s[2]))  # fmt: skip
    index = {span: i for i, span in enumerate(spans)}
    chunks = tuple(
        Chunk(span_id(doc_id, start, end), doc_id, start, end, texts[doc_id][start:end]) for doc_id, start, end in spans
    )
    indices = np.full((len(anchored.hits), pool_size), -1, dtype=np.int64)
    scores = np.full((len(anchored.hits), pool_size), np.nan)
    for row, hits in enumerate(anchored.hits):
        seen: set[int] = set()
        for hit in hits:
            unit = index[(hit.doc_id, hit.start, hit.end)]
            if unit in seen:
                continue  # the same span twice (two text hits anchored alike): ranked once, at its best
            if len(seen) == pool_size:
                break
            indices[row, len(seen)] = unit
            scores[row, len(seen)] = hit.score
            seen.add(unit)
    return chunks, CandidatePool(indices, scores, "external")
