"""``add-failures``: the questions a run got wrong, proposed for the next quarter's annotation queue.

Reads a run folder (the layout :mod:`evalkit.run.files` names): the
production config is ``recommendation.json``'s ``production.config_id``, or,
for runs before it existed, the grid point the manifest's ``baseline:``
block names (:func:`evalkit.scoring.production.production_in_grid`). A question is a
failure of that config when it is answerable and ``recall`` (span coverage at
top_k) is below 1 (a miss, a partial multi-hop miss or a zero-hit), or, with
``unanswerable``, when it is unanswerable and the config returned context
(no abstention). The question's text and current evidence come from the
labelled set the run used (the manifest's ``labelset.path``, read
tolerantly); the evidence is proposed, not copied, so the annotator checks it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from evalkit.curate.queue import QueueItem
from evalkit.labels.load import tolerant_load
from evalkit.run import files
from evalkit.run.folder import production_chunked
from evalkit.scoring.production import production_in_grid

__all__ = ["FailureProposal", "propose_failures"]


@dataclass(frozen=True)
class FailureProposal:
    """The failures of a run's production config, as queue items."""

    run_id: str
    config_id: str
    items: tuple[QueueItem, ...]
    scored: int
    """Questions the production config was scored on."""
    missing: tuple[str, ...]
    """Failed question ids the labelled set no longer holds."""


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: cannot read ({exc.__class__.__name__}); is this a run folder?") from None
    if not isinstance(value, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return value


def _results(run_dir: Path) -> pd.DataFrame:
    path = run_dir / files.RESULTS
    if path.is_file():
        return pd.read_parquet(path)
    parts = sorted((run_dir / files.ROWS_DIR).glob("*.parquet"))  # an unfinished sweep: its finished chunkings
    if not parts:
        raise ValueError(f"{run_dir}: no {files.RESULTS} and no {files.ROWS_DIR}/*.parquet (not a run folder?)")
    return pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True)


def production_config(run_dir: Path, manifest: Mapping[str, Any], results: pd.DataFrame) -> str:
    """The run's production config id; ``ValueError`` when the run names none in its grid."""
    recommendation = run_dir / files.RECOMMENDATION_JSON
    if recommendation.is_file():
        config_id = (_read_json(recommendation).get("production") or {}).get("config_id")
        if isinstance(config_id, str) and config_id in set(results["config_id"]):
            return config_id
    block = (manifest.get("config") or {}).get("baseline") or {}
    summary = results.drop_duplicates("config_id")
    try:
        size, overlap = block.get("chunk_size"), block.get("chunk_overlap")
        found = production_in_grid(
            summary,
            None if size is None else int(size),
            None if overlap is None else int(overlap),
            int(block["top_k"]),
            block.get("threshold"),
            production_chunked(manifest),
        )
    except (KeyError, TypeError, ValueError):
        found = None
    if found is None:
        raise ValueError(f"{run_dir}: the run names no production config in its grid (manifest baseline: {block})")
    return found


def _labelset_path(manifest: Mapping[str, Any], run_dir: Path, override: Path | None) -> Path:
    if override is not None:
        return override
    named = (manifest.get("labelset") or {}).get("path")
    if not isinstance(named, str) or not named:
        raise ValueError(f"{run_dir / files.MANIFEST}: field 'labelset.path': missing; pass --labelset")
    for candidate in (Path(named), run_dir.parent.parent / named):
        if (candidate / "questions.jsonl").is_file():
            return candidate
    raise ValueError(f"{run_dir / files.MANIFEST}: field 'labelset.path': {named!r} not found; pass --labelset")


def propose_failures(run_dir: Path, labelset: Path | None = None, unanswerable: bool = False) -> FailureProposal:
    """The failed questions of ``run_dir``'s production config, tagged for the queue."""
    manifest = _read_json(run_dir / files.MANIFEST)
    results = _results(run_dir)
    config_id = production_config(run_dir, manifest, results)
    rows = results[results["config_id"] == config_id]
    answerable = rows["answerable"].astype(bool)
    failed = rows[answerable & (rows["recall"].astype(float) < 1.0 - 1e-9)]
    if unanswerable:
        failed = pd.concat([failed, rows[~answerable & ~rows["zero_hit"].astype(bool)]])
    reading = tolerant_load(_labelset_path(manifest, run_dir, labelset))
    questions = {q.id: q for q in reading.questions}
    run_id = str(manifest.get("run_id") or run_dir.name)
    items, missing = [], []
    for row in failed.itertuples(index=False):
        question = questions.get(str(row.question_id))
        if question is None:
            missing.append(str(row.question_id))
            continue
        tags = dict(question.tags) | {
            "source": "run",
            "failure": True,
            "failed_in": run_id,
            "failed_config": config_id,
            "failed_recall": round(float(row.recall), 4),
        }
        if not question.answerable:
            tags["failure_kind"] = "returned context for an unanswerable question"
        items.append(QueueItem(question.id, question.question, tags, proposed=question.evidence))
    return FailureProposal(run_id, config_id, tuple(items), len(rows), tuple(missing))
