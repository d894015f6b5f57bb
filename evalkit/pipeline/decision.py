"""The decision stage: after the sweep's results are written, the recommendation and its headline.

Runs the objective (:func:`evalkit.scoring.decide.decide`) on the results in
memory with the gate's margins file, writes ``recommendation.json`` (the report
renders it) and prints the headline a reviewer reads first.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evalkit.pipeline.margins import load_gate_config
from evalkit.pipeline.plan import SweepPlan
from evalkit.run import files
from evalkit.run.folder import write_json, write_table
from evalkit.scoring.at_budget import production_budget, recall_at_budget
from evalkit.scoring.decide import NO_PRODUCTION, RECOMMEND, decide, find_production
from evalkit.scoring.registry import MEASURES


def write_recommendation(plan: SweepPlan, results: pd.DataFrame, summary: pd.DataFrame, run_dir: Path) -> dict:
    gate = load_gate_config(plan.objective.margins)
    base = plan.baseline
    production = None
    if base.chunk_size is not None and base.top_k is not None:
        production = find_production(summary, base.chunk_size, base.chunk_overlap or 0, base.top_k, base.threshold)
    record = decide(results, summary, production, plan.objective, gate)
    if production is not None:
        record["equal_budget"] = equal_budget(results, production, summary, run_dir)
    write_json(run_dir / files.RECOMMENDATION_JSON, record)
    return record


def equal_budget(results: pd.DataFrame, production: str, summary: pd.DataFrame, run_dir: Path) -> dict[str, Any]:
    """Every chunking at production's prompt-token budget (recall_at_budget.parquet), and the best of them."""
    budget = production_budget(results, production)
    table = recall_at_budget(results, budget)
    write_table(run_dir / files.RECALL_AT_BUDGET, table, csv=True)
    row = summary.set_index("config_id").loc[production]
    own = table[(table["chunking"] == row["chunking"]) & np.isclose(table["threshold"], row["threshold"])]
    best = table.sort_values(["recall_at_budget", "chunking"], ascending=[False, True]).iloc[0]
    return {
        "budget_tokens": budget,
        "production": {"chunking": str(row["chunking"]), "recall_at_budget": float(own["recall_at_budget"].iloc[0])},
        "best": {k: (v.item() if hasattr(v, "item") else v) for k, v in best.to_dict().items()},
    }


def headline(record: dict[str, Any], run_dir: Path) -> str:
    """Three lines: the decision, the gain with its interval and the $/query change, the gate verdict."""
    label = MEASURES[record["objective"]["primary"]].label
    if record["decision"] == NO_PRODUCTION:
        return "evalkit: no recommendation: the production config (baseline:) is not in the grid"
    production = record["production"]
    if record["decision"] != RECOMMEND:
        misses = "; ".join(f"{m['config_id']} ({m['detail']})" for m in record["near_misses"][:2]) or "none"
        within = "nothing beats it within the objective"
        return f"evalkit: keep production {production['config_id']}: {within}; nearest: {misses}"
    pick = record["recommended"]
    gain, held = pick["gain_in_sample"], pick["gain_out_of_sample"]
    cost_now, cost_pick = production["values"].get("cost_per_query"), pick["values"].get("cost_per_query")
    cost = "" if not cost_now or cost_pick is None else f", $/query {100 * (cost_pick / cost_now - 1):+.1f}%"
    k = pick["top_k"]
    same_k = "" if k["same_k"] else f" (k {k['recommended']} vs production's {k['production']}: different k)"
    return (
        f"evalkit: recommend {pick['config_id']} over production {production['config_id']}{same_k}\n"
        f"evalkit:   {label} {100 * gain['delta']:+.1f} pts [{100 * gain['low']:+.1f}, {100 * gain['high']:+.1f}] "
        f"in sample, {100 * held['delta']:+.1f} pts out of sample{cost}\n"
        f"evalkit:   gate: {record['gate']['verdict'].upper()} (python -m evalkit.gate --run {run_dir} "
        f"--candidate-config '{pick['config_id']}')"
    )


def announce(record: dict[str, Any], run_dir: Path) -> None:
    print(headline(record, run_dir), file=sys.stderr)
