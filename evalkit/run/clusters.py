"""Reading a run folder's clusters.parquet: which questions resample together (I/O only).

The sweep's decision writes the file (:mod:`evalkit.pipeline.decision`, from
:func:`evalkit.scoring.clusters.question_clusters`); the gate and the run-over-run comparison read it
here, so they resample the same clusters the decision did.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from evalkit.run import files

COLUMNS = ("question_id", "cluster", "cluster_by")


class ClustersError(ValueError):
    """A clusters file that cannot be read; the message is one line naming the file."""


def read_clusters(*roots: Path) -> pd.DataFrame | None:
    """The first of these run folders' clusters table; None when none has one (a run made before clusters)."""
    for root in roots:
        path = root / files.CLUSTERS
        if path.is_file():
            try:
                return pd.read_parquet(path, columns=list(COLUMNS))
            except (OSError, ValueError, KeyError) as exc:
                raise ClustersError(f"{path}: not a clusters table ({exc})") from None
    return None
