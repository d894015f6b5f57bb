"""The records a plugin's entry point gets and returns, public as ``evalkit.Document``, ``evalkit.ChunkingSpec``
and ``evalkit.Chunk`` (a chunker plugin is ``function(doc: Document, spec: ChunkingSpec) -> chunks``).

A plugin package imports them from ``evalkit``, not from evalkit's modules, so a reorganised module
breaks no plugin; they are the records the pipeline itself uses (re-exported, never copied).
"""

from __future__ import annotations

from evalkit.records import Chunk, ChunkingSpec, Document

__all__ = ["Chunk", "ChunkingSpec", "Document"]
