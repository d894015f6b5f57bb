"""The CI gate on real (small) runs: a clearly worse candidate fails, an equal one passes, bad input is exit 2."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalkit.gate import load_gate_config, main
from evalkit.run import files
from evalkit.scoring.stats.cluster_paired import cluster_paired_bootstrap
from tests.conftest import REPO
from tests.test_report import planted_run, run_sweep

ONE_POINT = ["chunk_overlap=[0]", "threshold=0"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, small_demo: Path) -> dict[str, Path]:
    """Production (512/64, top 5), a clearly worse candidate (64/0, top 1), and one run holding both."""
    root = tmp_path_factory.mktemp("gate")
    return {
        "baseline": run_sweep(small_demo, root, "chunk_size=512", "chunk_overlap=64", "top_k=5", "threshold=0"),
        "worse": run_sweep(small_demo, root, "chunk_size=64", "top_k=1", *ONE_POINT),
        "both": run_sweep(small_demo, root, "chunk_size=[64,512]", "top_k=[1,5]", *ONE_POINT),
    }


def config_of(run: Path) -> str:
    summary = pd.read_csv(run / "summary.csv")
    summary = summary[~summary["off_grid"].astype(bool)]  # the calibration's advised threshold, scored beside it
    assert len(summary) == 1
    return str(summary["config_id"].iloc[0])


def test_a_clearly_worse_candidate_fails(runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    code = main(["--baseline", str(runs["baseline"]), "--candidate", str(runs["worse"]), "--out", str(out)])
    assert code == 1
    report = json.loads((out / files.GATE_JSON).read_text(encoding="utf-8"))
    assert report["passed"] is False and report["verdict"] == "fail"
    assert report["baseline"]["config_id"] == config_of(runs["baseline"])
    assert report["candidate"]["config_id"] == config_of(runs["worse"])
    checks = {c["metric"]: c for c in report["checks"]}
    assert set(checks) >= {"recall", "context_precision", "zero_hit_answerable"}
    recall = checks["recall"]
    assert recall["passed"] is False and recall["margin"] == pytest.approx(0.02) and recall["margin_kind"] == "max_drop"

    # The numbers are the paired comparison of the two configs' per-question recall in results.parquet,
    # resampling the clusters (source documents) the sweep wrote to clusters.parquet.
    def values(run: Path) -> pd.Series:
        rows = pd.read_parquet(run / "results.parquet")
        rows = rows[rows["config_id"] == config_of(run)]  # not the advised threshold scored beside the grid
        return rows[rows["answerable"]].set_index("question_id")["recall"].sort_index()

    base, cand = values(runs["baseline"]), values(runs["worse"])
    clusters = pd.read_parquet(runs["worse"] / files.CLUSTERS).set_index("question_id")["cluster"]
    assert clusters.nunique() < len(clusters)  # documents hold several questions
    assert recall["method"] == "paired bootstrap, clusters resampled"
    expected = cluster_paired_bootstrap(
        base.to_numpy(), cand.reindex(base.index).to_numpy(), clusters.reindex(base.index).to_numpy(),
        n_resamples=10000, seed=0,
    )  # fmt: skip
    assert recall["delta"] == pytest.approx(expected.delta)
    assert recall["delta_low"] == pytest.approx(expected.delta_low)
    assert recall["delta_high"] == pytest.approx(expected.delta_high)
    assert recall["baseline"] == pytest.approx(base.mean()) and recall["candidate"] == pytest.approx(cand.mean())
    assert recall["delta_low"] < -0.02  # clearly worse
    markdown = (out / files.GATE_MD).read_text(encoding="utf-8")
    assert "FAIL" in markdown and "| metric | baseline | candidate |" in markdown
    assert config_of(runs["worse"]) in markdown


def test_an_equal_candidate_passes_and_the_report_shows_the_gate(runs: dict[str, Path], tmp_path: Path) -> None:
    candidate = Path(shutil.copytree(runs["baseline"], tmp_path / "same"))
    assert main(["--baseline", str(runs["baseline"]), "--candidate", str(candidate)]) == 0
    report = json.loads((candidate / files.GATE_JSON).read_text(encoding="utf-8"))  # into the candidate folder
    assert report["passed"] is True
    for check in report["checks"]:
        assert check["passed"] and check["delta"] == 0 and check["delta_low"] == 0 and check["delta_high"] == 0
    assert "PASS" in (candidate / files.GATE_MD).read_text(encoding="utf-8")
    from evalkit.review import Statistics, write_report

    page = write_report(candidate, statistics=Statistics(n_resamples=200)).read_text(encoding="utf-8")
    assert 'id="gate"' in page and "PASS" in page


def test_one_run_and_two_grid_points(runs: dict[str, Path], tmp_path: Path) -> None:
    summary = pd.read_csv(runs["both"] / "summary.csv")
    ids = dict(zip(zip(summary["chunk_size"], summary["top_k"]), summary["config_id"]))
    args = ["--run", str(runs["both"]), "--baseline-config", ids[(512, 5)], "--out", str(tmp_path)]
    assert main([*args, "--candidate-config", ids[(64, 1)]]) == 1
    assert main([*args, "--candidate-config", ids[(512, 5)]]) == 0
    assert main([*args, "--candidate-config", "no|such|config"]) == 2


def test_a_broken_clusters_file_is_one_line_and_exit_2(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    candidate = Path(shutil.copytree(runs["worse"], tmp_path / "cand"))
    (candidate / files.CLUSTERS).write_text("not parquet", encoding="utf-8")
    assert main(["--baseline", str(runs["baseline"]), "--candidate", str(candidate), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("evalkit.gate: error: ") and "clusters.parquet: not a clusters table" in err
    assert "\n" not in err and "Traceback" not in err


def test_cost_is_checked_when_present(runs: dict[str, Path], tmp_path: Path) -> None:
    base = Path(shutil.copytree(runs["baseline"], tmp_path / "base"))
    cand = Path(shutil.copytree(runs["baseline"], tmp_path / "cand"))
    for run, dollars in ((base, 0.010), (cand, 0.012)):  # +20% > the 10% margin
        rows = pd.read_parquet(run / files.RESULTS)
        rows.assign(cost_per_query_usd=dollars + 0.001 * np.arange(len(rows)) % 0.002).to_parquet(run / files.RESULTS)
    assert main(["--baseline", str(base), "--candidate", str(cand), "--out", str(tmp_path / "o")]) == 1
    checks = {c["metric"]: c for c in json.loads((tmp_path / "o" / files.GATE_JSON).read_text())["checks"]}
    cost = checks["cost_per_query"]
    assert (
        not cost["passed"] and cost["margin_kind"] == "max_rise_pct" and cost["method"].startswith("paired bootstrap")
    )
    assert cost["margin"] == pytest.approx(0.1 * cost["baseline"])
    assert all(checks[m]["passed"] for m in ("recall", "context_precision", "zero_hit_answerable"))


def test_bad_input_exits_2_with_one_line(runs: dict[str, Path], tmp_path: Path) -> None:
    other = planted_run(tmp_path)  # another labelled set
    result = subprocess.run(
        [sys.executable, "-m", "evalkit.gate", "--baseline", str(runs["baseline"]), "--candidate", str(other),
         "--candidate-config", pd.read_csv(other / "summary.csv")["config_id"].iloc[0]],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "different labelled sets" in lines[0] and "Traceback" not in result.stderr
    assert not (other / files.GATE_JSON).exists()
    assert main(["--baseline", str(runs["baseline"])]) == 2
    assert main(["--run", str(tmp_path / "missing"), "--candidate-config", "x"]) == 2
    assert main(["--baseline", str(runs["baseline"]), "--candidate", str(runs["both"])]) == 2  # which config?
    bad = tmp_path / "bad.yaml"
    bad.write_text("checks:\n  recall: {max_rise: 0.02}\n", encoding="utf-8")
    assert main(["--baseline", str(runs["baseline"]), "--candidate", str(runs["worse"]), "--margins", str(bad)]) == 2


def test_default_margins_file() -> None:
    config = load_gate_config("default")
    assert config.confidence == 0.95
    margins = {m.metric: (m.kind, m.amount) for m in config.margins}
    assert margins == {
        "recall": ("max_drop", 0.02),
        "context_precision": ("max_drop", 0.03),
        "zero_hit_answerable": ("max_rise", 0.02),
        "cost_per_query": ("max_rise_pct", 10.0),
        "answer_accuracy": ("max_drop", 0.05),
        "answer_f1": ("max_drop", 0.05),
        "first_token_s": ("max_rise_pct", 25.0),
    }
