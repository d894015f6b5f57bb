"""A production-style retriever over a LanceDB store, for ``retriever=external`` (copy it and change the chunks).

A team that keeps its chunks in a vector database evaluates that retriever as it runs, not a copy that
evalkit builds. This is the worked example: the store holds each chunk's text, its document's id and its
character offsets into that document, and its vector; :func:`retrieve` embeds the questions with the same
model, searches the store and answers with offset hits, which evalkit scores like any of its own configs::

    # once (or whenever the chunks change): build the store from your chunks
    python examples/lancedb_retriever/retriever.py build labelsets/demo reports/lancedb-store --chunk-size 300
    # then sweep production's retriever, reading the store at EVALKIT_LANCEDB_STORE
    EVALKIT_LANCEDB_STORE=reports/lancedb-store python -m evalkit.sweep retriever=external \\
        retriever.target=examples.lancedb_retriever.retriever:retrieve retriever.version=store-1

Here the chunks are evalkit's own recursive chunking of a labelled set (so the example runs on the demo
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
import numpy as np
import pyarrow as pa

from evalkit.chunking.chunkers import chunk_corpus
from evalkit.labels.read import load_labelset
from evalkit.records import ChunkingSpec
from evalkit.retrieval.embedding.base import Embedder, compute_batch
from evalkit.retrieval.embedding.registry import EMBEDDERS, make_embedder
from evalkit.retrieval.embedding.settings import EmbedderSettings

STORE_ENV = "EVALKIT_LANCEDB_STORE"
"""The store's folder (the production side's setting; evalkit never reads it)."""
TABLE = "chunks"
META = "evalkit_example.json"
"""Beside the table: which embedder made the vectors, so queries are embedded by the same one."""
BATCH = 64


def labelset_chunks(labelset: str | Path, chunk_size: int, chunk_overlap: int = 0) -> list[dict[str, Any]]:
    """Chunk records of a labelled set's documents (evalkit's recursive chunker): text, doc_id, offsets."""
    documents = load_labelset(labelset).documents
    chunks = chunk_corpus(documents, ChunkingSpec("recursive", chunk_size, chunk_overlap))
    return [
        {"text": c.text, "embed_text": c.embed_text, "doc_id": c.doc_id, "start": c.start, "end": c.end} for c in chunks
    ]


def _embed(embedder: Embedder, texts: Sequence[str], kind: str) -> np.ndarray:
    parts = [compute_batch(embedder, texts[i : i + BATCH], kind) for i in range(0, len(texts), BATCH)]  # type: ignore[arg-type]
    return np.concatenate(parts) if parts else np.zeros((0, embedder.dim), dtype=np.float32)


def build_store(chunks: Iterable[dict[str, Any]], folder: str | Path, embedder_name: str = "e5") -> int:
    """Write the chunks and their unit-norm vectors into ``folder`` (replacing the table); the row count."""
    records = list(chunks)
    embedder = make_embedder(EmbedderSettings(name=embedder_name))
    vectors = _embed(embedder, [r.get("embed_text", r["text"]) for r in records], "passage")
    table = pa.table(
        {
            "doc_id": [r["doc_id"] for r in records],
            "start": pa.array([r["start"] for r in records], pa.int64()),
            "end": pa.array([r["end"] for r in records], pa.int64()),
            "text": [r["text"] for r in records],
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), embedder.dim),
        }
    )
    Path(folder).mkdir(parents=True, exist_ok=True)
    lancedb.connect(str(folder)).create_table(TABLE, table, mode="overwrite")
    (Path(folder) / META).write_text(json.dumps({"embedder": embedder_name, "identity": embedder.identity}))
    return len(records)


@functools.cache
def _opened(folder: str) -> tuple[Any, Embedder]:
    """The table and its embedder, loaded once per process (evalkit calls :func:`retrieve` per batch)."""
    meta = json.loads((Path(folder) / META).read_text())
    return lancedb.connect(folder).open_table(TABLE), make_embedder(EmbedderSettings(name=meta["embedder"]))


def retrieve(queries: list[dict[str, Any]], k: int) -> list[list[dict[str, Any]]]:
    """evalkit's external retriever call: per query, up to ``k`` offset hits, best first."""
    table, embedder = _opened(os.environ[STORE_ENV])
    vectors = _embed(embedder, [q["question"] for q in queries], "query")
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
    parser.add_argument("--embedder", default="e5", choices=sorted(EMBEDDERS))
    args = parser.parse_args(argv)
    rows = build_store(labelset_chunks(args.labelset, args.chunk_size, args.chunk_overlap), args.store, args.embedder)
    print(f"{rows} chunks -> {args.store}")


if __name__ == "__main__":
    main()
