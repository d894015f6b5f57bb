"""Answers needed for the same interval: uniform paired vs identical contexts skipped vs stratified vs
prediction-powered, planned from one real pilot.

Reads a run folder whose answer check ran ``answer_check=powered`` (``design: stratified``): its
``design.parquet`` (every question's stratum per candidate, from retrieval) and ``rows.parquet`` (the pilot's
real answers). Per candidate, each stratum's planning variance is the upper 80% bound of its measured
discordance (:func:`evalkit.scoring.answer_design.stratum_variances`, as the check plans), and the variance
target is the one that shows a 5-point margin with 80% power at the check's level and the sample's design
effect. The answers one config needs for that variance:

- **uniform paired** (today's design): every question of the set equally likely: ``n = S2 / V``, with
  ``S2 = sum_s N_s / N * var_s`` (identical contexts contribute 0 but are asked);
- **identical contexts skipped**: the same, drawn only among the askable: ``n * N_askable / N``;
- **stratified (Neyman)**: ``(sum_s N_s sd_s)**2 / (N**2 V)``;
- **prediction-powered**: Neyman with each stratum's variance times the pilot's measured residual share
  after the cross-fitted predictor (``var(d - lam f) / var(d)`` on the pilot's answered pairs, one pooled
  ratio: the pilot is too small for one per stratum).

Times are the answers times the pilot's own measured seconds per generated answer (``answer_s``).

    python benchmarks/answer_design.py RUN_DIR
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import norm

from evalkit.answers.check.stratified import pair_values
from evalkit.scoring.answer_check import sample_design_effect
from evalkit.scoring.answer_design import IDENTICAL, STRATA, design_pair, predicted_difference, stratum_variances


def answers(variance_times_n: float, target: float, set_effect: float, n_set: int) -> float:
    """Answers for the mean's variance to reach ``target`` after the sample's design effect (which grows with it)."""
    n = variance_times_n / target
    for _ in range(20):
        n = variance_times_n * sample_design_effect(set_effect, math.ceil(n), n_set) / target
    return n


def with_results(design: pd.DataFrame, run: Path) -> pd.DataFrame:
    """The design's retrieval columns from the run's own results.parquet where it holds them (a design written
    before the check read them from the results)."""
    columns = [
        c for c in ("hit", "recall", "mrr") if c in pd.read_parquet(run / "results.parquet", columns=None).columns
    ]
    if not columns:
        return design
    results = pd.read_parquet(run / "results.parquet", columns=["config_id", "question_id", *columns])
    merged = design.drop(columns=columns).merge(results, on=["config_id", "question_id"], how="left")
    return merged.fillna({c: 0.0 for c in columns})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--margin", type=float, default=0.05)
    parser.add_argument("--power", type=float, default=0.8)
    args = parser.parse_args()
    check = json.loads((args.run / "answer_check" / "check.json").read_text(encoding="utf-8"))
    design = with_results(pd.read_parquet(args.run / "answer_check" / "design.parquet"), args.run)
    rows = pd.read_parquet(args.run / "answer_check" / "rows.parquet")
    level, production = float(check["level"]), str(check["production"])
    sent = rows[rows["sent"] & ~rows["cached"].astype(bool)]
    seconds = pd.to_numeric(sent.get("answer_s", sent["first_token_s"]), errors="coerce")
    pace = float(seconds.sum() / max(1, int((seconds > 0).sum())))
    base = design[design["config_id"] == production]
    ids = base["question_id"].tolist()
    measured = base["draw"].to_numpy(float) < base["inclusion"].to_numpy(float)
    z = float(norm.isf((1 - level) / 2)) + float(norm.isf(1 - args.power))
    set_effect = float((check.get("sizing") or {}).get("set_design_effect") or 1.0)
    print(f"pilot: {int(measured.sum())} questions answered under every config, {pace:.1f} s per generated answer")
    print(
        "| candidate | N | identical | uniform paired | identical skipped | stratified | prediction-powered | factor |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for candidate in [c for c in design["config_id"].unique() if c != production]:
        pair = design_pair(design, production, candidate)
        p, c = pair_values(rows, "correct", ids, production), pair_values(rows, "correct", ids, candidate)
        both = measured & np.isfinite(p) & np.isfinite(c)
        d = np.where(both, c - p, 0.0)
        variances = stratum_variances(pair.strata, d, both)
        n_set, sizes = len(ids), {s: int(np.sum(pair.strata == s)) for s in STRATA}
        askable = n_set - sizes[IDENTICAL]
        prediction = predicted_difference(pair, np.where(both, p, np.nan), np.where(both, c, np.nan), both)
        residual = d[both & (pair.strata != IDENTICAL)] - prediction[both & (pair.strata != IDENTICAL)]
        raw = d[both & (pair.strata != IDENTICAL)]
        share = float(np.var(residual) / np.var(raw)) if raw.size > 1 and np.var(raw) > 0 else 1.0
        share = min(1.0, share)

        s2 = sum(sizes[s] / n_set * variances[s] for s in STRATA)
        target = (args.margin / z) ** 2
        uniform = answers(s2, target, set_effect, n_set)
        skipped = uniform * askable / n_set
        spread = sum(sizes[s] * math.sqrt(variances[s]) for s in STRATA) ** 2 / n_set**2
        neyman = answers(spread, target, set_effect, n_set)
        powered = answers(share * spread, target, set_effect, n_set)
        print(f"| {candidate} | {n_set} | {sizes[IDENTICAL]} | {uniform:.0f} ({uniform * pace / 3600:.1f} h) | "
              f"{skipped:.0f} ({skipped * pace / 3600:.1f} h) | {neyman:.0f} ({neyman * pace / 3600:.1f} h) | "
              f"{powered:.0f} ({powered * pace / 3600:.1f} h) | {uniform / max(powered, 1):.1f}x |")  # fmt: skip
        measured_d = {s: f"{int(np.sum(d[both & (pair.strata == s)] != 0))}/{int(np.sum(both & (pair.strata == s)))}"
                      for s in STRATA}  # fmt: skip
        print(f"  strata sizes {sizes}; pilot discordant/answered {measured_d}; residual share {share:.2f}")


if __name__ == "__main__":
    main()
