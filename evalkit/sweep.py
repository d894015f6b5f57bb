"""``python -m evalkit.sweep``: the Hydra entry point of a sweep.

This module only reads the config into a typed plan, reads the labelled set,
and hands both to :mod:`evalkit.pipeline.driver`; then it writes the report.
Errors a user can fix (a bad config, a broken labelled set, a failed call)
print one line each and exit with code 2, no traceback; a budget stop exits 3.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, NoReturn

import hydra
from omegaconf import DictConfig, OmegaConf

from evalkit.labels.read import load_labelset
from evalkit.overrides import exit_on_composition_error
from evalkit.pipeline.config import CONF_DIR, read_config
from evalkit.pipeline.driver import execute
from evalkit.pipeline.errors import CALL_ERRORS, SETUP_ERRORS, BudgetExceeded, LabelsetError
from evalkit.pipeline.plan import SweepPlan, build_plan
from evalkit.pipeline.sweep import config_record
from evalkit.signals import Stopped, stop_on_signals


def fail(lines: list[str]) -> NoReturn:
    for line in lines:
        print(f"evalkit: error: {line}", file=sys.stderr)
    sys.exit(2)


def plan_from(cfg: DictConfig) -> tuple[SweepPlan, dict[str, Any]]:
    """The typed plan of a composed config, and the config as read (for the manifest)."""
    try:
        plain: dict[str, Any] = OmegaConf.to_container(cfg, resolve=True)  # type: ignore[assignment]
    except Exception as exc:  # omegaconf raises many types for a bad interpolation
        fail([f"config: {exc}".splitlines()[0]])
    try:
        config = read_config(plain)
        plan = build_plan(config)
    except SETUP_ERRORS as exc:
        fail([str(exc)])
    return plan, config_record(config)


def sweep(cfg: DictConfig) -> Path:
    """Validate, then run or resume the sweep; returns the run folder."""
    plan, record = plan_from(cfg)
    try:
        labelset = load_labelset(plan.labelset_path)
    except LabelsetError as exc:
        fail(exc.problems)
    for warning in labelset.warnings:
        print(f"evalkit: warning: {warning}", file=sys.stderr)
    try:
        with stop_on_signals():
            run_dir = execute(plan, labelset, record)
    except Stopped as exc:
        print("evalkit: stopped; finished units are kept; run the same command to resume", file=sys.stderr)
        sys.exit(exc.code)
    except BudgetExceeded as exc:
        print(f"evalkit: stopped: {exc}", file=sys.stderr)
        sys.exit(3)
    except SETUP_ERRORS as exc:  # e.g. position.chunking names a chunking the sweep did not run, a held lock
        fail([str(exc)])
    except CALL_ERRORS as exc:
        # What finished is on disk and every paid-for score is cached: the same command resumes.
        fail([f"{exc} (finished chunkings are kept; run the same command again to resume)"])
    if plan.options.report and not plan.options.dry_run:
        from evalkit.report import write_report

        html = write_report(run_dir, compare=plan.options.compare)
        print(f"evalkit: report {html}", file=sys.stderr)
    return run_dir


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def _hydra_main(cfg: DictConfig) -> None:
    sweep(cfg)


def main() -> None:
    """Check the overrides compose (one-line errors), then let Hydra run the sweep (or the multirun)."""
    exit_on_composition_error(CONF_DIR, sys.argv[1:])
    _hydra_main()


if __name__ == "__main__":
    main()
