"""Results on disk: written as each chunking finishes, read back to resume and report.

Layout of ``reports/<run_id>/``::

    manifest.json              plan, fingerprints, models, package versions, seed
    chunkings/<key>.json       per chunking: counts, timings; written last = "done"
    rows/<key>.parquet         per (config, question) metric values
    pools/<key>.parquet        the ranked candidate pool per question (drill-down)
    results.parquet|csv        all rows, once the sweep is complete
    summary.parquet|csv        one aggregated row per config

Every file is written to a temporary name and renamed, so a killed sweep
never leaves a half-written file that a resume would trust.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from evalkit.run import files
from evalkit.run.units import atomic_write


def write_json(path: Path, payload: Mapping[str, Any]) -> None:
    text = json.dumps(payload, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def write_table(path: Path, frame: pd.DataFrame, csv: bool = False) -> None:
    """Parquet for tools, and CSV beside it for people when asked (temporary names unique per writer)."""
    atomic_write(path, lambda tmp: frame.to_parquet(tmp, index=False))
    if csv:
        atomic_write(path.with_suffix(".csv"), lambda tmp: frame.to_csv(tmp, index=False))


class RunFolder:
    """The files of one run; knows which chunkings are already done."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def done_marker(self, key: str) -> Path:
        return self.root / files.CHUNKINGS_DIR / f"{key}.json"

    def rows_path(self, key: str) -> Path:
        return self.root / files.ROWS_DIR / f"{key}.parquet"

    def pool_path(self, key: str) -> Path:
        return self.root / files.POOLS_DIR / f"{key}.parquet"

    def holds(self, key: str, score_unit_id: str) -> bool:
        """The chunking's files are there and were written from the unit with this score id."""
        marker = self.done_marker(key)
        if not (marker.exists() and self.rows_path(key).exists() and self.pool_path(key).exists()):
            return False
        return (read_json(marker).get("unit_ids") or {}).get("score") == score_unit_id

    def link_chunking(self, key: str, rows_file: Path, pool_file: Path, info: Mapping[str, Any]) -> None:
        """The chunking's files as links to a finished unit's (same bytes, no second serialisation)."""
        for source, target in ((rows_file, self.rows_path(key)), (pool_file, self.pool_path(key))):
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}.{os.getpid()}.link")
            try:
                os.link(source, tmp)
            except OSError:  # another file system, or links not allowed: copy instead
                shutil.copyfile(source, tmp)
            os.replace(tmp, target)
        write_json(self.done_marker(key), info)  # last: its presence means the chunking is complete

    def load_rows(self, key: str) -> pd.DataFrame:
        return pd.read_parquet(self.rows_path(key))

    def load_info(self, key: str) -> dict[str, Any]:
        return read_json(self.done_marker(key))
