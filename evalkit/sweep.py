"""``python -m evalkit.sweep``: the Hydra entry point of a sweep.

This module only reads the config into a typed plan, reads the labelled set,
and hands both to :mod:`evalkit.pipeline.driver`; then it writes the report.
Errors a user can fix (a bad config, a broken labelled set, a failed call)
print one line each and exit with code 2, no traceback; a budget stop exits 3.
"""

from __future__ import annotations

import copy
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from evalkit.confdir import conf_dir
from evalkit.console import warn
from evalkit.overrides import composition_error, hydra_mode, repeated_keys, syntax_error
from evalkit.project.help import help_text
from evalkit.project.layers import ConfigSource, compose_config, find_source, hydra_overrides, register_plugin_configs
from evalkit.signals import Stopped, stop_on_signals
from evalkit.usercode import UserCodeError, outside_evalkit

if TYPE_CHECKING:
    from evalkit.labels.read import LabelSet
    from evalkit.pipeline.plan import SweepPlan
    from evalkit.tracking.settings import TrackerSettings

# The stages (pipeline.driver and what it runs: scipy, pandas, pyarrow, the backends) are imported by the
# functions that use them, after the config is composed and read: --help and a config error wait for none.


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
    from evalkit.pipeline.config import ConfigError, read_config

    try:
        config = read_config(plain)
    except ConfigError as exc:  # before the plan (and every stage it imports) loads
        fail([hide_environment(str(exc), cfg, plain)])
    except Exception as exc:
        from evalkit.pipeline.errors import SETUP_ERRORS

        if not isinstance(exc, SETUP_ERRORS):
            raise
        fail([hide_environment(str(exc), cfg, plain)])
    from evalkit.pipeline.errors import SETUP_ERRORS
    from evalkit.pipeline.plan import build_plan
    from evalkit.pipeline.sweep import config_record

    try:
        plan = build_plan(config)
    except SETUP_ERRORS as exc:
        fail([hide_environment(str(exc), cfg, plain)])
    return plan, config_record(config), config.tracker


def hide_environment(line: str, cfg: DictConfig, plain: Mapping[str, Any]) -> str:
    """``line`` with every value read from the environment (``${oc.env:...}``) shown as its interpolation.

    A secret set in the environment must not reach a terminal or a CI log because a config value was bad.
    """
    raw = OmegaConf.to_container(cfg, resolve=False)
    for interpolation, value in _env_values(raw, plain):
        if value:
            line = _masked(line, value, interpolation)
    return line


SHORTEST_MASKED_PREFIX = 4
"""A message may cut a long value short ('/usr/bin:/u...'): its start is hidden too, to this many characters."""


def _masked(line: str, value: str, interpolation: str) -> str:
    if value in line:
        return line.replace(value, interpolation)
    for end in range(len(value) - 1, SHORTEST_MASKED_PREFIX - 1, -1):
        prefix = value[:end]
        if prefix in line:
            for cut in (f"'{prefix}...", f"{prefix}..."):
                line = line.replace(cut, f"'{interpolation}'" if cut.startswith("'") else interpolation)
            return line.replace(prefix, interpolation)
    return line


def _env_values(raw: Any, resolved: Any) -> list[tuple[str, str]]:
    if isinstance(raw, Mapping) and isinstance(resolved, Mapping):
        return [pair for key in raw if key in resolved for pair in _env_values(raw[key], resolved[key])]
    if isinstance(raw, list) and isinstance(resolved, list):
        return [pair for r, v in zip(raw, resolved, strict=False) for pair in _env_values(r, v)]
    if isinstance(raw, str) and "oc.env" in raw:
        return [(raw, str(resolved))] + [(raw, str(v)) for v in (resolved if isinstance(resolved, list) else [])]
    return []


@dataclass(frozen=True)
class Prepared:
    """What every check before any work produced: the plan, the config as read, the tracker, the labelled set."""

    plan: SweepPlan
    record: dict[str, Any]
    tracker: TrackerSettings | None
    labelset: LabelSet

    def parts(self) -> tuple[SweepPlan, dict[str, Any], TrackerSettings | None, LabelSet]:
        return self.plan, self.record, self.tracker, self.labelset


def prepare(cfg: DictConfig) -> Prepared:
    """Every check a run makes before any work (config, tracker, labelled set, writable paths); exit 2 on a problem."""
    plan, record, tracker = plan_from(cfg)
    from evalkit.labels.read import LabelsetError, load_labelset
    from evalkit.pipeline.driver import check_paths
    from evalkit.pipeline.errors import SETUP_ERRORS

    for warning in plan.warnings():
        warn(warning)
    if tracker is not None and not plan.options.dry_run:
        _check_tracker(tracker, plan)
    try:
        labelset = load_labelset(plan.labelset_path)
    except LabelsetError as exc:
        fail(exc.problems)
    try:
        check_paths(plan)  # last: a refused config or set writes nothing, a refused path is named
    except SETUP_ERRORS as exc:
        fail([str(exc)])
    return Prepared(plan, record, tracker, labelset)


def sweep(cfg: DictConfig, prepared: Prepared | None = None) -> Path:
    """Validate (unless ``prepared`` says it was), then run or resume the sweep; returns the run folder."""
    from evalkit.pipeline.driver import position_failure

    plan, record, tracker, labelset = (prepared or prepare(cfg)).parts()
    track = tracker is not None and not plan.options.dry_run
    for warning in labelset.warnings:
        warn(warning)
    run_dir = _execute(plan, labelset, record)
    if plan.options.report and not plan.options.dry_run:
        _write_report(run_dir, plan)
    if track:
        _log_to_tracker(run_dir, tracker, plan)
    failure = position_failure(run_dir)
    if failure is not None:
        fail([failure])
    return run_dir


def _execute(plan: SweepPlan, labelset: LabelSet, record: dict[str, Any]) -> Path:
    from evalkit.pipeline.driver import execute
    from evalkit.pipeline.errors import (
        CALL_ERRORS,
        SETUP_ERRORS,
        BudgetExceeded,
        describe_os_error,
        is_disk_error,
    )

    try:
        with stop_on_signals():
            return execute(plan, labelset, record)
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
    except SystemExit as exc:  # evalkit exits only here, in the entry point: this exit is user code's
        fail([f"{outside_evalkit(exc)} called sys.exit({exc.code!r}) during the run, which ends no evalkit run; "
              "finished chunkings are kept; run the same command again to resume"])  # fmt: skip
    except Exception as exc:
        if not is_disk_error(exc):
            raise
        where = describe_os_error(exc, plan.options.reports_dir, plan.options.cache_path)
        fail([f"{where}; the run stopped and its folder is marked incomplete (report, gate and load_run refuse it); "
              "fix the disk and run the same command to resume"])  # fmt: skip


def _write_report(run_dir: Path, plan: SweepPlan) -> None:
    from evalkit.pipeline.errors import describe_os_error, is_disk_error
    from evalkit.review import write_report  # review.json is the pipeline's; a --compare: computed

    try:
        html = write_report(run_dir, compare=plan.options.compare, progress=plan.options.progress)
    except Exception as exc:
        if not is_disk_error(exc):
            raise
        where = describe_os_error(exc, run_dir, plan.options.cache_path)
        fail([f"{where}; the run is complete but its report is not; python -m evalkit.report {run_dir} writes it"])
    print(f"evalkit: report {html}", file=sys.stderr)


def _check_tracker(tracker: TrackerSettings, plan: SweepPlan) -> None:
    from evalkit.tracking.mlflow_log import TrackingError
    from evalkit.tracking.registry import check_tracker

    try:
        check_tracker(tracker, plan.options.reports_dir)
    except TrackingError as exc:
        fail([str(exc)])


def _log_to_tracker(run_dir: Path, tracker: TrackerSettings, plan: SweepPlan) -> None:
    """The finished run folder (summary, decision, manifest, report) logged; a failure leaves the folder complete."""
    from evalkit.pipeline.errors import PluginError
    from evalkit.tracking.mlflow_log import TrackingError
    from evalkit.tracking.registry import log_to_tracker

    try:
        line = log_to_tracker(run_dir, tracker, plan.options.reports_dir)
    except (TrackingError, PluginError, UserCodeError) as exc:
        fail([f"{exc} (the run folder is complete; log it later with python -m evalkit.tracking {run_dir})"])
    if isinstance(line, str) and line:  # a plugin's other return values say nothing a user can read
        print(f"evalkit: {' '.join(line.split())}", file=sys.stderr)


def _task(cfg: DictConfig) -> None:
    sweep(cfg)


def _job_config(cfg: DictConfig) -> DictConfig:
    """The config a job's task sees: without the ``hydra`` node (as Hydra's job runner hands it over)."""
    job = copy.deepcopy(cfg)
    with open_dict(job):
        job.pop("hydra", None)
    return job


def check_every_job(source: ConfigSource) -> None:
    """Each job of a ``-m`` sweep composed and checked as a single run is, before job #0 runs: exit 2 on the first
    problem. Every combination of every swept value, as Hydra's basic sweeper expands them."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from evalkit.labels.read import LabelsetError, load_labelset
    from evalkit.pipeline.driver import check_paths
    from evalkit.pipeline.errors import SETUP_ERRORS

    parsed = OverridesParser.create().parse_overrides(
        [a for a in hydra_overrides(source.argv) if a not in ("-m", "--multirun")]
    )
    (jobs,) = BasicSweeper.split_arguments(parsed, None)
    labelsets: dict[str, LabelSet] = {}
    for overrides in jobs:
        cfg = compose_config(source, overrides)
        plan, _, tracker = plan_from(cfg)
        if tracker is not None and not plan.options.dry_run:
            _check_tracker(tracker, plan)
        if plan.labelset_path not in labelsets:
            try:
                labelsets[plan.labelset_path] = load_labelset(plan.labelset_path)
            except LabelsetError as exc:
                fail(exc.problems)
        try:
            check_paths(plan)
        except SETUP_ERRORS as exc:
            fail([str(exc)])


def run_once(source: ConfigSource) -> None:
    """One run as ``hydra.main`` runs it (its output folder, logging, ``HydraConfig``), composed once.

    ``hydra.main`` composes a single run twice (once to learn the mode, once to run); here the
    config is composed once and handed to Hydra's own job runner, after every check a run makes
    before any work (:func:`prepare`): a refused run writes nothing, not even Hydra's output folder.
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
        ready = prepare(_job_config(cfg))
        with open_dict(cfg):
            cfg.hydra.mode = RunMode.RUN
        callbacks = Callbacks(cfg)
        callbacks.on_run_start(config=cfg, config_name=source.config_name)
        context = HydraContext(config_loader=runner.config_loader, callbacks=callbacks)
        done = run_job(
            hydra_context=context,
            task_function=lambda job: sweep(job, ready),
            config=cfg,
            job_dir_key="hydra.run.dir",
            job_subdir_key=None,
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
    register_plugin_configs()
    if "-h" in args or "--help" in args:
        print(help_text(source.search))
        return
    import hydra
    from hydra.errors import HydraException

    multirun = any(a in ("-m", "--multirun") for a in source.argv)
    problem = composition_error(source, source.argv) if multirun else syntax_error(source, source.argv)
    if problem is not None:
        fail([problem])
    for warning in repeated_keys(source.argv):
        warn(warning)
    if multirun and not hydra_mode(source.argv):
        check_every_job(source)
    # Hydra reads sys.argv; HYDRA_FULL_ERROR makes it raise instead of printing its own multi-line report.
    sys.argv = [sys.argv[0], *source.argv]
    os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        # From here a Ctrl-C is evalkit's Stopped, so a KeyboardInterrupt can only be user code's own.
        with stop_on_signals():
            if multirun or hydra_mode(source.argv):  # Hydra's own modes (completion, --cfg) need its own main
                hydra.main(version_base="1.3", config_path=str(conf_dir()), config_name=source.config_name)(_task)()
            else:
                run_once(source)
    except Stopped as exc:  # before any work (a run's own stop is told in _execute)
        print("evalkit: stopped before any work", file=sys.stderr)
        sys.exit(exc.code)
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
