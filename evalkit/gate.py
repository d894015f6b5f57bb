"""``python -m evalkit.gate``: is a candidate config non-inferior to production on the same labelled set?

Two results folders (``--baseline reports/A --candidate reports/B``) or one
folder and two of its grid points (``--run reports/X --baseline-config ID
--candidate-config ID``). Each check in the margins file (``conf/gate/
default.yaml``) pairs the two configs' per-question values, takes the paired
bootstrap CI of the difference and asks :func:`evalkit.scoring.compare.non_inferiority`
whether its bad-side bound stays within the margin. Writes ``gate.json`` and
``gate.md`` to the candidate folder (or ``--out``).

This module is the entry point only: the comparison is :mod:`evalkit.scoring.compare`
(the same the report makes), measure names and directions come from
:mod:`evalkit.scoring.registry`, the run folders are read by :mod:`evalkit.run.folder`.

Answers: an answer or latency check decides only when its evidence does (shown not worse: pass; shown
worse: fail; not shown: it decides nothing, and the line says so). Where the run has an answer check and a
compared config was not answered, the gate prints ``answers: not checked for ID``; ``--answer`` answers it
first on the check's own seeded sample (cached, resumable). In CI mode (``--require-answers``, or the
environment's ``CI=true``) a compared config without answers, while the check is on, fails the gate.

Exit codes: 0 every check passed, 1 a check failed, 2 bad input (one line on
stderr: different labelled sets, unknown config, broken margins file, ...).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, NoReturn

import pandas as pd

from evalkit.pipeline.gate_evidence import answer_design, answer_evidence, production_latency, results_with_answers
from evalkit.pipeline.margins import load_gate_config
from evalkit.pipeline.production_file import load_production_point
from evalkit.report import fmt
from evalkit.run import files
from evalkit.run.clusters import ClustersError, read_clusters
from evalkit.run.disk import describe_os_error
from evalkit.run.folder import Run, RunError, load_run, write_json
from evalkit.scoring.clusters import cluster_map
from evalkit.scoring.gatecheck import Check, ConfigData, GateConfig, GateError, evaluate
from evalkit.scoring.production import production_in_grid


@dataclass(frozen=True)
class Side:
    """One side of the comparison: a run folder and one of its configs."""

    run: Run
    config_id: str

    @property
    def data(self) -> ConfigData:
        return ConfigData(results_with_answers(self.run), self.run.summary, self.config_id)

    def describe(self) -> dict[str, str]:
        return {"run": str(self.run.root), "run_id": self.run.run_id, "config_id": self.config_id}


def _grid(run: Run) -> pd.DataFrame:
    """The run's grid points, without a threshold the calibration advised and the sweep scored beside the grid."""
    summary = run.summary
    return summary[~summary["off_grid"].fillna(False).astype(bool)] if "off_grid" in summary.columns else summary


def _baseline_config(run: Run) -> str:
    """The run's only grid point, else its manifest's production grid point."""
    if len(_grid(run)) == 1:
        return str(_grid(run)["config_id"].iloc[0])
    point = run.baseline_point()
    config_id = None if point is None else production_in_grid(run.summary, **asdict(point), external=run.external)
    if config_id is not None:
        return config_id
    raise GateError(
        f"{run.root}: {len(run.summary)} configs and none is the manifest's baseline; choose one with --baseline-config"
    )


def _config_at_point(run: Run, production_file: str) -> str:
    """The config of ``run`` at the grid point a production file names (e.g. the pull request base's)."""
    point = load_production_point(production_file)
    config_id = production_in_grid(run.summary, **asdict(point), external=run.external)
    if config_id is None:
        raise GateError(
            f"{production_file}: production ({point.describe()}) is not a config of {run.root}; "
            "add it to the sweep's grid so the gate can compare with it"
        )
    return config_id


def _choose(run: Run, config_id: str | None, flag: str, fallback_to_baseline: bool) -> str:
    if config_id is not None:
        if config_id not in set(run.summary["config_id"]):
            examples = ", ".join(list(run.summary["config_id"])[:3])
            raise GateError(f"{run.root}: no config {config_id!r} (e.g. {examples})")
        return config_id
    if len(_grid(run)) == 1:
        return str(_grid(run)["config_id"].iloc[0])
    if fallback_to_baseline:
        return _baseline_config(run)
    raise GateError(f"{run.root}: {len(run.summary)} configs; choose one with {flag}")


def check_same_labelset(baseline: Run, candidate: Run) -> None:
    """Raise GateError unless both runs scored the same labelled set."""
    a, b = baseline.labelset_fingerprint, candidate.labelset_fingerprint
    if not a or not b:
        raise GateError("a manifest has no labelled-set fingerprint; cannot tell the two runs used the same set")
    if a != b:
        raise GateError(
            f"different labelled sets: baseline {baseline.labelset_name} ({a[:12]}) vs candidate "
            f"{candidate.labelset_name} ({b[:12]}); the gate compares configs on the same questions"
        )


def report_payload(
    baseline: Side,
    candidate: Side,
    config: GateConfig,
    checks: Sequence[Check],
    skipped: Sequence[Mapping[str, str]],
    route: str | None = None,
    answers: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The content of gate.json; ``answers``: :func:`answer_evidence`'s record."""
    passed = all(c.passed for c in checks) and not (answers or {}).get("fails_closed")
    return {
        "passed": passed,
        "answers": dict(answers) if answers else None,
        "route": route,
        "verdict": "pass" if passed else "fail",
        "confidence": config.confidence,
        "n_resamples": config.n_resamples,
        "seed": config.seed,
        "margins_file": config.source,
        "labelset": {"name": candidate.run.labelset_name, "fingerprint": candidate.run.labelset_fingerprint},
        "n_questions": int(
            candidate.run.results[candidate.run.results["config_id"] == candidate.config_id]["question_id"].nunique()
        ),
        "baseline": baseline.describe(),
        "candidate": candidate.describe(),
        "checks": [_finite_or_none(asdict(c)) for c in checks],
        "skipped": [dict(s) for s in skipped],
    }


def _finite_or_none(record: dict[str, Any]) -> dict[str, Any]:
    """NaN and infinities as null, so gate.json is strict JSON."""
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in record.items()}


def _md_delta(check: Mapping[str, Any]) -> str:
    return fmt.check_delta(check).replace(" points", " pts")


def markdown(payload: Mapping[str, Any]) -> str:
    """gate.md: a short summary for a pull request."""
    ok = payload["passed"]
    base, cand = payload["baseline"], payload["candidate"]
    lines = [
        f"## evalkit gate: {'✅ PASS' if ok else '❌ FAIL'}",
        "",
        f"Candidate `{cand['config_id']}` ({cand['run_id']}) against production `{base['config_id']}` "
        f"({base['run_id']}) on labelled set **{payload['labelset']['name']}** ({payload['n_questions']} questions). "
        f"Non-inferiority at {payload['confidence']:.0%} confidence: paired bootstrap over questions, "
        f"{payload['n_resamples']} resamples.",
        "",
        *([f"Route: {payload['route']}", ""] if payload.get("route") else []),
        "| metric | baseline | candidate | Δ [CI] | margin | result |",
        "|---|---:|---:|---:|---|---|",
    ]
    for c in payload["checks"]:
        lines.append(
            f"| {c['label']} | {fmt.value(c['baseline'], c['proportion'])} | "
            f"{fmt.value(c['candidate'], c['proportion'])} | {_md_delta(c)} | {c['margin_text']} | "
            f"{'pass' if c['passed'] else '**FAIL**'} |"
        )
    for c in payload["checks"]:
        if c.get("method") == "point":
            lines.append(f"\n{c['label']}: per-config means (the results hold no per-question values), no interval.")
    for s in payload["skipped"]:
        state = f" ({s['state']})" if s.get("state") else ""
        lines.append(f"\nSkipped {s['metric']}{state}: {s['reason']}.")
    answers = payload.get("answers") or {}
    if answers.get("line"):
        closed = " In CI mode a compared config without answers fails the gate." if answers.get("fails_closed") else ""
        lines.append(f"\n**{answers['line']}**.{closed}")
    failed = [c["label"] for c in payload["checks"] if not c["passed"]]
    if failed:
        lines.append(f"\nWorse than production beyond the margin (or not shown to be within it): {', '.join(failed)}.")
    return "\n".join(lines) + "\n"


def write_outputs(payload: Mapping[str, Any], out: Path) -> tuple[Path, Path]:
    """Write gate.json and gate.md into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / files.GATE_JSON, out / files.GATE_MD
    write_json(json_path, payload)
    md_path.write_text(markdown(payload), encoding="utf-8")
    return json_path, md_path


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"evalkit.gate: error: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = _Parser(prog="python -m evalkit.gate", description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", metavar="RUN", help="results folder of the production config")
    parser.add_argument("--candidate", metavar="RUN", help="results folder of the candidate config")
    parser.add_argument("--run", metavar="RUN", help="one results folder holding both configs")
    parser.add_argument(
        "--baseline-config",
        metavar="CONFIG_ID",
        help="default: the folder's only config, else its manifest's baseline grid point",
    )
    parser.add_argument(
        "--baseline-point",
        metavar="PRODUCTION_YAML",
        help="with --run: the baseline is the grid point this production file names (e.g. the base branch's)",
    )
    parser.add_argument("--candidate-config", metavar="CONFIG_ID", help="default: the folder's only config")
    parser.add_argument("--route", metavar="TEXT", help="why these two configs are compared (shown in gate.md)")
    parser.add_argument("--margins", default="default", help="a file, or a name in conf/gate/ (default: default)")
    parser.add_argument("--out", metavar="DIR", help="where to write gate.json and gate.md (default: candidate folder)")
    parser.add_argument(
        "--answer",
        action="store_true",
        help="answer a compared config the run's answer check did not answer, on the check's own sample, with the "
        "generator the config names (cached, resumable), before deciding",
    )
    parser.add_argument(
        "--require-answers",
        action="store_true",
        help="CI mode (also CI=true): a compared config without answers, while the run's answer check is on, fails",
    )
    parser.add_argument("--config-dir", help="with --answer: a project's conf/ (default ./conf with project.yaml)")
    parser.add_argument("overrides", nargs="*", help="with --answer: config overrides, as for python -m evalkit.sweep")
    return parser.parse_args(argv)


def ci_mode(args: argparse.Namespace) -> bool:
    """``--require-answers``, or a CI environment (``CI=true``, as GitHub Actions and most CI services set)."""
    return bool(args.require_answers) or os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def gate(args: argparse.Namespace) -> tuple[dict[str, Any], Path]:
    """Run the gate for parsed arguments; returns gate.json's content and the output folder."""
    if args.run and (args.baseline or args.candidate):
        raise GateError("give either --run or --baseline and --candidate, not both")
    if args.run:
        if not args.candidate_config:
            raise GateError("--run needs --candidate-config (and optionally --baseline-config)")
        run = load_run(args.run)
        if args.baseline_point and args.baseline_config:
            raise GateError("give --baseline-config or --baseline-point, not both")
        baseline_id = _config_at_point(run, args.baseline_point) if args.baseline_point else args.baseline_config
        baseline = Side(run, _choose(run, baseline_id, "--baseline-config", True))
        candidate = Side(run, _choose(run, args.candidate_config, "--candidate-config", False))
    elif args.baseline_point:
        raise GateError("--baseline-point needs --run (one folder whose grid holds both points)")
    elif args.baseline and args.candidate:
        base_run, cand_run = load_run(args.baseline), load_run(args.candidate)
        check_same_labelset(base_run, cand_run)
        baseline = Side(base_run, _choose(base_run, args.baseline_config, "--baseline-config", True))
        candidate = Side(cand_run, _choose(cand_run, args.candidate_config, "--candidate-config", False))
    else:
        raise GateError("give --baseline RUN --candidate RUN, or --run RUN --candidate-config ID")
    config = replace(load_gate_config(args.margins), clusters=run_clusters(candidate.run, baseline.run))
    if args.answer:
        baseline, candidate = _answered(args, baseline, candidate, config)
    elif args.overrides or args.config_dir:
        raise GateError("config overrides and --config-dir are for --answer (the generator that answers)")
    config = replace(config, latency=production_latency(candidate.run), answer_design=answer_design(candidate.run))
    checks, skipped = evaluate(baseline.data, candidate.data, config)
    sides = ((baseline.run, baseline.config_id), (candidate.run, candidate.config_id))
    answers, checks, skipped = answer_evidence(sides, checks, skipped, ci_mode(args))
    if not checks:
        raise GateError("no check could run (every metric of the margins file lacks data)")
    payload = report_payload(baseline, candidate, config, checks, skipped, args.route, answers)
    return payload, Path(args.out) if args.out else candidate.run.root


def _answered(args: argparse.Namespace, baseline: Side, candidate: Side, config: GateConfig) -> tuple[Side, Side]:
    """Both sides with their configs answered on the check's sample (each run folder re-read after)."""
    from evalkit.overrides import compose_run
    from evalkit.pipeline.gate_answers import answer_configs
    from evalkit.project.layers import find_source
    from evalkit.settings import ConfigError
    from evalkit.sweep import plan_from

    argv = [*(["--config-dir", args.config_dir] if args.config_dir else []), *args.overrides]
    source = find_source(argv, Path.cwd())
    try:
        cfg = compose_run(source, source.argv)
    except ConfigError as exc:
        raise GateError(str(exc)) from None
    plan, _, _ = plan_from(cfg)  # a bad key is one line and exit 2 there
    wanted: dict[Path, list[str]] = {}
    runs = {side.run.root: side.run for side in (baseline, candidate)}
    for side in (baseline, candidate):
        wanted.setdefault(side.run.root, []).append(side.config_id)
    for root, config_ids in wanted.items():
        answer_configs(runs[root], config_ids, plan, config)
    fresh = {root: load_run(root) for root in runs}
    return Side(fresh[baseline.run.root], baseline.config_id), Side(fresh[candidate.run.root], candidate.config_id)


def run_clusters(*runs: Run) -> pd.Series | None:
    """question_id -> cluster from the first run folder holding clusters.parquet (the sweep's decision wrote it
    for the same clusters it resampled); None when none does (an older run: questions are resampled)."""
    try:
        return cluster_map(read_clusters(*(run.root for run in runs)))
    except ClustersError as exc:
        raise GateError(str(exc)) from None


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        payload, out = gate(args)
    except (GateError, RunError) as exc:
        print(f"evalkit.gate: error: {exc}", file=sys.stderr)
        return 2
    try:
        json_path, _ = write_outputs(payload, out)
    except OSError as exc:  # a full or read-only disk: the path and the cause, and no half-written verdict left
        for name in (files.GATE_JSON, files.GATE_MD):
            with contextlib.suppress(OSError):
                (out / name).unlink(missing_ok=True)
        print(f"evalkit.gate: error: {describe_os_error(exc, out, Path())}", file=sys.stderr)
        return 2
    for c in payload["checks"]:
        print(
            f"{'pass' if c['passed'] else 'FAIL'}  {c['metric']}: {_md_delta(c)} (margin {c['margin_text']})",
            file=sys.stderr,
        )
    for s in payload["skipped"]:
        if s.get("state"):
            print(f"{s['state']}  {s['metric']}: {s['reason']}", file=sys.stderr)
    answers = payload.get("answers") or {}
    if answers.get("line"):
        closed = ": fails the gate in CI mode" if answers.get("fails_closed") else ""
        print(f"evalkit.gate: {answers['line']}{closed}", file=sys.stderr)
    print(f"evalkit.gate: {payload['verdict'].upper()} -> {json_path}", file=sys.stderr)
    return 0 if payload["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
