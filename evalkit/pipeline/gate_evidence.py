"""The gate's answer side: the answer columns and estimates a run's check gives its configs, and what the
answers say about the pair being gated (one of :mod:`evalkit.scoring.evidence`'s states).

``python -m evalkit.gate`` reads a run folder's answer check through these; the sweep's decision builds the
same from its own outcome (:mod:`evalkit.pipeline.decision`), so both gate the same evidence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from evalkit.answers.check.stratified import design_estimates
from evalkit.pipeline.gate_answers import answered_configs
from evalkit.run import files
from evalkit.run.folder import Run
from evalkit.scoring.answer_columns import answered_values, with_answer_columns
from evalkit.scoring.evidence import NOT_CHECKED, NOT_SHOWN, SHOWN_NOT_WORSE, SHOWN_WORSE, combined_state
from evalkit.scoring.gatecheck import EVIDENCE_COLUMNS, Check
from evalkit.scoring.latency import LatencyModel
from evalkit.scoring.registry import FIRST_TOKEN_S, MEASURES


def production_latency(run: Run) -> LatencyModel | None:
    """The check's latency line when it is production's (never a stand-in's)."""
    record = (run.answer_check or {}).get("latency") or {}
    return LatencyModel.from_record(record) if record and record.get("constrains", True) else None


def answer_design(run: Run) -> Any:
    """A stratified check's estimates for any two of its configs (None: answers are paired per question)."""
    check, rows = run.answer_check or {}, run.answer_rows
    path = run.root / files.ANSWER_CHECK_DESIGN
    if check.get("design") != "stratified" or rows is None or not path.is_file():
        return None
    return design_estimates(rows, pd.read_parquet(path), check)


def results_with_answers(run: Run) -> pd.DataFrame:
    """The run's results with the answer check's columns; first-token seconds only when the check's latency is
    production's (its generator, or a latency profile): a stand-in's speed is never a gate check."""
    if run.answer_rows is None or run.answer_check is None:
        return run.results
    latency = production_latency(run)
    system = float(run.answer_check.get("system_tokens") or 0.0)
    answered = with_answer_columns(run.results, answered_values(run.answer_rows), latency, system)
    assert isinstance(answered, pd.DataFrame)
    return answered


def answer_evidence(
    sides: Sequence[tuple[Run, str]],
    checks: Sequence[Check],
    skipped: Sequence[Mapping[str, Any]],
    require: bool,
) -> tuple[dict[str, Any] | None, tuple[Check, ...], tuple[Mapping[str, Any], ...]]:
    """What the answers say about this pair, in one of the evidence states, and the checks as they decide.

    None when neither run has an answer check (answer_check=off: the gate is retrieval's). A smoke check's
    answer checks are reported as skipped (a smoke check reports and never decides). ``require`` (CI mode):
    a compared config the check did not answer fails the gate closed. ``sides``: (run, config) of the baseline,
    then the candidate.
    """
    runs = [run for run, _ in sides if run.answer_check is not None]
    if not runs:
        return None, tuple(checks), tuple(skipped)
    stand_in = next((latency for run in runs if not (latency := (run.answer_check or {}).get("latency") or {})
                     .get("constrains", True)), None)  # fmt: skip
    if stand_in is not None:  # say why latency is not a check here, not "no answers"
        skipped = [{**s, "state": NOT_CHECKED, "reason": f"first-token latency of a {stand_in.get('source')}: shown in "
                    "the report, never gated (python -m evalkit.latency probe measures production's)"}
                   if MEASURES[s["metric"]].column == FIRST_TOKEN_S else s for s in skipped]  # fmt: skip
    smoke = any(((run.answer_check or {}).get("run") or {}).get("preset") == "smoke" for run in runs)
    if smoke:
        moved = [c for c in checks if MEASURES[c.metric].column in EVIDENCE_COLUMNS]
        checks = [c for c in checks if c not in moved]
        skipped = [*skipped, *({"metric": c.metric, "state": SHOWN_NOT_WORSE if c.passed else SHOWN_WORSE,
                                "reason": "a smoke check reports and never decides"} for c in moved)]  # fmt: skip
    unanswered = [config_id for run, config_id in sides if config_id not in answered_configs(run)]
    answer_states = [
        (c.passed and SHOWN_NOT_WORSE) or SHOWN_WORSE
        for c in checks
        if MEASURES[c.metric].column in EVIDENCE_COLUMNS and MEASURES[c.metric].column != FIRST_TOKEN_S
    ]
    answer_states += [str(s["state"]) for s in skipped
                      if s.get("state") and MEASURES[s["metric"]].column != FIRST_TOKEN_S]  # fmt: skip
    state = NOT_CHECKED if unanswered else combined_state(answer_states)
    if smoke and state in (SHOWN_NOT_WORSE, SHOWN_WORSE):
        state = NOT_SHOWN
    if unanswered:
        line = f"answers: not checked for {', '.join(dict.fromkeys(unanswered))}"
        hint = " (python -m evalkit.gate ... --answer answers it on the check's sample)"
    else:
        line, hint = f"answers: {state} for {sides[-1][1]}", ""
    fails = require and state == NOT_CHECKED
    record = {"state": state, "line": line + hint, "unanswered": unanswered, "smoke": smoke, "required": require,
              "fails_closed": fails}  # fmt: skip
    return record, tuple(checks), tuple(skipped)
