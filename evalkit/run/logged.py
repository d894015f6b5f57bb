"""The one reader of ``production_log/`` (written by the sweep's ``production_log=``) for :mod:`evalkit.review`.

Its comparison with the replica and the best config is review.json's ``production_log``
(:class:`evalkit.run.review.LoggedScores`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from evalkit.run import files
from evalkit.run.folder import RunError, read_json

__all__ = ["read_logged"]


def read_logged(root: Path) -> tuple[pd.DataFrame, dict[str, Any]] | None:
    """``production_log/``'s rows and record; None when the run was swept without ``production_log=``."""
    rows_path, info_path = root / files.PRODUCTION_LOG_ROWS, root / files.PRODUCTION_LOG_JSON
    if not info_path.is_file():
        return None
    info = read_json(info_path)
    try:
        rows = pd.read_parquet(rows_path) if rows_path.is_file() else pd.DataFrame()
    except Exception as exc:  # pyarrow raises several types for a broken file
        raise RunError(f"{rows_path}: cannot read ({exc.__class__.__name__})") from exc
    return rows, info
