"""Run over run: the same configs in an earlier run, their metric deltas and flipped questions (pure).

Configs are matched by their grid coordinates (chunking, retriever, reranker when both runs record it,
top_k, threshold), not by the config_id string, so a run made before the id format changed still matches.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from evalkit.report.data import Run

COMPARED = ("recall", "hit", "context_precision", "ndcg", "mrr", "zero_hit_answerable", "zero_hit_unanswerable")
KEY_COLUMNS = ("chunking", "retriever", "reranker", "top_k", "threshold")


@dataclass(frozen=True)
class Flip:
    """A question whose hit@k changed between the runs for one config."""

    config_id: str
    question_id: str
    before: float
    after: float


@dataclass(frozen=True)
class RunDelta:
    """This run against an earlier one."""

    earlier_id: str
    same_labelset: bool
    n_matching: int
    only_now: int
    only_earlier: int
    deltas: pd.DataFrame
    """config_id (this run's), metric, earlier, now, delta for every matching config and metric."""
    flips: tuple[Flip, ...]


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
    )


def _hits(run: Run, config_id: str) -> pd.Series:
    rows = run.results[(run.results["config_id"] == config_id) & run.results["answerable"].astype(bool)]
    return pd.Series(rows["hit"].to_numpy(dtype=float), index=rows["question_id"].to_numpy())
