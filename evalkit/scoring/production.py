"""Where production is in a run's grid: the one rule the decision, the gate, the report and add-failures share.

Kept beside :mod:`evalkit.scoring.decide` (whose :func:`~evalkit.scoring.decide.find_production` matches one
grid point) rather than in it, so the decision's module has one job: deciding. What this adds is which point
production is: an external retriever's chunking is its own, so every config of an external run is chunk 0/0 and
production is found there by top_k and threshold alone, whatever chunk_size the production file names.
"""

from __future__ import annotations

import pandas as pd

from evalkit.scoring.decide import find_production


def production_in_grid(
    summary: pd.DataFrame,
    chunk_size: int | None,
    chunk_overlap: int | None,
    top_k: int | None,
    threshold: float | None,
    external: bool,
) -> str | None:
    """Production's config id in a run's grid (``summary``: one row per config); None when it is not there.

    ``external``: the run's retriever is the team's own (``retriever=external``), whose configs all sit at
    chunk 0/0; its production is the config at ``top_k`` and ``threshold``. Otherwise production also needs a
    ``chunk_size`` (a production file without one names no point of a grid that evalkit chunks).
    """
    if top_k is None:
        return None
    if external:
        return find_production(summary, 0, 0, top_k, threshold)
    if chunk_size is None:
        return None
    return find_production(summary, chunk_size, chunk_overlap or 0, top_k, threshold)
