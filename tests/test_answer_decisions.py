"""Answers decide honestly: absence of evidence never vetoes and never passes.

A planted set (deterministic fake generator: it answers with the first words of the first context block):
every document is two filler paragraphs, then (odd documents) a decoy paragraph that repeats the question's
words without the answer, then the answer's paragraph.

- production ``s256 k1``: the decoy's chunk outranks the answer's on odd documents: recall 0.5, and its
  answers are right exactly where the answer's chunk comes first (even documents);
- ``s1024 k1``: the whole document is one chunk: recall 1.0, but its first words are filler: every answer
  wrong. On retrieval it is the pick; its answers are worse by 50 points;
- ``s512 k1``: recall 1.0; the decoy and the answer share a chunk, so it answers as production does.

With the prompt-token cap lifted (the team's own ``objective.prompt_tokens_max``), ``answer_check=off``
recommends ``s1024``. A smoke check (2 questions) leaves every piece of advice as off's, whether its answers
all agree (seed 5: two odd documents, every answer wrong, as the issue's seven equal refusals) or not (seed
0). A custom check of 40 questions shows ``s1024`` worse and removes exactly it: ``s512``, never answered,
is decided on retrieval as off decides it. The gate says "not checked" for ``s512``, fails closed in CI mode,
and with ``--answer`` answers it on the check's sample and decides.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.conftest import evidence, write_set

PARAGRAPH = "Background paragraph about the office, the calendar, the people and the plans for next year. " * 2
FILLER = "\n\n".join([PARAGRAPH + "More words about the weather in the valley."] * 2)
LARGE, MIDDLE = "recursive-s1024-o0|bm25|none|k1|t0", "recursive-s512-o0|bm25|none|k1|t0"
PRODUCTION = "recursive-s256-o0|bm25|none|k1|t0"


def planted_set(root: Path, n: int = 40) -> Path:
    docs, questions = {}, []
    for i in range(n):
        code = f"ZX{i:03d}Q"
        decoy = (
            f"Which access code opens room {i}? What is the access code for room {i}? Room {i} access code "
            f"questions go to the desk; the access code for room {i} is kept by the desk. Ask about the access "
            f"code for room {i} there, where the access code for room {i} is written down.\n\n"
        )
        text = f"{FILLER}\n\n{decoy if i % 2 else ''}The access code for room {i} is {code}. It changes every spring.\n"
        docs[f"room-{i:03d}"] = text
        questions.append({"id": f"q{i:03d}", "question": f"What is the access code for room {i}?", "answer": code,
                          "answers": [code], "answerable": True, "evidence": [evidence(f"room-{i:03d}", text, code)],
                          "evidence_mode": "any", "tags": {"lang": "en"}})  # fmt: skip
    return write_set(root, docs, questions)


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("answers-decide")
    labelset = planted_set(root / "set")
    margins = root / "margins.yaml"
    margins.write_text("confidence: 0.95\nn_resamples: 2000\nseed: 0\nchecks:\n  recall: {max_drop: 0.02}\n"
                       "  answer_accuracy: {max_drop: 0.05}\n", encoding="utf-8")  # fmt: skip
    common = [
        f"labelset.path={labelset}", f"reports_dir={root / 'r'}", f"cache_path={root / 'c.sqlite'}",
        "chunk_size=[256,512,1024]", "chunk_overlap=[0]", "top_k=[1]", "threshold=[0]", "baseline.chunk_size=256",
        "baseline.chunk_overlap=0", "baseline.top_k=1", "baseline.threshold=0", "generator=fake", "position=off",
        "report=false", "progress=false", f"objective.margins={margins}", "objective.prompt_tokens_max=100000",
    ]  # fmt: skip
    runs = {
        "off": ["answer_check=off"],
        "smoke-agree": ["answer_check=smoke", "answer_check.seed=5"],
        "smoke": ["answer_check=smoke"],
        "custom": ["answer_check=custom", "answer_check.questions=40", "answer_check.roles=[recommended]"],
        "powered": ["answer_check=powered", "answer_check.pilot_questions=20"],
    }
    out: dict[str, Any] = {"root": root, "common": common, "margins": margins}
    for name, extra in runs.items():
        done = subprocess.run([sys.executable, "-m", "evalkit.sweep", *common, *extra, f"run_id={name}"],
                              capture_output=True, text=True, cwd=root, env=_env())  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        out[name] = {
            "stderr": done.stderr,
            "dir": root / "r" / name,
            "record": json.loads((root / "r" / name / "recommendation.json").read_text(encoding="utf-8")),
        }
    return out


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}  # CI mode is what a test chooses, not the runner's
    return env | extra


def _advice(record: dict[str, Any]) -> dict[str, Any]:
    return {
        "decision": record["decision"],
        "recommended": (record.get("recommended") or {}).get("config_id"),
        "cheaper": (record.get("cheaper_pick") or {}).get("config_id"),
        "gate_passing": [c["config_id"] for c in (record.get("gate_passing") or {}).get("configs") or []],
        "near_misses": [m["config_id"] for m in record.get("near_misses") or []],
    }


def test_retrieval_alone_recommends_the_config_whose_answers_are_worse(planted: dict[str, Any]) -> None:
    advice = _advice(planted["off"]["record"])
    assert advice["recommended"] == LARGE and set(advice["gate_passing"]) == {LARGE, MIDDLE}, advice


@pytest.mark.parametrize("run", ["smoke-agree", "smoke"])
def test_a_smoke_check_leaves_every_piece_of_advice_as_answer_check_off(planted: dict[str, Any], run: str) -> None:
    record = planted[run]["record"]
    assert _advice(record) == _advice(planted["off"]["record"])
    block = record["answers"]
    assert block["checked"] and block["smoke"] and not block["decides"] and block["changed"] == []
    states = {n["config_id"]: n["state"] for n in block["named"] if n["state"]}
    assert states == {LARGE: "not shown", MIDDLE: "not shown"}, states
    if run == "smoke-agree":  # every answer the same (all wrong): still nothing shown, nothing removed
        effect = next(n for n in block["named"] if n["config_id"] == LARGE)["accuracy_delta"]
        assert effect["delta"] == 0.0 and effect["wins"] == effect["losses"] == 0 and effect["production"] == 0.0
    assert "answers did not decide: a smoke check reports and never decides" in planted[run]["stderr"]


def test_answers_shown_worse_remove_exactly_that_candidate(planted: dict[str, Any]) -> None:
    off, custom = _advice(planted["off"]["record"]), _advice(planted["custom"]["record"])
    block = planted["custom"]["record"]["answers"]
    states = {n["config_id"]: n["state"] for n in block["named"] if n["state"]}
    assert states == {LARGE: "shown worse"}
    assert custom["gate_passing"] == [c for c in off["gate_passing"] if c != LARGE]
    assert custom["recommended"] == MIDDLE, "never answered: decided on retrieval, as off decides it"
    assert any("recommendation" in line for line in block["changed"]), block["changed"]
    assert "answers decided: recommendation: " in planted["custom"]["stderr"]


def _gate(
    planted: dict[str, Any], candidate: str, *extra: str, env: dict[str, str] | None = None
) -> tuple[int, str, dict]:
    run = planted["custom"]["dir"]
    done = subprocess.run([sys.executable, "-m", "evalkit.gate", "--run", str(run), "--candidate-config", candidate,
                           "--margins", str(planted["margins"]), *extra],
                          capture_output=True, text=True, cwd=planted["root"], env=env or _env())  # fmt: skip
    payload = json.loads((run / "gate.json").read_text(encoding="utf-8")) if done.returncode in (0, 1) else {}
    return done.returncode, done.stderr, payload


def test_the_gate_says_not_checked_and_fails_closed_in_ci_mode(planted: dict[str, Any]) -> None:
    code, stderr, payload = _gate(planted, MIDDLE)
    assert code == 0, stderr  # retrieval passes; the answers decide nothing either way
    assert f"answers: not checked for {MIDDLE}" in stderr
    assert payload["answers"]["state"] == "not checked" and not payload["answers"]["fails_closed"]
    code, stderr, payload = _gate(planted, MIDDLE, "--require-answers")
    assert code == 1 and payload["verdict"] == "fail" and payload["answers"]["fails_closed"], stderr
    code, stderr, _ = _gate(planted, MIDDLE, env=_env(CI="true"))
    assert code == 1 and "fails the gate in CI mode" in stderr
    # A config the check answered and showed worse fails on its answers, CI mode or not.
    code, stderr, payload = _gate(planted, LARGE)
    checks = {c["metric"]: c for c in payload["checks"]}
    assert code == 1 and checks["recall"]["passed"] and not checks["answer_accuracy"]["passed"], stderr


def test_the_gate_answers_what_it_gates(planted: dict[str, Any]) -> None:
    code, stderr, payload = _gate(planted, MIDDLE, "--answer", "--require-answers", *planted["common"])
    assert code == 0, stderr[-2000:]
    assert f"answering {MIDDLE}" in stderr
    assert payload["answers"]["state"] == "not shown", payload["answers"]  # 40 equal answers: +0 [-9.2, +9.2]
    assert any(s["metric"] == "answer_accuracy" and s["state"] == "not shown" for s in payload["skipped"])
    rows = json.loads((planted["custom"]["dir"] / "answer_check" / "check.json").read_text(encoding="utf-8"))
    assert {c["config_id"] for c in rows["configs"]} >= {MIDDLE, LARGE}
    # Asked again: nothing to answer, the same verdict.
    code, stderr, _ = _gate(planted, MIDDLE, "--answer", *planted["common"])
    assert code == 0 and "answering" not in stderr


@pytest.mark.parametrize("constrains", [False, True])
def test_a_stand_ins_latency_is_never_a_gate_check(planted: dict[str, Any], tmp_path: Path, constrains: bool) -> None:
    """The check's latency record says whose it is; only production's generator (or its profile) is gated."""
    run = tmp_path / "run"
    shutil.copytree(planted["custom"]["dir"], run)
    path = run / "answer_check" / "check.json"
    check = json.loads(path.read_text(encoding="utf-8"))
    source = "production's generator (m)" if constrains else "stand-in local (production serves claude-sonnet-5)"
    check["latency"] = {"intercept": 0.5, "slope": 0.002, "residual_sd": 0.1, "n": 30, "r_squared": 0.9,
                        "slope_se": 0.0001, "residuals": [-0.1, 0.0, 0.1], "source": source,
                        "constrains": constrains}  # fmt: skip
    path.write_text(json.dumps(check), encoding="utf-8")
    margins = tmp_path / "margins.yaml"
    margins.write_text("checks:\n  recall: {max_drop: 0.02}\n  first_token_s: {max_rise_pct: 10}\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "evalkit.gate", "--run", str(run), "--candidate-config", MIDDLE,
                           "--margins", str(margins)], capture_output=True, text=True, env=_env())  # fmt: skip
    payload = json.loads((run / "gate.json").read_text(encoding="utf-8"))
    gated = [c["metric"] for c in payload["checks"]]
    if constrains:
        assert "first_token_s" in gated, done.stderr
    else:
        assert "first_token_s" not in gated and done.returncode == 0, done.stderr
        reason = next(s["reason"] for s in payload["skipped"] if s["metric"] == "first_token_s")
        assert "stand-in" in reason and "never gated" in reason


def test_a_stratified_powered_check_and_the_gate_compute_the_same_evidence(planted: dict[str, Any]) -> None:
    """The powered check's stratified estimate removes the config shown worse; the gate recomputes each
    interval from design.parquet with the same function; identical contexts are counted, never asked."""
    run = planted["powered"]["dir"]
    check = json.loads((run / "answer_check" / "check.json").read_text(encoding="utf-8"))
    assert check["design"] == "stratified" and (run / "answer_check" / "design.parquet").is_file()
    assert check["sizing"]["askable"][MIDDLE] < 40, "s512 returns production's very chunk for some questions"
    design = pd.read_parquet(run / "answer_check" / "design.parquet")
    hits = design.groupby("config_id")["hit"].mean()
    assert hits[LARGE] == 1.0 and hits[PRODUCTION] == 0.5, "the strata read each config's own retrieval"
    assert _advice(planted["powered"]["record"])["recommended"] == MIDDLE
    for config_id, state in ((LARGE, "shown worse"), (MIDDLE, "not shown")):
        effect = check["effects"][config_id]["accuracy"]
        assert effect["verdict"] == state, (config_id, effect)
        command = [sys.executable, "-m", "evalkit.gate", "--run", str(run), "--candidate-config", config_id,
                   "--margins", str(planted["margins"])]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, env=_env())
        payload = json.loads((run / "gate.json").read_text(encoding="utf-8"))
        found = next((c for c in payload["checks"] if c["metric"] == "answer_accuracy"), None)
        if state == "shown worse":
            assert done.returncode == 1 and found is not None
            assert (found["delta_low"], found["delta_high"]) == pytest.approx((effect["low"], effect["high"]))
        else:
            assert done.returncode == 0 and found is None, done.stderr
            assert payload["answers"]["state"] == "not shown"
