"""A production-style retriever over a LanceDB store, for ``retriever=external`` (copy it and change the chunks).

A team that keeps its chunks in a vector database evaluates that retriever as it runs, not a copy that
evalkit builds. This is the worked example: the store holds each chunk's text, its document's id and its
character offsets into that document, and its vector; :func:`retrieve` embeds the questions with the same
model, searches the store and answers with offset hits, which evalkit scores like any of its own configs.
The steps (from a project folder made by ``python -m evalkit init``, which writes this example into it)
are in the README beside this file.

Here the chunks are evalkit's own recursive chunking of a labelled set (so the example runs on any
set with nothing else); a team replaces :func:`labelset_chunks` with its own chunk export: any records
of ``text``, ``doc_id``, ``start`` and ``end`` whose offsets point into the labelled set's documents.
Search is LanceDB's flat scan (exact); the score is the cosine (1 - LanceDB's dot distance on unit
vectors), best first, as evalkit expects.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import lancedb
import pyarrow as pa

import evalkit  # the public API only: evalkit.chunk_labelset and evalkit.embed_texts

STORE_ENV = "EVALKIT_LANCEDB_STORE"
"""The store's folder (the production side's setting; evalkit never reads it)."""
CACHE_PATH = os.environ.get("EVALKIT_CACHE_PATH", "reports/.cache/evalkit.sqlite")
"""The sweep's cache (its default cache_path, from the folder both run in): the chunks' vectors embedded for
the store are the ones a sweep over the same chunks finds there, so nothing is embedded twice."""
TABLE = "chunks"
META = "evalkit_example.json"
"""Beside the table: which embedder made the vectors, so queries are embedded by the same one."""


def labelset_chunks(labelset: str | Path, chunk_size: int, chunk_overlap: int = 0) -> list[dict[str, Any]]:
    """Chunk records of a labelled set's documents (evalkit's recursive chunker): text, doc_id, offsets."""
    return evalkit.chunk_labelset(labelset, chunk_size, chunk_overlap)


def build_store(chunks: Iterable[dict[str, Any]], folder: str | Path, embedder: str = "e5") -> int:
    """Write the chunks and their unit-norm vectors into ``folder`` (replacing the table); the row count."""
    records = list(chunks)
    texts = [r.get("embed_text", r["text"]) for r in records]
    vectors = evalkit.embed_texts(texts, "passage", embedder, cache_path=CACHE_PATH)
    table = pa.table(
        {
            "doc_id": [r["doc_id"] for r in records],
            "start": pa.array([r["start"] for r in records], pa.int64()),
            "end": pa.array([r["end"] for r in records], pa.int64()),
            "text": [r["text"] for r in records],
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), vectors.shape[1]),
        }
    )
    Path(folder).mkdir(parents=True, exist_ok=True)
    lancedb.connect(str(folder)).create_table(TABLE, table, mode="overwrite")
    (Path(folder) / META).write_text(json.dumps({"embedder": embedder}))
    return len(records)


@functools.cache
def _opened(folder: str) -> tuple[Any, str]:
    """The table and its embedder's name, read once per process (evalkit calls :func:`retrieve` per batch)."""
    meta = json.loads((Path(folder) / META).read_text())
    return lancedb.connect(folder).open_table(TABLE), meta["embedder"]


def retrieve(queries: list[dict[str, Any]], k: int) -> list[list[dict[str, Any]]]:
    """evalkit's external retriever call: per query, up to ``k`` offset hits, best first."""
    table, embedder = _opened(os.environ[STORE_ENV])
    vectors = evalkit.embed_texts([q["question"] for q in queries], "query", embedder, cache_path=CACHE_PATH)
    out = []
    for vector in vectors:
        found = table.search(vector).distance_type("dot").limit(k).select(["doc_id", "start", "end", "_distance"])
        rows = found.to_arrow().to_pylist()
        out.append(
            [{"doc_id": r["doc_id"], "start": r["start"], "end": r["end"], "score": 1.0 - r["_distance"]} for r in rows]
        )
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Build the example LanceDB store from a labelled set's chunks.")
    parser.add_argument("command", choices=["build"])
    parser.add_argument("labelset")
    parser.add_argument("store")
    parser.add_argument("--chunk-size", type=int, default=300)
    parser.add_argument("--chunk-overlap", type=int, default=0)
    parser.add_argument("--embedder", default="e5", help="an evalkit embedder (the sweep's embedder=)")
    args = parser.parse_args(argv)
    rows = build_store(labelset_chunks(args.labelset, args.chunk_size, args.chunk_overlap), args.store, args.embedder)
    print(f"{rows} chunks -> {args.store}")


if __name__ == "__main__":
    main()
