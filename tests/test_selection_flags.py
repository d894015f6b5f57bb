"""The pick's out-of-sample gain as a distribution over splits (median, 5-95%), and the flags on its in-sample
gain: above that range (selection optimism), or below the smallest effect the set can detect."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from evalkit.pipeline.margins import load_gate_config
from evalkit.scoring.decide import RECOMMEND, decide
from evalkit.scoring.objective import ObjectiveSettings
from evalkit.scoring.out_of_sample import selection_flags

HELD = {"p05": 0.01, "p95": 0.03, "median": 0.02, "splits": 20}


def test_a_gain_inside_the_held_out_range_and_above_the_mde_raises_no_flag() -> None:
    assert selection_flags("c", 0.025, HELD, 0.015, "recall@k") == []


def test_a_gain_above_the_held_out_range_is_flagged_with_the_median_to_expect() -> None:
    (flag,) = selection_flags("c", 0.05, HELD, 0.015, "recall@k")
    assert flag["kind"] == "in-sample gain outside the held-out range" and flag["config_id"] == "c"
    assert "+5.0 pts" in flag["message"] and "[+1.0, +3.0]" in flag["message"] and "+2.0 pts" in flag["message"]


def test_a_gain_below_the_mde_is_flagged_and_an_undetectable_size_says_so() -> None:
    (flag,) = selection_flags("c", 0.02, HELD, 0.04, "recall@k")
    assert flag["kind"] == "gain below the detectable effect" and "4.0 pts" in flag["message"]
    (flag,) = selection_flags("c", 0.02, HELD, math.inf, "recall@k")
    assert "not detectable at this size" in flag["message"]


def _sweep(n: int, n_candidates: int, gain: float, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Production 'p' (recall 0.6) and candidates that each find ``gain`` more of its misses, plus noise."""
    rng = np.random.default_rng(seed)
    base = (rng.random(n) < 0.6).astype(float)
    frames = []
    columns = {"recall": base}
    lose = 0.05  # of production's hits (0.6): -3 points, so each finds (gain + 0.03) / 0.4 of its misses
    for i in range(n_candidates):
        found = np.where((base == 0) & (rng.random(n) < (gain + 0.6 * lose) / 0.4), 1.0, base)
        columns[f"c{i:02d}"] = np.where((base == 1) & (rng.random(n) < lose), 0.0, found)
    for config_id, recall in [("p", columns["recall"])] + [(k, v) for k, v in columns.items() if k != "recall"]:
        frames.append(pd.DataFrame({
            "config_id": config_id, "question_id": [f"q{j}" for j in range(n)], "answerable": True,
            "recall": recall, "context_precision": recall, "zero_hit": 0.0, "returned_tokens": 100.0,
            "question_tokens": 10.0, "top_k": 5, "threshold": 0.0, "chunking": "c", "cost_per_query_usd": 0.01,
        }))  # fmt: skip
    results = pd.concat(frames, ignore_index=True)
    summary = results.groupby("config_id", as_index=False).agg(
        recall=("recall", "mean"), top_k=("top_k", "first"), cost_per_query_usd=("cost_per_query_usd", "mean")
    )
    return results, summary


def test_the_best_of_many_equal_candidates_is_flagged_as_optimistic() -> None:
    """Thirty candidates with the same true gain: the one that looks best in sample owes part of its lead to
    the questions that chose it, and the held-out splits (median, 5-95%) say how much."""
    results, summary = _sweep(n=600, n_candidates=30, gain=0.02, seed=3)
    record = decide(results, summary, "p", ObjectiveSettings(), load_gate_config("default"))
    assert record["decision"] == RECOMMEND
    held = record["recommended"]["gain_out_of_sample"]
    assert held["p05"] <= held["median"] <= held["p95"] and held["p05"] < held["p95"]
    in_sample = record["recommended"]["gain_in_sample"]["delta"]
    kinds = {f["kind"] for f in record["flags"]}
    assert (in_sample > held["p95"]) == ("in-sample gain outside the held-out range" in kinds), (in_sample, held)
    assert in_sample > held["p95"], (in_sample, held)


def test_a_single_clear_winner_is_not_flagged() -> None:
    results, summary = _sweep(n=600, n_candidates=1, gain=0.15, seed=1)
    record = decide(results, summary, "p", ObjectiveSettings(), load_gate_config("default"))
    assert record["decision"] == RECOMMEND
    held = record["recommended"]["gain_out_of_sample"]
    assert held["p05"] <= record["recommended"]["gain_in_sample"]["delta"] <= held["p95"]
    assert held["mde"] is not None and record["recommended"]["gain_in_sample"]["delta"] > held["mde"]
    assert record["flags"] == []
