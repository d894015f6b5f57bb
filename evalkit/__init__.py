"""evalkit: an evaluation harness and parameter sweeper for retrieval-augmented generation.

From Python: ``evalkit.run_sweep("sweep=quick", "position=off")`` runs a sweep with the command
line's overrides and ``evalkit.load_run("reports/<run_id>")`` reads a run folder into pandas
objects (:mod:`evalkit.api`, the facade above the stages and the sweep); ``evalkit.chunk_labelset(path, 300)`` and
``evalkit.embed_texts(texts)`` give a labelled set's chunks and the vectors a sweep scores with, to
build a store of one's own (:mod:`evalkit.project.corpus`); ``evalkit.Document``, ``evalkit.ChunkingSpec``
and ``evalkit.Chunk`` are the records a chunker plugin gets and returns. All are imported on first use, so
``import evalkit`` (and every ``python -m evalkit.*`` command) stays light.
"""

from __future__ import annotations

from typing import Any

_PUBLIC = {
    "RunData": "evalkit.api",
    "SweepError": "evalkit.api",
    "load_run": "evalkit.api",
    "run_sweep": "evalkit.api",
    "chunk_labelset": "evalkit.project.corpus",
    "embed_texts": "evalkit.project.corpus",
    "Chunk": "evalkit.project.plugin_records",
    "ChunkingSpec": "evalkit.project.plugin_records",
    "Document": "evalkit.project.plugin_records",
}
"""Each public name and the module that defines it."""

__all__ = sorted(_PUBLIC)


def __dir__() -> list[str]:
    """The public names (tab completion), though they are imported only on first use."""
    return sorted({*__all__, *(n for n in globals() if n.startswith("__"))})


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        from importlib import import_module

        return getattr(import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'evalkit' has no attribute {name!r}")
