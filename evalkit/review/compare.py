"""Run over run: the same configs in an earlier run, their metric deltas and flipped questions (pure).

Computed once per pair of folders and written as ``compare/<earlier>.json`` (:mod:`evalkit.run.comparison`),
which the report and the terminal render.

Configs are matched by their grid coordinates (chunking, retriever, reranker when both runs record it,
top_k, threshold), not by the config_id string, so a run made before the id format changed still matches.
For the focus configs (recommended, baseline) each delta gets a paired 95% interval over the questions
both runs scored (evalkit.scoring.compare.paired, the comparison the report and the gate use). When the
runs share no config or no question, :attr:`RunDelta.note` says so plainly.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from evalkit.run.clusters import read_clusters
from evalkit.run.comparison import Flip, RunDelta
from evalkit.run.folder import Run
from evalkit.scoring.clusters import cluster_map
from evalkit.scoring.compare import Resampling, paired
from evalkit.scoring.registry import MEASURES, REPORTED

COMPARED = tuple(m for m in REPORTED if MEASURES[m].subset != "all")
"""The registry's reported measures that have per-question values on answerable or unanswerable questions."""
KEY_COLUMNS = ("chunking", "retriever", "reranker", "top_k", "threshold")
# summary metric -> (per-question column, which questions it is a mean over)
PER_QUESTION = {m: (MEASURES[m].column, MEASURES[m].subset == "answerable") for m in COMPARED}


def _keys(summary: pd.DataFrame, columns: Sequence[str]) -> pd.Series:
    """config_id -> grid coordinates (thresholds rounded, never compared with ``==`` as floats)."""
    parts = [summary[c].round(9).astype(str) if c == "threshold" else summary[c].astype(str) for c in columns]
    key = parts[0].str.cat(parts[1:], sep="|") if len(parts) > 1 else parts[0]
    return pd.Series(key.to_numpy(), index=summary["config_id"].astype(str).to_numpy())


def match_configs(now: pd.DataFrame, earlier: pd.DataFrame) -> dict[str, str]:
    """This run's config_id -> the earlier run's config_id at the same grid point."""
    columns = [c for c in KEY_COLUMNS if c in now.columns and c in earlier.columns]
    before = {key: cid for cid, key in _keys(earlier, columns).items()}
    return {cid: before[key] for cid, key in _keys(now, columns).items() if key in before}


def compare_runs(now: Run, earlier: Run, focus: Sequence[str]) -> RunDelta:
    """Deltas of summary means for configs present in both runs; hit flips for the ``focus`` configs."""
    pairs = match_configs(now.summary, earlier.summary)
    metrics = [m for m in COMPARED if m in now.summary.columns and m in earlier.summary.columns]
    left = earlier.summary.set_index("config_id")[metrics]
    right = now.summary.set_index("config_id")[metrics]
    common = list(pairs)
    frames = [
        pd.DataFrame(
            {
                "config_id": common,
                "metric": metric,
                "earlier": left.loc[[pairs[c] for c in common], metric].to_numpy(dtype=float),
                "now": right.loc[common, metric].to_numpy(dtype=float),
            }
        )
        for metric in metrics
    ]
    deltas = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["config_id", "metric"])
    deltas["delta"] = deltas["now"] - deltas["earlier"]
    deltas = _with_intervals(deltas, now, earlier, pairs, focus)
    flips: list[Flip] = []
    for config_id in dict.fromkeys(focus):
        if config_id not in pairs:
            continue
        before = _hits(earlier, pairs[config_id])
        after = _hits(now, config_id)
        joined = pd.concat([before.rename("before"), after.rename("after")], axis=1, join="inner").dropna()
        changed = joined[joined["before"] != joined["after"]]
        flips.extend(Flip(config_id, str(q), float(r.before), float(r.after)) for q, r in changed.iterrows())
    return RunDelta(
        earlier_id=earlier.run_id,
        same_labelset=now.labelset_fingerprint == earlier.labelset_fingerprint,
        n_matching=len(common),
        only_now=len(right.index) - len(common),
        only_earlier=len(left.index) - len(set(pairs.values())),
        deltas=deltas,
        flips=tuple(flips),
        shared_questions=len(_question_ids(now) & _question_ids(earlier)),
    )


def _question_ids(run: Run) -> set[str]:
    return set(run.results["question_id"].astype(str)) if "question_id" in run.results.columns else set()


def _with_intervals(
    deltas: pd.DataFrame, now: Run, earlier: Run, pairs: dict[str, str], focus: Sequence[str]
) -> pd.DataFrame:
    """delta_low, delta_high, n_paired for the focus configs: paired over the questions both runs scored."""
    out = deltas.assign(delta_paired=np.nan, delta_low=np.nan, delta_high=np.nan, n_paired=0)
    # The clusters the sweep resampled (clusters.parquet), so the run-over-run interval is the gate's.
    settings = Resampling(clusters=cluster_map(read_clusters(now.root, earlier.root)))
    for config_id in dict.fromkeys(focus):
        if config_id not in pairs:
            continue
        for metric, (column, answerable) in PER_QUESTION.items():
            rows = (out["config_id"] == config_id) & (out["metric"] == metric)
            if not rows.any():
                continue
            before = _values(earlier, pairs[config_id], column, answerable)
            after = _values(now, config_id, column, answerable)
            joined = pd.concat([before.rename("before"), after.rename("after")], axis=1, join="inner")
            if joined.empty:
                continue
            before_values, after_values = joined["before"].to_numpy(float), joined["after"].to_numpy(float)
            result = paired(before_values, after_values, settings, metric, joined.index.to_numpy())
            if result is not None:
                columns = ["delta_paired", "delta_low", "delta_high", "n_paired"]
                out.loc[rows, columns] = [result.delta, result.delta_low, result.delta_high, result.n]
    return out


def _values(run: Run, config_id: str, column: str, answerable: bool) -> pd.Series:
    results = run.results
    if column not in results.columns:
        return pd.Series(dtype=float)
    rows = results[(results["config_id"] == config_id) & (results["answerable"].astype(bool) == answerable)]
    values = rows[column].astype(float).to_numpy()
    return pd.Series(values, index=rows["question_id"].astype(str).to_numpy())


def _hits(run: Run, config_id: str) -> pd.Series:
    rows = run.results[(run.results["config_id"] == config_id) & run.results["answerable"].astype(bool)]
    return pd.Series(rows["hit"].to_numpy(dtype=float), index=rows["question_id"].to_numpy())
