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

The one reader of a finished run: :func:`load_run` reads what every sweep writes
(manifest, results, summary, per-chunking info) and whatever optional files later
stages add (see :mod:`evalkit.run.files`) into a frozen :class:`Run`; the report,
the gate and ``evalkit.load_run`` all read through it. Candidate pools are large,
so they are read per chunking and per question on demand by :func:`load_pool`.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from evalkit.records import EXTERNAL_CHUNKING
from evalkit.run import files
from evalkit.run.schemas import SchemaVersionError, check, stamp
from evalkit.run.units import atomic_write


def write_json(path: Path, payload: Mapping[str, Any]) -> None:
    """Write ``payload`` as JSON, atomically; a file with a schema (``run/schemas/``) gets its version stamped."""
    text = json.dumps(stamp(path.name, payload), indent=2, ensure_ascii=False, sort_keys=True, default=str)
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
        try:  # a truncated copy (a full disk, a bad restore) is linked again from the unit store
            pq.read_metadata(self.rows_path(key)), pq.read_metadata(self.pool_path(key))
            unit_ids = read_json(marker).get("unit_ids") or {}
        except (OSError, ValueError):
            return False
        return unit_ids.get("score") == score_unit_id

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


class RunError(ValueError):
    """A run folder that cannot be read; the message is one line naming the file and the problem."""


@dataclass(frozen=True)
class BaselinePoint:
    """The production config's grid point, as the manifest's ``baseline:`` block names it."""

    chunk_size: int
    chunk_overlap: int
    top_k: int
    threshold: float | None
    """None: the lowest threshold of the grid."""

    def describe(self) -> str:
        threshold = "lowest" if self.threshold is None else f"{self.threshold:g}"
        return f"chunk_size {self.chunk_size}, overlap {self.chunk_overlap}, top_k {self.top_k}, threshold {threshold}"


@dataclass(frozen=True)
class Run:
    """One results folder, as the report and the gate see it."""

    root: Path
    """The folder ``reports/<run_id>``."""
    manifest: Mapping[str, Any]
    """manifest.json as written by the sweep."""
    results: pd.DataFrame
    """One row per (config, question)."""
    summary: pd.DataFrame
    """One row per config."""
    chunkings: pd.DataFrame
    """One row per chunking: n_chunks, stored_chars, indexed_chars, gold_cut_share, texts_embedded."""
    calibration: pd.DataFrame | None = None
    """calibration.parquet: threshold calibration per chunking and question class, when present."""
    position_rows: pd.DataFrame | None = None
    """position/rows.parquet (answers with arm, placement, repeat, gold_bucket, correct), when present."""
    position_summary: pd.DataFrame | None = None
    """position/summary.parquet (accuracy with CIs per arm, placement and bucket), when present."""
    costs: Mapping[str, Any] | None = None
    """costs.json: stuffing the corpus vs retrieving, when present."""
    chunk_health: Mapping[str, Any] | None = None
    """chunk_health.json, when present."""
    gate: Mapping[str, Any] | None = None
    """gate.json, when a gate wrote its verdict into this folder."""
    recommendation: Mapping[str, Any] | None = None
    """recommendation.json: the sweep's decision, when the sweep wrote one (runs before it did not)."""
    answer_rows: pd.DataFrame | None = None
    """answer_check/rows.parquet: the answer check's answers per (config or arm, question), when it ran."""
    answer_check: Mapping[str, Any] | None = None
    """answer_check/check.json: its effects, latency model and routing rule, when it ran."""

    @property
    def run_id(self) -> str:
        return str(self.manifest.get("run_id") or self.root.name)

    @property
    def labelset_fingerprint(self) -> str:
        return str((self.manifest.get("labelset") or {}).get("fingerprint") or "")

    @property
    def labelset_name(self) -> str:
        return str((self.manifest.get("labelset") or {}).get("name") or "")

    @property
    def has_cost(self) -> bool:
        """Whether configs carry $/query (in the summary, or per question in the results)."""
        return files.COST_PER_QUERY in self.summary.columns or files.COST_PER_QUERY in self.results.columns

    @property
    def has_position(self) -> bool:
        return self.position_rows is not None or self.position_summary is not None

    @property
    def config_ids(self) -> tuple[str, ...]:
        return tuple(self.summary["config_id"])

    @property
    def external(self) -> bool:
        """Whether production's own retriever (``retriever=external`` or an installed one) returned every config's
        hits: its chunking is its own, so production is found by top_k and threshold alone."""
        return production_chunked(self.manifest)

    def baseline_point(self) -> BaselinePoint | None:
        """The manifest's production grid point, or None when the manifest has none."""
        block = (self.manifest.get("config") or {}).get("baseline") or {}
        try:
            threshold = block.get("threshold")
            return BaselinePoint(
                chunk_size=int(block["chunk_size"]),
                chunk_overlap=int(block["chunk_overlap"]),
                top_k=int(block["top_k"]),
                threshold=None if threshold is None else float(threshold),
            )
        except (KeyError, TypeError, ValueError):
            return None

    def config_row(self, config_id: str) -> Mapping[str, Any]:
        """The summary row of one config."""
        match = self.summary[self.summary["config_id"] == config_id]
        if match.empty:
            raise RunError(f"{self.root}: no config {config_id!r} in {files.SUMMARY}")
        return match.iloc[0].to_dict()


def production_chunked(manifest: Mapping[str, Any]) -> bool:
    """Whether a run's one chunking is production's own (:data:`EXTERNAL_CHUNKING`): its retriever's backend was
    external (``retriever=external`` or an installed retriever), as the plan asked it, recorded in ``grid``."""
    grid = manifest.get("grid") or {}
    return isinstance(grid, Mapping) and grid.get("chunkings") == [EXTERNAL_CHUNKING]


def _read_object(path: Path) -> dict[str, Any]:
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise RunError(f"{path}: cannot read ({exc.__class__.__name__}: {exc})".splitlines()[0]) from exc
    if not isinstance(payload, dict):
        raise RunError(f"{path}: expected a JSON object")
    return payload


def _read_table(path: Path) -> pd.DataFrame:
    try:
        return pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several types for a broken file
        raise RunError(f"{path}: cannot read ({exc.__class__.__name__})") from exc


def _optional_json(path: Path) -> dict[str, Any] | None:
    """The file's object, None when absent; a versioned file of another schema version is refused here, once."""
    if not path.is_file():
        return None
    payload = _read_object(path)
    try:
        check(path.name, payload, str(path))
    except SchemaVersionError as exc:
        raise RunError(str(exc)) from None
    return payload


def _optional_table(path: Path) -> pd.DataFrame | None:
    return _read_table(path) if path.is_file() else None


def mark_complete(run_dir: Path) -> None:
    """The manifest's state set to complete: every file of the run is written (see ``files.RUNNING``)."""
    manifest = read_json(run_dir / files.MANIFEST)
    write_json(run_dir / files.MANIFEST, {**manifest, "state": files.COMPLETE})


def load_run(run_dir: str | Path) -> Run:
    """Read a finished run folder; raise :class:`RunError` (one line) when it is not one."""
    root = Path(run_dir)
    if not root.is_dir():
        raise RunError(f"{root}: not a folder (expected reports/<run_id>)")
    manifest = _read_object(root / files.MANIFEST) if (root / files.MANIFEST).is_file() else {}
    state = manifest.get("state", files.COMPLETE)
    if state != files.COMPLETE:
        raise RunError(
            f"{root}: the run is incomplete (manifest state {state!r}: it stopped before writing every file); "
            "run the same sweep again to finish it"
        )
    for name in (files.MANIFEST, files.RESULTS, files.SUMMARY):
        if not (root / name).is_file():
            raise RunError(f"{root}: missing {name} (is the sweep finished? re-run it to resume)")
    results = _read_table(root / files.RESULTS)
    summary = _read_table(root / files.SUMMARY)
    missing = {"config_id", "question_id", "answerable", "recall"} - set(results.columns)
    if missing:
        raise RunError(f"{root / files.RESULTS}: missing columns {', '.join(sorted(missing))}")
    infos = [_read_object(p) for p in sorted((root / files.CHUNKINGS_DIR).glob("*.json"))]
    chunkings = pd.DataFrame(infos) if infos else pd.DataFrame({"chunking": summary["chunking"].unique()})
    return Run(
        root=root,
        manifest=manifest,
        results=results,
        summary=summary,
        chunkings=chunkings,
        calibration=_optional_table(root / files.CALIBRATION_TABLE),
        position_rows=_optional_table(root / files.POSITION_ROWS),
        position_summary=_optional_table(root / files.POSITION_SUMMARY),
        costs=_optional_json(root / files.COSTS_JSON),
        chunk_health=_optional_json(root / files.CHUNK_HEALTH_JSON),
        gate=_optional_json(root / files.GATE_JSON),
        recommendation=_optional_json(root / files.RECOMMENDATION_JSON),
        answer_rows=_optional_table(root / files.ANSWER_CHECK_ROWS),
        answer_check=_optional_json(root / files.ANSWER_CHECK_JSON),
    )


def load_pool(run_dir: Path, chunking: str, question_ids: Sequence[str]) -> pd.DataFrame:
    """The candidate pool of one chunking for the given questions (empty when the file is absent)."""
    path = RunFolder(run_dir).pool_path(chunking)
    empty = pd.DataFrame(columns=["question_id", "rank", "unit_id", "doc_id", "start", "end", "score", "relevant"])
    if not path.is_file() or not question_ids:
        return empty
    try:
        if pq.read_metadata(path).num_rows == 0:  # a retriever that found nothing: its id columns have no type
            return empty
        return pd.read_parquet(path, filters=[("question_id", "in", list(question_ids))])
    except Exception as exc:  # pyarrow raises several types for a truncated or foreign file
        why = f"cannot read ({exc.__class__.__name__}); run the same sweep again to rewrite it"
        raise RunError(f"{path}: {why}") from exc


def returned_chunks(pool: pd.DataFrame, top_k: int, threshold: float) -> pd.DataFrame:
    """Pool entries a config returned: score at least the threshold, in pool order, first ``top_k``.

    The same rule as the sweep's slicing (evalkit/slicing.py ``returned_mask``), applied to the
    long-form pool table; the tests check it against the rows' ``n_returned``.
    """
    kept = pool[pool["score"].fillna(-math.inf) >= threshold].sort_values(["question_id", "rank"])
    position = kept.groupby("question_id", sort=False).cumcount() + 1
    return kept[position <= top_k].assign(returned_rank=position[position <= top_k])
