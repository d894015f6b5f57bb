"""``retriever=keyword``: a stand-in for a team's production retriever, as an evalkit plugin.

The contract is ``retriever=external``'s: ``search(queries, k, documents)`` gets ``[{"id", "question",
"tags"}, ...]`` and returns, per query, up to ``k`` hits best first. Because it declares ``documents``,
evalkit also passes the labelled set being scored (``[{"doc_id", "text", "title", "meta"}, ...]``, the
same list on every call of a sweep): that is the corpus it searches, so it runs on whatever set the sweep
names. A hit is a sentence of a document as text (``{"text", "doc_id", "score"}``): evalkit anchors it
back to character offsets itself. A real production retriever searches its own index and can leave
``documents`` out of its signature.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

WORDS = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]|[^\W\u3040-\u30ff\u3400-\u9fff]+")
"""Words: runs of letters and digits, and each CJK character alone (Chinese has no spaces between words)."""
SENTENCES = re.compile(r"[^.!?。！？\n]+[.!?。！？]?")

Corpus = tuple[tuple[str, str, frozenset[str]], ...]
_indexed: list[tuple[Sequence[dict[str, Any]], Corpus]] = []
"""The last documents seen and their sentences: evalkit passes the same list to every batch of a sweep."""


def sentences(documents: Sequence[dict[str, Any]]) -> Corpus:
    """(doc_id, sentence, its words) for every sentence of every document."""
    found = []
    for document in documents:
        for match in SENTENCES.finditer(document["text"]):
            sentence = match.group().strip()
            words = frozenset(WORDS.findall(sentence.lower()))
            if len(words) >= 3:  # headings and list stubs answer nothing
                found.append((document["doc_id"], sentence, words))
    return tuple(found)


def _corpus(documents: Sequence[dict[str, Any]]) -> Corpus:
    if not _indexed or _indexed[0][0] is not documents:
        _indexed[:] = [(documents, sentences(documents))]
    return _indexed[0][1]


def search(queries: list[dict[str, Any]], k: int, documents: Sequence[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Per query, the k sentences sharing most of its words (share of the query's words), best first."""
    corpus = _corpus(documents)
    results = []
    for query in queries:
        asked = frozenset(WORDS.findall(str(query["question"]).lower()))
        scored = sorted(
            ((len(asked & words) / max(len(asked), 1), index) for index, (_, _, words) in enumerate(corpus)),
            key=lambda pair: (-pair[0], pair[1]),
        )[:k]
        results.append(
            [{"doc_id": corpus[i][0], "text": corpus[i][1], "score": round(score, 6)} for score, i in scored if score]
        )
    return results
