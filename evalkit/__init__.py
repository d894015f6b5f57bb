"""evalkit: an evaluation harness and parameter sweeper for retrieval-augmented generation.

From Python: ``evalkit.run_sweep("sweep=quick", "position=off")`` runs a sweep with the command
line's overrides and ``evalkit.load_run("reports/<run_id>")`` reads a run folder into pandas
objects (:mod:`evalkit.project.api`). Both are imported on first use, so ``import evalkit``
(and every ``python -m evalkit.*`` command) stays light.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RunData", "SweepError", "load_run", "run_sweep"]


def __dir__() -> list[str]:
    """The public names (tab completion), though they are imported only on first use."""
    return sorted({*__all__, *(n for n in globals() if n.startswith("__"))})


def __getattr__(name: str) -> Any:
    if name in __all__:
        from evalkit.project import api

        return getattr(api, name)
    raise AttributeError(f"module 'evalkit' has no attribute {name!r}")
