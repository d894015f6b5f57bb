"""What changed in the corpus since an earlier run (pure comparison, plus finding that run).

Every run records a sha256 per document. Comparing two such records lists the
dirty (changed), new and removed documents. Chunking is pure and cheap, so
every document is chunked again; the content-addressed cache means only the
chunks whose text changed are embedded again, and the sweep counts them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

FINGERPRINTS = "fingerprints.json"


@dataclass(frozen=True)
class Freshness:
    """The corpus now against an earlier run's."""

    previous_run: str
    dirty: tuple[str, ...]
    new: tuple[str, ...]
    removed: tuple[str, ...]
    unchanged: int

    @property
    def changed_share(self) -> float:
        total = self.unchanged + len(self.dirty) + len(self.new)
        return (len(self.dirty) + len(self.new)) / total if total else 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"changed_share": self.changed_share}


def compare(previous_run: str, before: Mapping[str, str], now: Mapping[str, str]) -> Freshness:
    """Dirty, new and removed documents between two fingerprint maps (doc_id -> sha256)."""
    return Freshness(
        previous_run=previous_run,
        dirty=tuple(sorted(d for d in now if d in before and before[d] != now[d])),
        new=tuple(sorted(d for d in now if d not in before)),
        removed=tuple(sorted(d for d in before if d not in now)),
        unchanged=sum(1 for d in now if before.get(d) == now[d]),
    )


def latest_earlier_run(reports_dir: Path, labelset_name: str, this_run: Path) -> Path | None:
    """The most recently written other run of the same labelled set that recorded fingerprints."""
    candidates = []
    for path in reports_dir.glob(f"*/{FINGERPRINTS}"):
        run = path.parent
        if run.resolve() == this_run.resolve():
            continue
        try:
            recorded = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        if recorded.get("labelset") == labelset_name:
            candidates.append((path.stat().st_mtime, run))
    return max(candidates)[1] if candidates else None


def read_fingerprints(run: Path) -> dict[str, str]:
    return dict(json.loads((run / FINGERPRINTS).read_text(encoding="utf-8"))["documents"])
