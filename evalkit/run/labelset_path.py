"""Where a run's labelled set is: the folder its manifest names, found from the working directory or the project.

The report (the drill-down's question text and spans) and ``evalkit.load_run`` (the questions beside the
results) both need it; the run folder itself keeps only the set's name, path and fingerprint.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["find_labelset"]


def find_labelset(manifest: Mapping[str, Any], run_dir: Path, override: str | Path | None = None) -> Path | None:
    """The labelled set folder of a run: ``override``, else the manifest's path as given, from the
    working directory, or from the project folder above ``reports/``; None when none exists."""
    if override is not None:
        return Path(override) if (Path(override) / "questions.jsonl").is_file() else None
    raw = (manifest.get("labelset") or {}).get("path") or ((manifest.get("config") or {}).get("labelset") or {}).get(
        "path"
    )
    if not raw:
        return None
    path = Path(str(raw)).expanduser()
    candidates = [path] if path.is_absolute() else [path, run_dir.resolve().parent.parent / path]
    for candidate in candidates:
        if (candidate / "questions.jsonl").is_file():
            return candidate
    return None
