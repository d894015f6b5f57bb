"""``retriever=keyword``: a stand-in for a team's production retriever, as an evalkit plugin.

The contract is ``retriever=external``'s: ``search(queries, k)`` gets ``[{"id", "question", "tags"}, ...]``
and returns, per query, up to ``k`` hits best first. Here a hit is a sentence of a document as text
(``{"text", "doc_id", "score"}``): evalkit anchors it back to character offsets itself, so the plugin
needs no knowledge of how evalkit reads documents. The corpus is the labelled set's own documents
(``KEYWORD_RETRIEVER_SET``: a labelled-set folder; unset: evalkit's bundled demo set).
"""

from __future__ import annotations

import json
import os
import re
from functools import cache
from pathlib import Path
from typing import Any

WORDS = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]|[^\W\u3040-\u30ff\u3400-\u9fff]+")
"""Words: runs of letters and digits, and each CJK character alone (Chinese has no spaces between words)."""
SENTENCES = re.compile(r"[^.!?。！？\n]+[.!?。！？]?")


@cache
def _sentences(folder: str) -> tuple[tuple[str, str, frozenset[str]], ...]:
    """(doc_id, sentence, its words) for every sentence of every document of the set."""
    root = Path(folder)
    found = []
    for line in (root / "docs.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        text = (root / record["path"]).read_text(encoding="utf-8")
        for match in SENTENCES.finditer(text):
            sentence = match.group().strip()
            words = frozenset(WORDS.findall(sentence.lower()))
            if len(words) >= 3:  # headings and list stubs answer nothing
                found.append((record["doc_id"], sentence, words))
    return tuple(found)


def _set_folder() -> str:
    chosen = os.environ.get("KEYWORD_RETRIEVER_SET")
    if chosen:
        return chosen
    from evalkit.confdir import bundled

    return str(bundled("labelsets/demo"))


def search(queries: list[dict[str, Any]], k: int) -> list[list[dict[str, Any]]]:
    """Per query, the k sentences sharing most of its words (share of the query's words), best first."""
    corpus = _sentences(_set_folder())
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
