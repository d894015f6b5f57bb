"""The replay history: one JSON line per weekly replay, appended, never rewritten.

Where: ``<reports_dir>/replay/history.jsonl`` (:data:`HISTORY`), beside the run folders, so
the quarterly sweep's report and the weekly replays of its production config sit together.
Each line holds :data:`COLUMNS` in that order, no more, no fewer (``schema`` says which
version of the list a line follows), so a spreadsheet, ``pandas.read_json(lines=True)`` or
``jq`` read every line the same way. Lines are only ever appended: an earlier point is never
changed, and two replays writing at once each add one whole line (a single ``O_APPEND`` write).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["COLUMNS", "HISTORY", "SCHEMA", "HistoryError", "append_point", "history_path", "read_history"]

HISTORY = Path("replay") / "history.jsonl"
"""The history file, relative to ``reports_dir``."""
SCHEMA = 1
COLUMNS: tuple[str, ...] = (
    "schema",
    "replayed_at",  # UTC, ISO 8601, when the replay ran
    "log",  # the query log replayed
    "window_start",  # the log window (exclusive start, inclusive end), ISO 8601 UTC
    "window_end",
    "rows_in_window",
    "questions",  # distinct questions replayed (spellings folded as labels sample folds them)
    "zero_hits",  # of them, how many got no context
    "zero_hit_rate",
    "ci_low",  # the rate's interval
    "ci_high",
    "ci_level",
    "ci_method",
    "target",  # the zero-hit target the sweep calibrates under (objective.zero_hit_answerable_max)
    "config_id",  # production's grid point, as the sweep names it
    "labelset",  # the corpus it retrieved from
    "pool_size",
    "threshold",
    "wider_pool_size",  # one step wider (null: already the largest)
    "zero_hits_wider",  # the same questions at the wider pool (null: not measured, within the target)
    "move",  # keep, widen or relabel (evalkit.scoring.replay)
    "advice",  # the move in words
)


class HistoryError(ValueError):
    """The history file cannot be read or extended; the message is one line naming the file, line and field."""


def history_path(reports_dir: Path) -> Path:
    return reports_dir / HISTORY


def read_history(path: Path) -> tuple[dict[str, Any], ...]:
    """Every earlier point, oldest first (no file: none); HistoryError for the first unreadable line."""
    if not path.is_file():
        return ()
    points = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise HistoryError(f"{path}: unreadable ({exc})") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            point = json.loads(line)
        except json.JSONDecodeError as exc:
            raise HistoryError(f"{path}:{number}: invalid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(point, dict):
            raise HistoryError(f"{path}:{number}: expected a JSON object, got {type(point).__name__}")
        missing = [c for c in COLUMNS if c not in point]
        if missing:
            raise HistoryError(f"{path}:{number}: field {missing[0]!r}: missing (every line holds {len(COLUMNS)})")
        for field in ("zero_hits", "questions"):
            if not isinstance(point[field], int) or isinstance(point[field], bool) or point[field] < 0:
                raise HistoryError(f"{path}:{number}: field {field!r}: expected a count, got {point[field]!r}")
        points.append(point)
    return tuple(points)


def _plain(value: Any) -> Any:
    """JSON without NaN (not JSON): a missing number is null."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


def append_point(path: Path, point: Mapping[str, Any]) -> None:
    """Append one point (exactly :data:`COLUMNS`, in order) as one line."""
    extra = sorted(set(point) - set(COLUMNS) - {"schema"})
    missing = [c for c in COLUMNS if c not in point and c != "schema"]
    if extra or missing:
        raise ValueError(f"a history point holds exactly {COLUMNS}; extra {extra}, missing {missing}")
    row = {c: _plain(SCHEMA if c == "schema" else point[c]) for c in COLUMNS}
    line = json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(line)
