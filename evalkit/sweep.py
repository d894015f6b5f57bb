"""``python -m evalkit.sweep``: the Hydra entry point of a sweep.

This module only reads the config into a typed plan, reads the labelled set,
and hands both to :mod:`evalkit.pipeline.driver`; then it writes the report.
Errors a user can fix (a bad config, a broken labelled set, a failed call)
print one line each and exit with code 2, no traceback; a budget stop exits 3.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import hydra
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from evalkit.confdir import conf_dir
from evalkit.labels.read import load_labelset
from evalkit.overrides import composition_error, hydra_mode, syntax_error
from evalkit.pipeline.config import read_config
from evalkit.pipeline.driver import execute
from evalkit.pipeline.errors import CALL_ERRORS, SETUP_ERRORS, BudgetExceeded, LabelsetError
from evalkit.pipeline.plan import SweepPlan, build_plan
from evalkit.pipeline.sweep import config_record
from evalkit.project.help import help_text
from evalkit.project.layers import ConfigSource, find_source, hydra_overrides
from evalkit.signals import Stopped, stop_on_signals
from evalkit.tracking.settings import TrackerSettings


def fail(lines: list[str]) -> NoReturn:
    for line in lines:
        print(f"evalkit: error: {line}", file=sys.stderr)
    sys.exit(2)


def plan_from(cfg: DictConfig) -> tuple[SweepPlan, dict[str, Any], TrackerSettings | None]:
    """The typed plan of a composed config, the config as read (for the manifest), and the tracker if any."""
    try:
        plain: dict[str, Any] = OmegaConf.to_container(cfg, resolve=True)  # type: ignore[assignment]
    except Exception as exc:  # omegaconf raises many types for a bad interpolation
        fail([f"config: {exc}".splitlines()[0]])
    try:
        config = read_config(plain)
        plan = build_plan(config)
    except SETUP_ERRORS as exc:
        fail([str(exc)])
    return plan, config_record(config), config.tracker


def sweep(cfg: DictConfig) -> Path:
    """Validate, then run or resume the sweep; returns the run folder."""
    plan, record, tracker = plan_from(cfg)
    track = tracker is not None and not plan.options.dry_run
    if track:
        _check_tracker(tracker, plan)
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

        html = write_report(run_dir, compare=plan.options.compare, progress=plan.options.progress)
        print(f"evalkit: report {html}", file=sys.stderr)
    if track:
        _log_to_tracker(run_dir, tracker, plan)
    return run_dir


def _check_tracker(tracker: TrackerSettings, plan: SweepPlan) -> None:
    from evalkit.tracking.mlflow_log import TrackingError, check_ready

    try:
        check_ready(tracker, plan.options.reports_dir)
    except TrackingError as exc:
        fail([str(exc)])


def _log_to_tracker(run_dir: Path, tracker: TrackerSettings, plan: SweepPlan) -> None:
    """The finished run folder (summary, decision, manifest, report) logged; a failure leaves the folder complete."""
    from evalkit.tracking.mlflow_log import TrackingError, log_run

    try:
        logged = log_run(run_dir, tracker, plan.options.reports_dir)
    except TrackingError as exc:
        fail([f"{exc} (the run folder is complete; log it later with python -m evalkit.tracking {run_dir})"])
    where = f"{logged.run_id} ({logged.child_runs} configs) at {logged.uri}"
    print(f"evalkit: logged to MLflow run {where}", file=sys.stderr)


def _task(cfg: DictConfig) -> None:
    sweep(cfg)


def run_once(source: ConfigSource, task: Callable[[DictConfig], Any]) -> None:
    """One run as ``hydra.main`` runs it (its output folder, logging, ``HydraConfig``), composed once.

    ``hydra.main`` composes a single run twice (once to learn the mode, once to run); here the
    config is composed once and handed to Hydra's own job runner.
    """
    from hydra import initialize_config_dir
    from hydra._internal.callbacks import Callbacks
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.utils import run_job
    from hydra.types import HydraContext, RunMode

    overrides = hydra_overrides(source.argv)
    primary = conf_dir()
    if source.team_dir is not None:  # the team's folder first, evalkit's after it (as compose_config does)
        primary, overrides = source.team_dir, [*overrides, f"hydra.searchpath=[file://{conf_dir()}]"]
    with initialize_config_dir(version_base="1.3", config_dir=str(primary), job_name="sweep"):
        runner = GlobalHydra.instance().hydra
        assert runner is not None
        cfg = runner.compose_config(source.config_name, overrides, run_mode=RunMode.RUN, with_log_configuration=True)
        with open_dict(cfg):
            cfg.hydra.mode = RunMode.RUN
        callbacks = Callbacks(cfg)
        callbacks.on_run_start(config=cfg, config_name=source.config_name)
        context = HydraContext(config_loader=runner.config_loader, callbacks=callbacks)
        done = run_job(
            hydra_context=context, task_function=task, config=cfg, job_dir_key="hydra.run.dir", job_subdir_key=None
        )
        callbacks.on_run_end(config=cfg, config_name=source.config_name, job_return=done)
        _ = done.return_value  # raises what the task raised


def main(argv: Sequence[str] | None = None) -> None:
    """Let Hydra compose the config (once) and run the sweep (or the multirun); its errors are one line each.

    A single run is checked only for what needs no composition (syntax, ``--config-dir``) before Hydra
    composes it; a failed composition is explained afterwards (the nearest key or option). A ``-m``
    sweep composes every value first, so a bad third value stops before the first job runs.
    ``--help`` is evalkit's own; ``--verbose`` (or ``HYDRA_FULL_ERROR=1``) lets tracebacks through.
    A team's ``conf/`` (``--config-dir``, or ``./conf/project.yaml``) is searched before evalkit's own.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    verbose = "--verbose" in args or os.environ.get("HYDRA_FULL_ERROR") == "1"
    args = [a for a in args if a != "--verbose"]
    source = find_source(args, Path.cwd())
    if "-h" in args or "--help" in args:
        print(help_text(source.search))
        return
    multirun = any(a in ("-m", "--multirun") for a in source.argv)
    problem = composition_error(source, source.argv) if multirun else syntax_error(source, source.argv)
    if problem is not None:
        fail([problem])
    # Hydra reads sys.argv; HYDRA_FULL_ERROR makes it raise instead of printing its own multi-line report.
    sys.argv = [sys.argv[0], *source.argv]
    os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        if multirun or hydra_mode(source.argv):  # Hydra's own modes (completion, --cfg) need its own main
            hydra.main(version_base="1.3", config_path=str(conf_dir()), config_name=source.config_name)(_task)()
        else:
            run_once(source, _task)
    except (HydraException, OmegaConfBaseException) as exc:
        if verbose:
            raise
        # The error path only: compose again to name the nearest key or option.
        explained = None if multirun else composition_error(source, source.argv)
        fail([explained or f"{' '.join(str(exc).split())} (--verbose for the traceback)"])
    except Exception as exc:
        if verbose:
            raise
        print(f"evalkit: internal error: {type(exc).__name__}: {exc} (--verbose for the traceback)", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
