"""Finished units of work, stored by content id so any run can reuse them.

``<reports_dir>/.units/<stage>/<id>.<ext>``: a stage's artefact is named by the
hash of everything that determines it (its settings, its inputs' ids, the
labelled set's content, the stage's code version). A grown grid, a second
reranker or next quarter's run finds every unit whose inputs did not change
and recomputes only the rest. Writes are atomic under a unique temporary name,
so a killed run never leaves a half-written unit, and two processes writing the
same unit write the same bytes. A unit whose files no longer read (a truncated copy, a full disk
that a restore half-filled) is not finished: it is discarded with one warning and recomputed.
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from evalkit.console import warn
from evalkit.run.blocks import write_frames

UNITS_DIR = ".units"


def atomic_write(path: Path, write: Any) -> None:
    """``write(tmp_path)`` then rename over ``path``; the temporary name is unique per writer."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


class UnitStore:
    """Stage artefacts by (stage, id): tables as parquet, arrays as npz, records as JSON."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, stage: str, unit_id: str, ext: str) -> Path:
        return self.root / stage / f"{unit_id}.{ext}"

    def has(self, stage: str, unit_id: str) -> bool:
        """A unit is finished when its record is written (always last) and each of its files reads.

        The check is cheap (JSON, parquet footers, the zip directory of arrays), not a full read.
        """
        if not self.path(stage, unit_id, "json").exists():
            return False
        problem = self._unreadable(stage, unit_id)
        if problem is None:
            return True
        warn(f"the stored {stage} unit {unit_id} does not read ({problem}); recomputing it")
        for leftover in self._files(stage, unit_id):
            leftover.unlink(missing_ok=True)
        return False

    def _files(self, stage: str, unit_id: str) -> list[Path]:
        folder = self.root / stage
        return sorted(folder.glob(f"{unit_id}.*")) if folder.is_dir() else []

    def _unreadable(self, stage: str, unit_id: str) -> str | None:
        for path in self._files(stage, unit_id):
            try:
                if path.suffix == ".json":
                    json.loads(path.read_text(encoding="utf-8"))
                elif path.suffix == ".parquet":
                    pq.read_metadata(path)
                elif path.suffix == ".npz":
                    zipfile.ZipFile(path).close()
            except (OSError, ValueError, zipfile.BadZipFile) as exc:
                return f"{path.name}: {type(exc).__name__}"
        return None

    def save(
        self,
        stage: str,
        unit_id: str,
        record: Mapping[str, Any],
        tables: Mapping[str, pd.DataFrame | Iterable[pd.DataFrame]] | None = None,
        arrays: Mapping[str, np.ndarray] | None = None,
    ) -> None:
        """Tables and arrays first, the record last: its presence means the unit is complete.

        A table given as frames is written a frame at a time (a chunking's rows are never held whole).
        """
        for name, frame in (tables or {}).items():
            path = self.path(stage, unit_id, f"{name}.parquet")
            if isinstance(frame, pd.DataFrame):
                atomic_write(path, lambda p, f=frame: f.to_parquet(p, index=False))
            else:
                write_frames(path, frame)
        if arrays is not None:
            atomic_write(self.path(stage, unit_id, "npz"), lambda p: _save_npz(p, arrays))
        text = json.dumps(record, indent=2, sort_keys=True, ensure_ascii=False, default=str)
        atomic_write(self.path(stage, unit_id, "json"), lambda p: p.write_text(text, encoding="utf-8"))

    def record(self, stage: str, unit_id: str) -> dict[str, Any]:
        return json.loads(self.path(stage, unit_id, "json").read_text(encoding="utf-8"))

    def table(self, stage: str, unit_id: str, name: str) -> pd.DataFrame:
        return pd.read_parquet(self.path(stage, unit_id, f"{name}.parquet"))

    def arrays(self, stage: str, unit_id: str) -> dict[str, np.ndarray]:
        with np.load(self.path(stage, unit_id, "npz"), allow_pickle=False) as data:
            return {name: data[name] for name in data.files}


def _save_npz(path: Path, arrays: Mapping[str, np.ndarray]) -> None:
    with path.open("wb") as handle:
        np.savez(handle, **arrays)
