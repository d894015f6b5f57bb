"""Are two runs' numbers identical? Per-question results and summaries of two run folders, compared exactly.

Used to show a refactor changed no number: run the same sweeps with two checkouts
(``run_id=`` fixed, same cache), then::

    python benchmarks/compare_runs.py BEFORE_REPORTS_DIR AFTER_REPORTS_DIR [RUN_ID ...]

Rows are matched on (config_id, question_id); every column both runs have is
compared exactly (floats bit for bit, NaN equal to NaN). Columns only one side has
are listed, not compared. Exit 0 when everything shared is identical, else 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

KEYS = {"results.parquet": ["config_id", "question_id"], "summary.parquet": ["config_id"]}


def compare_table(before: pd.DataFrame, after: pd.DataFrame, keys: list[str]) -> tuple[list[str], list[str]]:
    """(problems, notes): differing cells per column, and columns that only one side has."""
    notes = [f"only before: {c}" for c in before.columns if c not in after.columns]
    notes += [f"only after: {c}" for c in after.columns if c not in before.columns]
    shared = [c for c in before.columns if c in after.columns]
    left = before[shared].sort_values(keys, kind="stable").reset_index(drop=True)
    right = after[shared].sort_values(keys, kind="stable").reset_index(drop=True)
    if len(left) != len(right):
        return [f"{len(left)} rows before, {len(right)} after"], notes
    problems = []
    for column in shared:
        a, b = left[column].to_numpy(), right[column].to_numpy()
        if a.dtype.kind == "f" and b.dtype.kind == "f":
            same = (a == b) | (np.isnan(a) & np.isnan(b))
        else:
            same = np.array([x == y or (pd.isna(x) and pd.isna(y)) for x, y in zip(a, b)], dtype=bool)
        if not same.all():
            problems.append(f"{column}: {int((~same).sum())} of {len(same)} values differ")
    return problems, notes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("run_ids", nargs="*", help="default: every run folder both sides have")
    args = parser.parse_args()
    run_ids = args.run_ids or sorted(
        p.name for p in args.before.iterdir() if (p / "results.parquet").exists() and (args.after / p.name).exists()
    )
    failed = False
    for run_id in run_ids:
        for name, keys in KEYS.items():
            before = pd.read_parquet(args.before / run_id / name)
            after = pd.read_parquet(args.after / run_id / name)
            problems, notes = compare_table(before, after, keys)
            verdict = "IDENTICAL" if not problems else "DIFFERENT"
            extra = f" ({'; '.join(notes)})" if notes else ""
            print(f"{run_id:14} {name:16} {len(before):8d} rows x {before.shape[1]:3d} columns: {verdict}{extra}")
            for problem in problems:
                print(f"    {problem}")
            failed |= bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
