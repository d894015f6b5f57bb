"""A "production retriever" that returns each question's gold: the recall of a perfect retriever is 1.0.

The labelled set is read from ``EVALKIT_GOLD_LABELSET`` (a folder with ``questions.jsonl`` and
``docs.jsonl``). ``offsets`` returns the evidence spans as offsets; ``passage_text`` returns the text of
each question's source passage (which holds its evidence) with no doc_id, for evalkit to anchor back.
A few more hits follow the gold with lower scores, so top_k and thresholds have something to slice.
"""

from __future__ import annotations

import functools
import json
import os
import zlib
from pathlib import Path
from typing import Any


@functools.cache
def _labelset(folder: str) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    root = Path(folder)
    questions = {}
    for line in (root / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            questions[record["id"]] = record
    docs = {}
    for line in (root / "docs.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            with open(root / record["path"], encoding="utf-8", newline="") as handle:  # offsets count these
                docs[record["doc_id"]] = handle.read()
    return questions, docs


def _filler(docs: dict[str, str], k: int) -> list[dict[str, Any]]:
    first = sorted(docs)[: max(k, 1)]
    return [{"doc_id": d, "start": 0, "end": min(len(docs[d]), 40), "score": 0.1} for d in first if docs[d]]


def offsets(queries: list[dict[str, Any]], k: int) -> list[list[dict[str, Any]]]:
    questions, docs = _labelset(os.environ["EVALKIT_GOLD_LABELSET"])
    out = []
    for query in queries:
        gold = [{"doc_id": e["doc_id"], "start": e["start"], "end": e["end"], "score": 1.0}
                for e in questions[query["id"]].get("evidence", [])]  # fmt: skip
        out.append((gold + _filler(docs, k))[:k])
    return out


def passage_text(queries: list[dict[str, Any]], k: int) -> list[list[dict[str, Any]]]:
    questions, docs = _labelset(os.environ["EVALKIT_GOLD_LABELSET"])
    out = []
    for query in queries:
        record = questions[query["id"]]
        spans = record.get("source_passage") or record.get("evidence", [])
        gold = [{"text": docs[s["doc_id"]][s["start"] : s["end"]], "score": 1.0} for s in spans]
        out.append(([*gold, {"text": "no document holds this sentence.", "score": 0.05}])[:k])
    return out


def reversed_offsets(queries: list[dict[str, Any]], k: int) -> list[list[dict[str, Any]]]:
    """The gold, but the second query's first hit has its offsets swapped: a reply that cannot be scored."""
    out = offsets(queries, k)
    if len(out) > 1 and out[1]:
        hit = out[1][0]
        hit["start"], hit["end"] = hit["end"], hit["start"]
    return out


def gold_for_some(queries: list[dict[str, Any]], k: int) -> list[list[dict[str, Any]]]:
    """The gold for about two queries in three, filler only for the rest: a worse production than ``offsets``."""
    out = offsets(queries, k)
    _, docs = _labelset(os.environ["EVALKIT_GOLD_LABELSET"])
    return [
        hits if zlib.crc32(q["id"].encode()) % 3 else _filler(docs, k) for q, hits in zip(queries, out, strict=True)
    ]


CALLS: list[tuple[int, int]] = []
"""Per call of :func:`offsets_seeing_documents`: the id of the documents list it got, and its batch's size."""


def offsets_seeing_documents(
    queries: list[dict[str, Any]], k: int, documents: list[dict[str, Any]]
) -> list[list[dict[str, Any]]]:
    """The gold offsets, from a retriever that asks for the documents: they must be the labelled set's own."""
    _, docs = _labelset(os.environ["EVALKIT_GOLD_LABELSET"])
    if {d["doc_id"]: d["text"] for d in documents} != docs:
        raise ValueError("the documents given are not the labelled set's")
    CALLS.append((id(documents), len(queries)))
    return offsets(queries, k)


def nothing(queries: list[dict[str, Any]], k: int) -> list[list[dict[str, Any]]]:
    """No hits for any query (an empty index, or every hit under production's cutoff): a valid reply."""
    return [[] for _ in queries]


def every_other(queries: list[dict[str, Any]], k: int) -> list[list[dict[str, Any]]]:
    """The gold for every other query (by id, so batching does not move it), no hits for the rest."""
    return [hits if sum(map(ord, q["id"])) % 2 else [] for q, hits in zip(queries, offsets(queries, k))]
