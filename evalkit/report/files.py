"""Names of the files a run folder holds, and of the optional ones later stages add.

One place for every name the report and the gate read, so a stage that starts
writing a new file (rerank calibration, the position experiment, cost columns)
only has to agree with this module. Each optional source carries the command
that produces it, shown in the report when the data is absent.
"""

from __future__ import annotations

from dataclasses import dataclass

# Written by every sweep (evalkit/results.py).
MANIFEST = "manifest.json"
RESULTS = "results.parquet"
SUMMARY = "summary.parquet"
SUMMARY_CSV = "summary.csv"
POOLS_DIR = "pools"
CHUNKINGS_DIR = "chunkings"
ROWS_DIR = "rows"

# Written by the report and the gate.
REPORT_HTML = "index.html"
GATE_JSON = "gate.json"
GATE_MD = "gate.md"

# Optional, written by later stages. Expected shapes:
CALIBRATION_JSON = "calibration.json"
"""Rerank threshold calibration: ``{"reranker": str, "threshold": float, "method": str, ...}``
(``threshold`` is the calibrated value; other scalar keys are shown as given)."""
CALIBRATION_TABLE = "calibration.parquet"
"""The calibration curve: a ``threshold`` column plus any of ``precision``, ``recall``, ``hit``,
``zero_hit_answerable``, ``zero_hit_unanswerable``, ``f1`` (one row per threshold)."""
POSITION_TABLE = "position.parquet"
"""Position experiment rows: ``question_id``, ``arm``, ``repeat``, ``gold_bucket``
(``head``/``mid``/``tail``), ``correct`` (bool); optional ``config_id``."""
CHUNK_HEALTH_JSON = "chunk_health.json"
"""Chunk-health findings: ``{"findings": [{"chunking", "rule", "count", "share", "message", "examples"}]}``."""
COST_PER_QUERY = "cost_per_query"
"""Column of results/summary: US dollars per query (per question in results, mean in summary)."""
COST_PER_DAY = "cost_per_day"
"""Column of results/summary: US dollars per day at the configured query volume."""
COST_COLUMNS = (COST_PER_QUERY, COST_PER_DAY)


@dataclass(frozen=True)
class OptionalSource:
    """An optional part of a run folder and how a user produces it."""

    key: str
    """Short name used in the report's section ids."""
    title: str
    """Human title of the report section."""
    where: str
    """The file or column the report looks for."""
    how_to_get: str
    """The command that produces it."""


RERANK = OptionalSource(
    "calibration",
    "Threshold calibration (rerank)",
    f"{CALIBRATION_JSON} / {CALIBRATION_TABLE}",
    "python -m evalkit.sweep reranker=local",
)
POSITION = OptionalSource(
    "position",
    "Accuracy by gold position",
    POSITION_TABLE,
    "python -m evalkit.sweep generator=local experiment=position",
)
COST = OptionalSource(
    "cost",
    "Cost against quality",
    f"columns {COST_PER_QUERY}, {COST_PER_DAY} in {RESULTS}",
    "python -m evalkit.sweep pricing=anthropic",
)
CHUNK_HEALTH = OptionalSource(
    "chunk-health",
    "Chunk health",
    CHUNK_HEALTH_JSON,
    "python -m evalkit.sweep chunk_health=true",
)
