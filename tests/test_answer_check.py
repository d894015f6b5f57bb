"""The answer check: its statistics have the power and coverage they state, and its answers gate.

- Sizing: the size :func:`questions_for_noninferiority` states shows non-inferiority at the margin with at
  least 80% power when the true difference is 0, checked by an independent simulation.
- Intervals: Newcombe's paired interval covers the true accuracy difference at least 93% of the time.
- End to end with the deterministic fake generator (it answers with the first words of the first context
  block): on a planted set where small chunks start at the answer and large ones at the document's start,
  both chunkings retrieve the gold (recall 1.0 each) but the large one's answers are wrong; the sweep's
  answer check answers both, and ``python -m evalkit.gate`` fails the large one on answer accuracy while
  its retrieval check passes. A second run asks nothing again (every answer from the cache).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalkit.scoring.latency import fit_latency, latency_percentiles
from evalkit.scoring.routing import RoutingCaps, stuff_or_retrieve
from evalkit.scoring.stats import paired_difference_ci
from evalkit.scoring.stats.noninferiority import noninferiority_power, questions_for_noninferiority
from tests.conftest import evidence, write_set

PLANNING = [(0.1, 0.05), (0.2, 0.05), (0.3, 0.1), (0.05, 0.03)]


@pytest.mark.parametrize(("discordance", "margin"), PLANNING)
def test_the_stated_size_has_the_stated_power(discordance: float, margin: float) -> None:
    n = questions_for_noninferiority(discordance, margin)
    assert n is not None
    power = noninferiority_power(n, discordance, margin, n_simulations=20_000, seed=12345)
    assert power >= 0.8, (n, power)
    fewer = noninferiority_power(max(2, int(n * 0.8)), discordance, margin, n_simulations=20_000, seed=777)
    assert fewer < power, "the size is the one that reaches the power, not an arbitrary large one"


@pytest.mark.parametrize(("n", "accuracy", "discordance", "difference"),
                         [(10, 0.7, 0.2, 0.0), (30, 0.5, 0.3, 0.1), (100, 0.8, 0.1, -0.05),
                          (400, 0.6, 0.25, 0.0)])  # fmt: skip
def test_the_paired_accuracy_interval_covers(n: int, accuracy: float, discordance: float, difference: float) -> None:
    rng = np.random.default_rng(n)
    wins, losses = (discordance + difference) / 2, (discordance - difference) / 2
    probabilities = [accuracy - losses, wins, losses, 1 - accuracy - wins]
    covered = 0
    trials = 1500
    for table in rng.multinomial(n, probabilities, size=trials):
        both, win, loss, neither = table
        base = np.array([1] * both + [0] * win + [1] * loss + [0] * neither, dtype=float)
        cand = np.array([1] * both + [1] * win + [0] * loss + [0] * neither, dtype=float)
        interval = paired_difference_ci(base, cand, 0.95)
        covered += interval.low <= difference <= interval.high
    assert covered / trials >= 0.93, covered / trials


def test_the_latency_model_recovers_a_line_and_reaches_every_config() -> None:
    rng = np.random.default_rng(0)
    tokens = rng.integers(200, 3000, 200).astype(float)
    seconds = 0.3 + 0.004 * tokens + rng.normal(0, 0.05, tokens.size)
    model = fit_latency(tokens, seconds)
    assert model is not None and abs(model.slope - 0.004) < 2e-4 and abs(model.intercept - 0.3) < 0.05
    assert 0.03 < model.residual_sd < 0.07
    short, long = latency_percentiles(model, [500] * 10), latency_percentiles(model, [2500] * 10)
    assert long["p95"] > short["p95"] and abs(short["p50"] - (0.3 + 0.004 * 500)) < 0.05


def _rows(kind: dict[str, tuple[bool, bool, int]]) -> pd.DataFrame:
    """Answer-check rows: per question (stuff right, retrieve right, document tokens)."""
    out = []
    for qid, (stuffed, retrieved, doc_tokens) in kind.items():
        common = {"question_id": qid, "doc_tokens": doc_tokens, "first_token_s": np.nan}
        out.append(
            common | {"config_id": "stuff", "arm": "stuff", "correct": stuffed, "planned_tokens": doc_tokens + 300}
        )
        out.append(common | {"config_id": "prod", "arm": "retrieve", "correct": retrieved, "planned_tokens": 900})
    frame = pd.DataFrame(out)
    frame["correct"] = frame["correct"].astype("boolean")
    return frame


def test_the_routing_rule_stuffs_only_lengths_where_stuffing_is_shown_not_worse() -> None:
    short = {f"s{i}": (True, True, 400) for i in range(120)}
    long = {f"l{i}": (i % 2 == 0, True, 6000) for i in range(120)}  # stuffing long documents loses half
    caps = RoutingCaps(accuracy_margin=0.05, cost_max_rise_pct=None, latency_max_rise_pct=None)
    found = stuff_or_retrieve(_rows(short | long), "prod", caps, lambda t: t * 1e-6, 1000.0, None, acl_documents=3)
    assert found["stuff_up_to_tokens"] == 500 and found["rule"].startswith("documents up to 500 tokens go in whole")
    assert "3 documents with an access-control list always through retrieval" in found["rule"]
    costly = RoutingCaps(accuracy_margin=0.05, cost_max_rise_pct=10, latency_max_rise_pct=None)
    middling = {f"m{i}": (True, True, 1500) for i in range(120)}  # stuffed: 1,800 tokens against retrieval's 900
    refused = stuff_or_retrieve(_rows(middling), "prod", costly, lambda t: t * 1e-6, 1000.0, None)
    assert refused["stuff_up_to_tokens"] is None and refused["rule"].startswith("always retrieve")
    assert "$/query +100%" in refused["rule"], refused["rule"]


PARAGRAPH = "Background paragraph about the office, the calendar, the people and the plans for next year. " * 2
FILLER = "\n\n".join([PARAGRAPH + "More words about the weather in the valley."] * 3)


def planted_set(root: Path, n: int = 40) -> Path:
    """Each document: three filler paragraphs (about 230 characters each), then the answer's paragraph. A
    256-character chunk starts at the answer's paragraph; a 1024-character chunk starts at the filler, so the
    fake's first words never hold the answer."""
    docs, questions = {}, []
    for i in range(n):
        code = f"ZX{i:03d}Q"
        text = f"{FILLER}\n\nThe access code for room {i} is {code}. It changes every spring.\n"
        docs[f"room-{i:03d}"] = text
        questions.append({"id": f"q{i:03d}", "question": f"What is the access code for room {i}?", "answer": code,
                          "answers": [code], "answerable": True, "evidence": [evidence(f"room-{i:03d}", text, code)],
                          "evidence_mode": "any", "tags": {"lang": "en"}})  # fmt: skip
    return write_set(root, docs, questions)


def test_the_gate_fails_a_candidate_whose_answers_are_worse_though_its_retrieval_passes(tmp_path: Path) -> None:
    labelset = planted_set(tmp_path / "set")
    margins = tmp_path / "margins.yaml"
    margins.write_text("confidence: 0.95\nn_resamples: 2000\nseed: 0\nchecks:\n  recall: {max_drop: 0.02}\n"
                       "  answer_accuracy: {max_drop: 0.05}\n", encoding="utf-8")  # fmt: skip
    large = "recursive-s1024-o0|bm25|none|k1|t0"
    args = [
        sys.executable, "-m", "evalkit.sweep", f"labelset.path={labelset}", f"reports_dir={tmp_path / 'r'}",
        f"cache_path={tmp_path / 'c.sqlite'}", "chunk_size=[256,1024]", "chunk_overlap=[0]", "top_k=[1]",
        "threshold=[0]", "baseline.chunk_size=256", "baseline.chunk_overlap=0", "baseline.top_k=1",
        "baseline.threshold=0", "generator=fake", "position=off", "report=false", "progress=false",
        "answer_check.preset=custom", "answer_check.questions=40", f"answer_check.configs=[{large}]",
        f"objective.margins={margins}", "run_id=planted",
    ]  # fmt: skip
    done = subprocess.run(args, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    run = tmp_path / "r" / "planted"
    summary = pd.read_csv(run / "summary.csv").set_index("config_id")
    assert summary["recall"].min() == 1.0, "both chunkings retrieve the gold"
    check = json.loads((run / "answer_check" / "check.json").read_text(encoding="utf-8"))
    effect = check["effects"][large]["accuracy"]
    assert effect["production"] == 1.0 and effect["candidate"] == 0.0 and effect["verdict"] == "shown worse"
    # Clustered by document as the gate is: Newcombe's interval widened to the cluster bootstrap's.
    assert effect["method"].startswith("newcombe and cluster bootstrap (")
    assert "answers (custom check, 40 questions, fake-echo)" in done.stderr
    # The retrieval stage's own latency, one query at a time, beside each named config's answers.
    timed = json.loads((run / "retrieval_latency.json").read_text(encoding="utf-8"))
    assert timed["sample"] == 12 and set(timed["chunkings"]) == {"recursive-s256-o0", "recursive-s1024-o0"}
    named = json.loads((run / "recommendation.json").read_text(encoding="utf-8"))["answers"]["named"]
    for entry in named:
        seconds = entry["retrieval_seconds"]
        assert seconds["stages"]["search"]["n"] == 12 and 0 < seconds["p50"] <= seconds["p95"], entry
    assert "retrieval p50 " in done.stderr
    gate = subprocess.run([sys.executable, "-m", "evalkit.gate", "--run", str(run), "--candidate-config", large,
                           "--margins", str(margins)], capture_output=True, text=True, cwd=tmp_path)  # fmt: skip
    assert gate.returncode == 1, gate.stderr
    verdicts = json.loads((run / "gate.json").read_text(encoding="utf-8"))["checks"]
    by_metric = {c["metric"]: c for c in verdicts}
    assert by_metric["recall"]["passed"] and not by_metric["answer_accuracy"]["passed"]
    assert by_metric["answer_accuracy"]["method"].startswith("Newcombe interval, exact McNemar")
    first = pd.read_parquet(run / "answer_check" / "rows.parquet")
    assert (first["answer_s"] > 0).all() and check["run"]["seconds_per_answer"] is not None
    # The same command again: every answer comes from the cache, nothing is asked twice.
    again = subprocess.run(args, capture_output=True, text=True, cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    rows = pd.read_parquet(run / "answer_check" / "rows.parquet")
    assert rows["sent"].all() and rows["cached"].all()
    # ...and the check's time is still the first run's work (issue 45: it read 0.0 after a resume).
    assert rows["answer_s"].tolist() == first["answer_s"].tolist()
    resumed = json.loads((run / "answer_check" / "check.json").read_text(encoding="utf-8"))["run"]
    assert resumed["seconds"] == check["run"]["seconds"]
    assert resumed["seconds_per_answer"] == check["run"]["seconds_per_answer"]
