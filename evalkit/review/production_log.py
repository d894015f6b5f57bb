"""Production's logged top-k beside the sweep's production replica and its best config (pure given the files read).

On the labelled questions found in the log, per measure: each one's mean with its interval, the logs minus the
replica and the best config minus the logs, paired by question with the resampling of every other comparison of
the review (whole source documents when the sweep clustered them: ``clusters.parquet``). Where the logs minus
the replica excludes 0, the replica is not production: that measure is on the "replica gap" line.
Leakage is the share of questions shown at least one unit their role may not see.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from evalkit.review import analysis
from evalkit.run.clusters import read_clusters
from evalkit.run.folder import Run
from evalkit.run.logged import read_logged
from evalkit.run.review import Interval, LoggedMeasure, LoggedScores, Paired, Statistics
from evalkit.scoring import compare
from evalkit.scoring.clusters import cluster_map
from evalkit.scoring.registry import MEASURES
from evalkit.scoring.values import masked

__all__ = ["LEAKAGE", "LOGGED_MEASURES", "logged_scores"]

LEAKAGE = "leakage"
LOGGED_MEASURES = ("recall", "hit", "zero_hit_answerable", "context_precision", LEAKAGE)
"""What production's logged retrievals are scored on, in the report's order."""


def _values(rows: pd.DataFrame, name: str) -> pd.Series:
    """Per question_id values of a measure (NaN where undefined)."""
    leaked = (rows["leaked_units"].astype(float) > 0).astype(float)
    values = leaked if name == LEAKAGE else masked(rows, MEASURES[name])
    return pd.Series(values.to_numpy(), index=rows["question_id"].astype(str).to_numpy())


def _of(run: Run, config_id: str | None, ids: pd.Index, name: str) -> np.ndarray | None:
    if config_id is None:
        return None
    rows = run.results[run.results["config_id"] == config_id]
    return _values(rows, name).reindex(ids).to_numpy(dtype=float)


@dataclass(frozen=True)
class _Side:
    """One measure's per-question values for the logs, the replica and the best config (same question order)."""

    name: str
    ids: pd.Index
    logged: np.ndarray
    replica: np.ndarray | None
    best: np.ndarray | None


def _measure(side: _Side, statistics: Statistics, resampling: compare.Resampling) -> LoggedMeasure:
    leakage = side.name == LEAKAGE
    label = "leakage (questions)" if leakage else MEASURES[side.name].label
    higher = False if leakage else MEASURES[side.name].higher_is_better

    def paired(base: np.ndarray | None, cand: np.ndarray | None) -> Paired | None:
        if base is None or cand is None:
            return None
        return analysis.as_paired(compare.paired(base, cand, resampling, side.name, side.ids.to_numpy()))

    def interval(values: np.ndarray | None) -> Interval | None:
        return None if values is None else analysis.interval(values, statistics)

    return LoggedMeasure(
        name=side.name,
        label=label,
        higher_is_better=higher,
        logged=interval(side.logged),
        replica=interval(side.replica),
        best=interval(side.best),
        logged_vs_replica=paired(side.replica, side.logged),
        best_vs_logged=paired(side.logged, side.best),
    )


def logged_scores(run: Run, replica_id: str | None, best_id: str | None, statistics: Statistics) -> LoggedScores | None:
    """The review's ``production_log`` section; None when the run was swept without ``production_log=``."""
    found = read_logged(run.root)
    if found is None:
        return None
    rows, info = found
    resampling = compare.Resampling(
        statistics.level, statistics.n_resamples, statistics.seed, clusters=cluster_map(read_clusters(run.root))
    )
    measures: list[LoggedMeasure] = []
    if not rows.empty:
        ids = pd.Index(rows["question_id"].astype(str))
        best = best_id if best_id != replica_id else None  # production is the best: no third column
        for name in LOGGED_MEASURES:
            logged = _values(rows, name).reindex(ids).to_numpy(dtype=float)
            side = _Side(name, ids, logged, _of(run, replica_id, ids, name), _of(run, best, ids, name))
            measures.append(_measure(side, statistics, resampling))
    gap = tuple(m.name for m in measures if m.logged_vs_replica is not None and not m.logged_vs_replica.within_noise)
    return LoggedScores(
        log=str(info["log"]),
        format=str(info["format"]),
        entries=int(info["entries"]),
        skipped=int(info["skipped"]),
        questions=int(info["questions"]),
        matched=int(info["matched"]),
        matched_answerable=int(info["matched_answerable"]),
        top_k=int(info["top_k"]),
        not_in_set=int(info["not_in_set"]),
        unanchored=int(info["unanchored"]),
        replica_id=replica_id,
        best_id=best_id,
        measures=tuple(measures),
        gap=gap,
    )
