"""Diagnostics that keep the constraints: threshold advice from calibration, flags for degenerate configs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_dir

from evalkit.report.decision import NO_DECISION_OBJECTIVE, read_decision
from evalkit.review import Statistics
from evalkit.review.advice_gate import NOT_ADVISED, config_verdict, threshold_verdict
from evalkit.review.analysis import steps
from evalkit.review.diagnostic_moves import RULE_KNOBS, with_moves
from evalkit.review.diagnostics import (
    Finding,
    calibration_rule,
    diagnose,
    gold_cut_rule,
    grid_edge_rule,
    overlap_effect_rule,
    threshold_rule,
    top_k_rule,
    whole_document_rule,
)
from evalkit.review.threshold_advice import threshold_advice
from evalkit.run.folder import load_run
from evalkit.scoring.calibration import calibrate_by_class
from evalkit.scoring.registry import measure
from evalkit.scoring.thresholds import zero_hit_at
from evalkit.sweep import sweep
from tests.conftest import REPO

FAST = Statistics(n_resamples=500)
OBJECTIVE = replace(NO_DECISION_OBJECTIVE, zero_hit_answerable_max=0.05)
"""recall under the sweep's default 5% zero-hit cap, as recommendation.json states it."""
SET_TO = re.compile(r"set threshold to (\S+?):")


def one_config(best: np.ndarray, answerable: np.ndarray, chunking: str = "c") -> dict[str, pd.DataFrame]:
    """Results, summary and calibration of one config whose pool is each question's best score."""
    n = best.size
    config_id = f"{chunking}|bm25|none|k5|t0"
    results = pd.DataFrame(
        {
            "config_id": config_id,
            "question_id": [f"q{i}" for i in range(n)],
            "answerable": answerable,
            "best_score": best,
            "chunking": chunking,
            "chunk_size": 512,
            "chunk_overlap": 0,
            "top_k": 5,
            "threshold": 0.0,
            "recall": answerable.astype(float),
            "zero_hit": False,
        }
    )
    summary = pd.DataFrame(
        [{"config_id": config_id, "chunking": chunking, "chunk_size": 512, "chunk_overlap": 0, "top_k": 5}]
    ).assign(threshold=0.0, recall=answerable.mean(), zero_hit_answerable=0.0, n_chunks=100)
    scores, relevant = best[:, None], answerable[:, None]
    rows = calibrate_by_class(chunking, "bm25", ["all"] * n, scores, relevant, answerable)
    calibration = pd.DataFrame([r.to_dict() for r in rows])
    return {"results": results, "summary": summary, "calibration": calibration}


def test_separating_score_gets_a_threshold_within_the_target() -> None:
    rng = np.random.default_rng(0)
    best = np.concatenate([rng.normal(10, 2, 200), rng.normal(4, 1.5, 40)])
    answerable = np.arange(240) < 200
    f = one_config(best, answerable)
    rec = f["summary"].iloc[0].to_dict()
    advice = threshold_advice(f["calibration"], f["results"], rec, OBJECTIVE)
    assert advice is not None and advice.threshold is not None
    # The value shown, rounded down, keeps zero-hit on answerable questions within 5%.
    assert zero_hit_at(best[answerable], advice.threshold) <= 0.05
    shown = f"{zero_hit_at(best[~answerable], advice.threshold):.1%}"
    assert advice.fix.startswith(f"set threshold to {advice.threshold:g}: zero-hit on answerable ")
    assert f"<= 5%, abstains on {shown} of unanswerable" in advice.fix
    # A stricter objective cap than the calibration's target is honoured, not broken.
    strict = threshold_advice(f["calibration"], f["results"], rec, replace(OBJECTIVE, zero_hit_answerable_max=0.01))
    assert strict is not None and strict.threshold is not None and strict.threshold < advice.threshold
    assert zero_hit_at(best[answerable], strict.threshold) <= 0.01
    # The recommended config at threshold 0 is told to set it.
    (finding,) = rule(f, rec)
    assert finding.fired and finding.advice == advice.fix


def rule(f: dict[str, pd.DataFrame], rec: dict) -> tuple[Finding, ...]:
    return calibration_rule(f["calibration"], f["results"], rec, OBJECTIVE)


def test_poor_separation_says_no_threshold_and_widen_the_pool() -> None:
    rng = np.random.default_rng(1)
    best = rng.normal(8, 2, 300)  # answerable and unanswerable from one distribution: AUC about 0.5
    answerable = np.arange(300) % 5 != 0
    f = one_config(best, answerable)
    rec = f["summary"].iloc[0].to_dict()
    auc = float(f["calibration"]["auc_answerable_vs_unanswerable"].iloc[0])
    advice = threshold_advice(f["calibration"], f["results"], rec, OBJECTIVE)
    assert advice is not None and advice.threshold is None
    assert advice.fix == (
        f"no threshold for this score (AUC {auc:.2f} < 0.7): keep 0; "
        "when zero-hit rises without a gain, widen the candidate pool one step (pool_size), do not lower the threshold"
    )
    (finding,) = rule(f, rec)
    assert not finding.fired  # the recommended config already filters nothing
    (finding,) = rule(f, {**rec, "threshold": 5.0})
    assert finding.fired and finding.advice.startswith("no threshold for this score (AUC")


def test_no_unanswerable_questions_means_no_threshold() -> None:
    best = np.linspace(1, 20, 50)
    f = one_config(best, np.ones(50, dtype=bool))
    advice = threshold_advice(f["calibration"], f["results"], f["summary"].iloc[0].to_dict(), OBJECTIVE)
    assert advice is not None and advice.fix.startswith("no threshold for this score (no unanswerable questions)")


def test_an_older_calibration_is_never_advised() -> None:
    best = np.linspace(1, 20, 50)
    f = one_config(best, np.arange(50) > 5)
    old = f["calibration"][["chunking", "stage", "question_class", "recommended_threshold"]].assign(
        recommended_threshold=15.0
    )
    rec = f["summary"].iloc[0].to_dict()
    assert threshold_advice(old, f["results"], rec, OBJECTIVE) is None
    findings = threshold_rule(f["results"], f["summary"], rec, OBJECTIVE, FAST, calibrated=15.0, calibration=old)
    assert all("15" not in x.advice for x in findings)


def grid(sizes: tuple[int, ...], overlaps: tuple[int, ...], ks: tuple[int, ...]) -> dict[str, pd.DataFrame]:
    """Summary and results of a small grid where recall grows with chunk_size and top_k, overlap changes nothing."""
    rows, summary = [], []
    for size in sizes:
        for overlap in overlaps:
            chunking = f"recursive-s{size}-o{overlap}"
            for k in ks:
                config_id = f"{chunking}|bm25|none|k{k}|t0"
                recall = np.array([float(i < size / 100 + k) for i in range(20)])
                for i, r in enumerate(recall):
                    rows.append(
                        {"config_id": config_id, "question_id": f"q{i}", "chunking": chunking, "chunk_size": size}
                        | {"chunk_overlap": overlap, "top_k": k, "threshold": 0.0, "recall": r, "hit": r}
                        | {"answerable": True, "best_score": 5.0, "zero_hit": False, "n_returned": k}
                    )
                summary.append(
                    {"config_id": config_id, "chunking": chunking, "chunker": "recursive", "chunk_size": size}
                    | {"chunk_overlap": overlap, "retriever": "bm25", "reranker": "none", "top_k": k}
                    | {"threshold": 0.0, "recall": recall.mean(), "n_chunks": 1000 // size}
                )
    return {"results": pd.DataFrame(rows), "summary": pd.DataFrame(summary)}


def test_overlap_without_effect_and_whole_documents_and_grid_edge() -> None:
    g = grid((256, 1024), (0, 64), (3, 5))
    flagged = overlap_effect_rule(g["results"], g["summary"])
    assert {f.title for f in flagged} == {
        "overlap 64 at chunk_size 256 has no effect",
        "overlap 64 at chunk_size 1024 has no effect",
    }
    # Once overlap changes a value, the flag goes.
    changed = g["results"].copy()
    changed.loc[(changed["chunking"] == "recursive-s256-o64") & (changed["question_id"] == "q0"), "recall"] = 0.0
    assert {f.title for f in overlap_effect_rule(changed, g["summary"])} == {
        "overlap 64 at chunk_size 1024 has no effect"
    }
    # 1000 // 1024 = 0 chunks is not a chunking; 1000 // 256 = 3 chunks for 3 documents is whole documents.
    whole = whole_document_rule(g["summary"], {"labelset": {"documents": 3}})
    assert [f.title for f in whole] == [
        "recursive-s256-o0: every chunk is a whole document",
        "recursive-s256-o64: every chunk is a whole document",
    ]
    assert whole_document_rule(g["summary"], None) == ()
    edge = grid_edge_rule(g["summary"], OBJECTIVE)
    assert [f.title for f in edge] == [
        "the best recall@5 config uses the largest top_k of the grid (5)",
        "the best recall@5 config uses the largest chunk_size of the grid (1024)",
    ]
    assert all(f.fired and f.advice.startswith("extend the grid") for f in edge)


def _sweep(labelset: Path, reports: Path) -> Path:
    with initialize_config_dir(version_base="1.3", config_dir=str(REPO / "conf")):
        cfg = compose(
            config_name="config",
            overrides=[
                f"labelset.path={labelset}",
                "retriever=bm25",
                f"reports_dir={reports}",
                "progress=false",
                "report=false",
                "position=off",
                "answer_check=off",
                "chunk_size=[256,512]",
                "chunk_overlap=[0,64]",
                "top_k=[1,5]",
            ],
        )
        return sweep(cfg)


@pytest.mark.parametrize("cap", [0.05, 0.02])
def test_no_diagnostic_on_a_real_run_advises_a_threshold_that_breaks_the_cap(
    tmp_path: Path, small_demo: Path, cap: float
) -> None:
    run = load_run(_sweep(small_demo, tmp_path))
    decision = read_decision(run.recommendation)
    assert decision is not None and decision.focus_id is not None
    objective = replace(decision.objective, zero_hit_answerable_max=cap)
    rec_row = run.config_row(decision.focus_id)
    k_steps = steps(
        run.results, run.summary, measure("recall"), str(rec_row["chunking"]), "top_k", rec_row["threshold"], FAST
    )
    findings = diagnose(
        run.results,
        run.summary,
        run.chunkings,
        rec_row,
        objective,
        FAST,
        k_steps,
        None,
        None,
        run.calibration,
        run.manifest,
    )
    assert {"overlap", "top_k", "threshold"} <= {f.rule for f in findings}
    own = run.results[run.results["config_id"] == decision.focus_id]
    ans = own["answerable"].to_numpy(dtype=bool)
    best = own["best_score"].to_numpy(dtype=float)
    for f in findings:
        for value in SET_TO.findall(f.advice):
            assert zero_hit_at(best[ans], float(value)) <= cap, f
    # Without calibration.parquet the per-chunking info files give the same advice.
    fallback = diagnose(
        run.results, run.summary, run.chunkings, rec_row, objective, FAST, k_steps, None, None, None, run.manifest
    )
    assert [f.advice for f in fallback] == [f.advice for f in findings]


def test_each_fired_rule_names_the_one_knob_move_of_its_knob(tmp_path: Path, small_demo: Path) -> None:
    """The seed's symptom rules on the objective's terms, each fired one carrying the one-knob move from
    production (recommendation.json) with its evidence and the gate's verdict; a quiet rule carries none."""
    run = load_run(_sweep(small_demo, tmp_path))
    decision = read_decision(run.recommendation)
    assert decision is not None and decision.focus_id is not None and decision.moves
    rec_row = run.config_row(decision.focus_id)
    k_steps = steps(
        run.results, run.summary, measure("recall"), str(rec_row["chunking"]), "top_k", rec_row["threshold"], FAST
    )
    findings = diagnose(
        run.results, run.summary, run.chunkings, rec_row, decision.objective, FAST, k_steps, None, None,
        run.calibration, run.manifest, moves=decision.moves,
    )  # fmt: skip
    moves = {m.knob: m for m in decision.moves if m.swept}
    for f in findings:
        knob = RULE_KNOBS.get(f.rule)
        if f.fired and knob in moves:
            move = moves[knob]
            assert f.move.startswith(f"one-knob move from production: {knob} {move.production_value} → {move.value}")
            assert move.config_id in f.move and f"gate {move.gate_verdict.upper()}" in f.move
        else:
            assert f.move == "", f
    synthetic = (Finding("overlap", True, "t", "a", "lower it"), Finding("top_k", False, "t", "a"))
    moved = with_moves((*synthetic, Finding("position", True, "t", "a", "placement")), decision.moves)
    assert [bool(f.move) for f in moved] == ["chunk_overlap" in moves, False, False]


NUMBER = r"(-?[0-9][0-9.e+-]*)"


def _threshold_words(findings: tuple[Finding, ...]) -> list[str]:
    """Every pair of findings on one page that contradict each other about the threshold (issue 47)."""
    number = NUMBER
    fired = [f for f in findings if f.fired]
    advised = {float(m) for f in fired for m in re.findall(rf"set threshold to {number}", f.advice)}
    refused = {float(m) for f in fired for m in re.findall(rf"do not set threshold {number}", f.advice)}
    raised = {float(m) for f in fired for m in re.findall(rf"^threshold {number} raised zero-hit", f.title)}
    below = {float(m) for f in fired for m in re.findall(rf"keep the threshold below {number}", f.advice)}
    out = []
    if len(advised) > 1:
        out.append(f"two thresholds advised: {sorted(advised)}")
    out += [f"{x:g} advised and refused" for x in advised & refused]
    out += [f"{x:g} advised, but threshold {r:g} raised zero-hit without a gain" for x in advised for r in raised
            if x >= r]  # fmt: skip
    out += [f"{x:g} advised, but another finding keeps the threshold below {t:g}" for x in advised for t in below
            if x >= t]  # fmt: skip
    for f in fired:
        if "set threshold to" in f.advice and "FAIL" in f.advice:
            out.append(f"advice the gate fails is given: {f.advice}")
    return out


def _given(f: Finding) -> bool:
    """A fired finding whose advice is given (not refused: "not advised: ...", "do not set ...")."""
    return f.fired and bool(f.advice) and not f.advice.startswith((NOT_ADVISED, "do not "))


def contradictions(findings: tuple[Finding, ...]) -> list[str]:
    """Every pair of findings on one page that contradict each other, and advice given though the gate fails it.

    Threshold (:func:`_threshold_words`); overlap: "lower the overlap at chunk_size S" beside "raise the overlap"
    for a chunking of size S; top_k: "lower ... back to top_k K" beside "try top_k beyond K'" with K' >= K; any rule:
    advice given whose own gate word is FAIL (the one-knob move from production is another config: not read).
    """
    out = _threshold_words(findings)
    given = [f for f in findings if _given(f)]
    lowered = {
        int(m)
        for f in given
        for m in re.findall(r"(?:lower the overlap first, to \d+|drop overlap \d+) at chunk_size (\d+)", f.advice)
    }
    raised = {int(m) for f in given if "raise the overlap" in f.advice for m in re.findall(r"-s(\d+)-", f.title)}
    out += [f"overlap at chunk_size {s} both lowered and raised" for s in lowered & raised]
    fewer = {float(m) for f in given for m in re.findall(rf"back to top_k {NUMBER}", f.advice)}
    beyond = {float(m) for f in given for m in re.findall(rf"try top_k beyond {NUMBER}", f.advice)}
    out += [f"top_k lowered to {k:g} and extended beyond {b:g}" for k in fewer for b in beyond if b >= k]
    out += [f"advice the gate fails is given: {f.advice}" for f in given if "FAIL" in f.advice]
    return out


def test_an_advised_off_grid_threshold_that_fails_the_gate_is_reported_failing_and_not_advised(
    tmp_path: Path, small_demo: Path
) -> None:
    """The calibration advises a threshold off the swept grid (issue 47): the sweep scores it from the pool, the
    gate fails it against production (the gate CLI agrees), the page says so and does not advise it, and no
    finding of the run contradicts another."""
    from evalkit.review.build import compute_review
    from evalkit.run.folder import load_run
    from tests.test_sweep import run_in_process

    run_dir = run_in_process([f"labelset.path={small_demo}", f"reports_dir={tmp_path}", "sweep=quick",
                              "top_k=[3,5]", "progress=false", "report=false"])  # fmt: skip
    run = load_run(run_dir)
    review = compute_review(run)
    off_grid = run.summary[run.summary["off_grid"]]
    grid = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))["grid"]["threshold"]
    assert not off_grid.empty and not set(off_grid["threshold"]) & set(grid)
    refused = [f for f in review.findings if f.fired and "do not set threshold" in f.advice]
    assert refused, [f.advice for f in review.findings]
    value = float(re.search(r"do not set threshold ([0-9.]+)", refused[0].advice).group(1))
    assert "fails the gate" in refused[0].advice and "the gate decides what ships" in refused[0].advice
    candidate = off_grid[np.isclose(off_grid["threshold"], value) & (off_grid["top_k"] == 5)]["config_id"].iloc[0]
    gate = subprocess.run(
        [sys.executable, "-m", "evalkit.gate", "--run", str(run_dir), "--candidate-config", candidate],
        capture_output=True, text=True, cwd=REPO, timeout=600,
    )  # fmt: skip
    assert gate.returncode == 1, gate.stdout + gate.stderr
    assert not [f for f in review.findings if f"set threshold to {value:g}" in f.advice]
    # The calibration table beside the findings does not advise it either: its cell carries the gate's word.
    rows = run.calibration.reset_index(drop=True)
    mine = rows.index[
        (rows["chunking"] == run.config_row(review.focus_id)["chunking"]) & (rows["question_class"] == "all")
    ]
    cell = review.calibration[int(mine[0])]
    assert cell.advised == f"{value:g}" and cell.advice == "not advised: fails the gate", cell
    assert contradictions(review.findings) == [], [(f.title, f.advice) for f in review.findings]
    # Every value a rule advises carries the gate's word on it, or is refused because of it: here a smaller top_k
    # the gate fails, and "keep the threshold below" at production's own threshold, not at 3.88 (it fails).
    gated = [f for f in review.findings if f.fired and re.search(r"back to top_k|lower the overlap|lowering|keep the "
                                                                 r"threshold below", f.advice)]  # fmt: skip
    assert {f.rule for f in gated} >= {"top_k", "threshold"}, [(f.title, f.advice) for f in review.findings]
    for f in gated:
        assert "gate on" in f.advice or " is production" in f.advice, f.advice
        assert f.advice.startswith(NOT_ADVISED) == ("FAIL" in f.advice), f.advice


def test_the_contradiction_check_finds_contradictions() -> None:
    """The check above can fail: advice beside a finding that says the same threshold raised misses."""
    raised = Finding("threshold", True, "threshold 3.88 raised zero-hit on answerable questions by +4 points", "",
                     "keep the threshold below 3.88 (0 or lower)")  # fmt: skip
    advised = Finding("threshold", True, "the calibration advises threshold 3.88", "", "set threshold to 3.88: ...")
    assert len(_threshold_words((raised, advised))) == 2
    assert _threshold_words((raised,)) == []
    lower = Finding(
        "overlap", True, "overlap 64 adds 12% chunks", "", "... lower the overlap first, to 0 at chunk_size 512 (..)"
    )
    cut = Finding(
        "gold_cut", True, "recursive-s512-o0: 9% of answer spans are cut", "", "raise the overlap (or chunk_size) so"
    )
    fewer = Finding("top_k", True, "top_k 3 → 5", "", "... flat: lower the input budget back to top_k 3")
    edge = Finding(
        "degenerate", True, "the best config uses the largest top_k", "", "extend the grid: try top_k beyond 5 ..."
    )
    failed = Finding(
        "top_k", True, "top_k 3 → 5", "", "lower ... back to top_k 3 (gate on x against production: FAIL (recall))"
    )
    found = contradictions((lower, cut, fewer, edge, failed))
    assert found[:2] == [
        "overlap at chunk_size 512 both lowered and raised",
        "top_k lowered to 3 and extended beyond 5",
    ]
    assert len(found) == 3 and found[2].startswith("advice the gate fails is given"), found
    refused = replace(failed, advice=f"{NOT_ADVISED}lowering top_k to 3 (x) fails the gate (gate on x: FAIL (recall))")
    assert contradictions((lower, replace(cut, fired=False), fewer, refused)) == []


GATED = replace(OBJECTIVE, gate_margins=({"metric": "recall", "kind": "max_drop", "amount": 0.02},), confidence=0.95)
"""The objective with the default gate's recall margin, as recommendation.json states it."""


def test_a_smaller_top_k_the_gate_fails_is_not_advised_and_one_it_passes_carries_its_verdict() -> None:
    """The top_k rule advises the smaller k of a flat step (issue 47): the gate judges that config against
    production first. Against a production that finds far more (s1024, k5) it fails and is not advised; against
    its own twin (s256 with overlap 64, k3: the same lists) it passes and is advised with the gate's word."""
    g = grid((256, 1024), (0, 64), (3, 5))
    g["summary"]["mean_returned"] = g["summary"]["top_k"].astype(float)
    k_steps = steps(g["results"], g["summary"], measure("recall"), "recursive-s256-o0", "top_k", 0.0, FAST)
    assert len(k_steps) == 1 and k_steps[0].comparison.delta_low <= 0.0  # 2 of 20 questions: within noise
    strong = config_verdict(g["results"], g["summary"], "recursive-s1024-o0|bm25|none|k5|t0", GATED)
    refused = top_k_rule(k_steps, g["summary"], "recall", strong)
    assert refused[0].fired and refused[0].advice.startswith(f"{NOT_ADVISED}lowering top_k to 3"), refused[0]
    assert "FAIL (recall" in refused[0].advice and "lower the input budget" not in refused[0].advice
    twin = config_verdict(g["results"], g["summary"], "recursive-s256-o64|bm25|none|k3|t0", GATED)
    advised = top_k_rule(k_steps, g["summary"], "recall", twin)
    assert "lower the input budget back to top_k 3" in advised[0].advice and ": PASS" in advised[0].advice
    assert contradictions(refused) == [] and contradictions(advised) == []


def test_a_measured_step_without_a_gain_outranks_the_grid_edge_and_the_gold_cut_heuristics() -> None:
    """Two rules that would contradict each other on one page defer to the measured one (issue 47)."""
    g = grid((256, 1024), (0, 64), (3, 5))
    assert grid_edge_rule(g["summary"], OBJECTIVE)[0].fired
    quiet = grid_edge_rule(g["summary"], OBJECTIVE, flat_k=frozenset({5.0}))
    assert [f.fired for f in quiet] == [False, True] and "gains nothing beyond the noise" in quiet[0].title
    chunkings = pd.DataFrame({"chunking": ["recursive-s512-o0"], "chunk_size": [512], "gold_cut_share": [0.2]})
    assert "raise the overlap" in gold_cut_rule(chunkings)[0].advice
    measured = gold_cut_rule(chunkings, flat_overlap=frozenset({512}))[0]
    assert measured.fired and "raise the overlap" not in measured.advice and "chunk_size" in measured.advice


def test_a_grid_where_overlap_changes_nothing_never_advises_raising_it() -> None:
    """Every chunking cuts 20% of answer spans, and overlap 64 changes no result: the page says drop overlap 64
    and, for the cut spans, a larger chunk_size, never "raise the overlap" beside it (issue 47)."""
    g = grid((256, 1024), (0, 64), (3, 5))
    g["summary"]["mean_returned"] = g["summary"]["top_k"].astype(float)
    chunkings = (
        g["summary"].drop_duplicates("chunking")[["chunking", "chunk_size", "n_chunks"]].assign(gold_cut_share=0.2)
    )
    rec = g["summary"][g["summary"]["config_id"] == "recursive-s1024-o0|bm25|none|k5|t0"].iloc[0].to_dict()
    k_steps = steps(g["results"], g["summary"], measure("recall"), "recursive-s1024-o0", "top_k", 0.0, FAST)
    findings = diagnose(g["results"], g["summary"], chunkings, rec, OBJECTIVE, FAST, k_steps, None, None)
    fired = [f for f in findings if f.fired]
    assert any(f.advice.startswith("drop overlap 64 at chunk_size 256") for f in fired), fired
    assert [f.rule for f in fired].count("gold_cut") == 4, fired
    assert contradictions(findings) == [], [(f.title, f.advice) for f in fired]
    # Without the measured overlap the heuristic's advice would stand, and the check would say so.
    assert contradictions((*fired, *gold_cut_rule(chunkings)))


def test_advice_a_run_with_a_gate_did_not_score_is_not_given() -> None:
    """The calibration's threshold recomputed under a stricter cap than the sweep scored (issue 47): the gate has
    no such config to judge, so the page says it cannot check it and does not advise it."""
    best = np.r_[np.linspace(5, 20, 40), np.linspace(0, 4, 20)]
    f = one_config(best, np.arange(60) < 40)
    rec = f["summary"].iloc[0].to_dict()
    advice = threshold_advice(f["calibration"], f["results"], rec, GATED)
    assert advice is not None and advice.threshold is not None and advice.threshold > 0
    verdict = threshold_verdict(f["results"], f["summary"], rec["config_id"], rec, GATED)
    assert verdict is not None and verdict(advice.threshold).passed is None
    (finding,) = calibration_rule(f["calibration"], f["results"], rec, GATED, verdict)
    assert finding.fired and finding.advice.startswith(f"do not set threshold {advice.threshold:g}"), finding
    assert "the gate cannot check it" in finding.advice and contradictions((finding,)) == []
    # Without a gate (a run before recommendation.json) the calibration's advice stands alone.
    (alone,) = calibration_rule(f["calibration"], f["results"], rec, GATED, None)
    assert alone.advice.startswith(f"set threshold to {advice.threshold:g}"), alone
