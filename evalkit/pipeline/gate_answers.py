"""The gate answers what it gates: configs a run's answer check did not answer, answered on the check's sample.

``python -m evalkit.gate --answer`` calls :func:`answer_configs` for the baseline's and the candidate's runs
before it decides. The check is run again with the configs it answered plus the missing ones, at the size
and seed it ran with (the same seeded questions: the comparison stays paired), with the generator the
composed config names; every answer it already gave comes from the cache, so only the new configs' are
asked, and a killed gate resumes where it stopped. The run's ``answer_check/`` files are rewritten whole.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pandas as pd

from evalkit.answers.check.experiment import answer_check
from evalkit.cache import Cache
from evalkit.labels.read import load_labelset
from evalkit.pipeline.plan import SweepPlan
from evalkit.pipeline.sweep import token_family
from evalkit.run.folder import Run
from evalkit.scoring.gatecheck import GateConfig
from evalkit.scoring.per_config import config_rows


def answered_configs(run: Run) -> set[str]:
    """Configs of the run whose answers the check scored (the retrieve arm)."""
    rows = run.answer_rows
    if rows is None or run.answer_check is None:
        return set()
    scored = rows[(rows["arm"] == "retrieve") & rows["correct"].notna()]
    return set(scored["config_id"].astype(str))


def _preset(check: dict[str, Any] | Any) -> str:
    ran = check.get("run") or {}
    if ran.get("preset") == "smoke":
        return "smoke"
    return "powered" if check.get("design") == "stratified" else "custom"


def answer_configs(run: Run, config_ids: Sequence[str], plan: SweepPlan, gate: GateConfig) -> list[str]:
    """Answer ``config_ids`` the run's check did not answer; returns the ones answered now (empty: none missing).

    A run without an answer check (answer_check=off) has nothing to answer: the gate is retrieval's there.
    """
    check = run.answer_check
    if check is None:  # answer_check=off: the project gates on retrieval, nothing to answer
        print(f"evalkit.gate: {run.root.name}: no answer check in this run (answer_check=off): nothing to answer",
              file=sys.stderr)  # fmt: skip
        return []
    missing = [c for c in dict.fromkeys(config_ids) if c not in answered_configs(run)]
    if not missing:
        return []
    earlier = [str(c["config_id"]) for c in check.get("configs", [])]
    production = str(check["production"])
    asked = tuple(dict.fromkeys(c for c in [*earlier, *missing] if c != production))
    ran = check.get("run") or {}
    settings = replace(
        plan.answer_check,
        # the size it ran at (the same seeded questions); a smoke check stays one (it never decides), and a
        # stratified powered check plans again with the new pair in it (its seeded draws are the same: every
        # answer it gave is in the cache)
        preset=_preset(check),
        questions=max(2, int(ran.get("questions") or plan.answer_check.questions)),
        seed=int(ran["seed"]) if ran.get("seed") is not None else plan.answer_check.seed,
        unanswerable_share=float(ran.get("unanswerable_share", plan.answer_check.unanswerable_share)),
        configs=asked,
        roles=(),
        max_configs=len(asked) + 1,
    )
    job = replace(plan.answer_check_job(gate, token_family(plan)), settings=settings)
    labelset = load_labelset(plan.labelset_path)
    results = run.results

    def config_frame(config_id: str) -> pd.DataFrame:
        rows = config_rows(results, config_id)
        return rows[rows["config_id"] == config_id]

    print(f"evalkit.gate: answering {', '.join(missing)} on the check's {settings.questions} questions "
          f"(answers already given come from the cache)", file=sys.stderr)  # fmt: skip
    first = {"production": {"config_id": production}}
    with Cache(plan.options.cache_path) as cache:
        answer_check(job, first, run.summary, config_frame, labelset, cache, run.root)
    return missing
