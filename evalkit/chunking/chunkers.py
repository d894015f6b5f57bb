"""Chunkers: cut documents into span-exact, retrievable chunks.

Every chunker is a pure function ``(Document, ChunkingSpec) -> tuple[Chunk, ...]``
registered in :data:`CHUNKERS`. Whatever the chunker, its chunks satisfy:

- ``chunk.text == doc.text[chunk.start:chunk.end]`` and
  ``chunk.chunk_id == span_id(doc.doc_id, chunk.start, chunk.end)``;
- chunks come in document order (starts and ends strictly increase), ids are
  unique within a document, and no chunk is empty or whitespace-only;
- ``len(chunk.text) <= spec.chunk_size`` (a ``prefix`` is not counted);
- every non-whitespace character of the document lies in some chunk;
- consecutive chunks share at most ``spec.chunk_overlap`` characters.

Sizes are code points. Apart from ``fixed``, chunkers trim whitespace off
both ends of a chunk, so a chunk starts and ends on visible text.

All splitters except ``fixed`` share one engine,
:func:`evalkit.chunking.engine.cut`: a text's legal cut positions are
grouped into levels, coarsest first (paragraph, line, sentence, clause,
space; code and markdown add their own). A chunk ends at
the *furthest* cut of the *coarsest* level that fits in ``chunk_size``, and
the next chunk starts at the *earliest* cut of the coarsest level found in
the last ``chunk_overlap`` characters; with no cut there it falls back to a
character position that does not split a grapheme cluster or a "\\r\\n".
Cut positions are found once per document with regexes and looked up with
``bisect``, so a chunking costs O(n) and never builds strings piecewise.

This module is the registry and the public entry points; each chunker lives
in its own module (``fixed``, ``recursive``, ``parent_child``, ``code``,
``markdown``), the shared span-exact helpers in ``text_cuts`` and ``engine``.
Add a chunker: write ``(Document, ChunkingSpec) -> tuple[Chunk, ...]`` in a
new module (calling :func:`~evalkit.chunking.engine.check_sizes` first) and
register it in :data:`CHUNKERS` (one line; ``child_size=True`` if it cuts children).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from evalkit.chunking.code import code_chunks
from evalkit.chunking.engine import ChunkingError, check_sizes
from evalkit.chunking.fixed import fixed_chunks
from evalkit.chunking.markdown import markdown_chunks
from evalkit.chunking.parent_child import parent_child_chunks
from evalkit.chunking.recursive import recursive_chunks
from evalkit.plugins import Registry
from evalkit.records import Chunk, ChunkingSpec, Document

__all__ = [
    "CHUNKERS",
    "ChunkerBackend",
    "ChunkingError",
    "chunk_corpus",
    "chunk_document",
    "chunker_of",
    "code_chunks",
    "fixed_chunks",
    "markdown_chunks",
    "parent_child_chunks",
    "recursive_chunks",
    "validate_spec",
]

Chunker = Callable[[Document, ChunkingSpec], tuple[Chunk, ...]]


def validate_spec(spec: ChunkingSpec) -> None:
    """Raise :class:`ChunkingError` with a clear message if ``spec`` cannot be chunked."""
    if spec.chunker not in CHUNKERS:
        raise ChunkingError(f"unknown chunker {spec.chunker!r}; choose one of: {', '.join(sorted(CHUNKERS))}")
    check_sizes(spec)
    takes_child_size = CHUNKERS.builtin(spec.chunker) and CHUNKERS[spec.chunker].child_size
    if spec.child_size and not takes_child_size:
        raise ChunkingError(
            f"child_size ({spec.child_size}) is only used by the {' or '.join(_child_cutters())} chunker; "
            f"set it to 0 for {spec.chunker!r}"
        )


def chunk_document(doc: Document, spec: ChunkingSpec) -> tuple[Chunk, ...]:
    """Chunk one document with the chunker ``spec`` names."""
    validate_spec(spec)
    return _chunks_of(chunker_of(spec.chunker), doc, spec)


def chunk_corpus(docs: Sequence[Document], spec: ChunkingSpec) -> tuple[Chunk, ...]:
    """Chunk every document, in order; doc ids must be unique so chunk ids are."""
    validate_spec(spec)
    chunker = chunker_of(spec.chunker)
    seen: set[str] = set()
    chunks: list[Chunk] = []
    for doc in docs:
        if doc.doc_id in seen:
            raise ChunkingError(f"duplicate doc_id {doc.doc_id!r}: its chunk ids would collide")
        seen.add(doc.doc_id)
        chunks.extend(_chunks_of(chunker, doc, spec))
    return tuple(chunks)


def _chunks_of(chunker: Chunker, doc: Document, spec: ChunkingSpec) -> tuple[Chunk, ...]:
    """What ``chunker`` returned for ``doc``, if it is the contract (a plugin's may return anything)."""
    produced = chunker(doc, spec)
    if not isinstance(produced, (list, tuple)) or not all(isinstance(c, Chunk) for c in produced):
        got = type(produced).__name__ if not isinstance(produced, (list, tuple)) else "items that are not Chunk"
        raise ChunkingError(f"chunker={spec.chunker} returned {got} for document {doc.doc_id!r}; it must return Chunks")
    return tuple(produced)


@dataclass(frozen=True)
class ChunkerBackend:
    """A built-in chunker as evalkit sees it: where its function is and what it declares (no name is tested)."""

    target: str
    """``module:function`` of ``function(doc, spec) -> chunks`` (the chunker entry-point contract)."""
    child_size: bool = False
    """Cuts each chunk again into children of ``spec.child_size`` (other chunkers refuse a child size)."""


_HERE = "evalkit.chunking"
CHUNKERS: Registry[ChunkerBackend] = Registry(
    "chunker",
    {
        "fixed": ChunkerBackend(f"{_HERE}.fixed:fixed_chunks"),
        "recursive": ChunkerBackend(f"{_HERE}.recursive:recursive_chunks"),
        "markdown": ChunkerBackend(f"{_HERE}.markdown:markdown_chunks"),
        "code": ChunkerBackend(f"{_HERE}.code:code_chunks"),
        "parent_child": ChunkerBackend(f"{_HERE}.parent_child:parent_child_chunks", child_size=True),
    },
)
"""The registration table (``ChunkingSpec.chunker`` to its backend): the one place a built-in chunker's name is
written in code; installed plugins after evalkit's own (a plugin's entry point is its function)."""


def _child_cutters() -> list[str]:
    return [name for name in CHUNKERS.builtin_names() if CHUNKERS[name].child_size]


def chunker_of(name: str) -> Chunker:
    """The chunking function ``chunker=name`` runs: a built-in's, or an installed plugin's."""
    return CHUNKERS.implementation(name)  # type: ignore[return-value]
