"""Results in blocks: how the rows are blocked when written and aggregated never changes a file of the run.

The sweep's rows are written per grid point and read back in blocks of whole configs
(``executor.results_block_rows``); a block size that cuts every chunking's rows at odd places must
give the same results.parquet, summary, recommendation and every other file as one block of the
whole grid. Each pair of sweeps shares a unit store, so the second re-runs only the results stage.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
from pandas.testing import assert_frame_equal

from tests.conftest import shared_set
from tests.test_sweep import run_in_process

QUIET = ["progress=false", "report=false", "results_csv=true"]
ONE_BLOCK = 1 << 30
"""More rows than any of these sweeps has: the whole grid in one block, as when the table was built whole."""
NOT_COMPARED = {"run_stats.json", "manifest.json", "freshness.json", "retrieval_latency.json"}  # timings
"""Seconds, the command line (its run id) and what changed since the earlier run (only the second run has
one) differ between two runs; nothing else may."""


def run_files(run_dir: Path) -> dict[str, Path]:
    return {
        str(p.relative_to(run_dir)): p
        for p in sorted(run_dir.rglob("*"))
        if p.is_file() and p.name not in NOT_COMPARED and not p.name.startswith(".")
    }


def assert_same_run(one: Path, blocked: Path) -> None:
    whole, parts = run_files(one), run_files(blocked)
    assert whole.keys() == parts.keys()
    compared = {"results.parquet", "results.csv", "summary.csv", "recommendation.json", "recall_at_budget.csv"}
    assert compared <= set(whole)
    for name, path in whole.items():
        if name.endswith(".parquet"):
            a, b = pd.read_parquet(path), pd.read_parquet(parts[name])
            assert list(a.columns) == list(b.columns), name
            assert_frame_equal(a, b, check_exact=True, obj=name)
        elif name == "review.json":  # its inputs digest covers the manifest (the run id): everything else equal
            a, b = (json.loads(p.read_text(encoding="utf-8")) for p in (path, parts[name]))
            assert {k: v for k, v in a.items() if k != "inputs"} == {k: v for k, v in b.items() if k != "inputs"}
        elif name != "position/status.json":  # it names the command, whose run_id differs
            assert path.read_bytes() == parts[name].read_bytes(), name


def sweep_twice(reports: Path, labelset: list[str], block_rows: int) -> tuple[Path, Path]:
    common = [*QUIET, *labelset, f"reports_dir={reports}"]
    one = run_in_process([*common, "run_id=one", f"+executor.results_block_rows={ONE_BLOCK}"])
    blocked = run_in_process([*common, "run_id=blocked", f"+executor.results_block_rows={block_rows}"])
    return one, blocked


def test_small_blocks_give_the_same_run_as_one_block_on_the_demo_set(tmp_path: Path) -> None:
    # 254 questions per config: blocks of 700 rows hold two configs and cut inside the third.
    one, blocked = sweep_twice(tmp_path, [], block_rows=700)
    results = pq.ParquetFile(blocked / "results.parquet")
    assert results.metadata.num_row_groups > 20, "the blocked run wrote its results a block at a time"
    assert_same_run(one, blocked)


def test_small_blocks_give_the_same_run_as_one_block_on_a_shared_set(tmp_path: Path) -> None:
    squad = shared_set("squad2-en")
    one, blocked = sweep_twice(tmp_path, [f"labelset.path={squad}", "labelset.limit=1500"], block_rows=4000)
    assert len(pd.read_parquet(one / "results.parquet", columns=["config_id"])) == 1500 * 96
    assert_same_run(one, blocked)


def test_a_block_smaller_than_one_config_still_holds_whole_configs(tmp_path: Path) -> None:
    from evalkit.run.blocks import config_blocks, write_frames

    frames = [pd.DataFrame({"config_id": [c] * n, "v": range(n)}) for c, n in (("a", 5), ("b", 3), ("c", 7))]
    path = tmp_path / "rows.parquet"
    assert write_frames(path, frames) == 15
    for block_rows in (1, 2, 4, 8, 100):
        blocks = list(config_blocks([path], block_rows))
        for block in blocks:  # no config is split across two blocks
            assert all(set(block["config_id"]).isdisjoint(other["config_id"]) for other in blocks if other is not block)
        assert_frame_equal(pd.concat(blocks, ignore_index=True), pd.concat(frames, ignore_index=True))
