"""Which two configs the CI gate compares, and why: the rule behind ``ci/evalkit-gate.sh``.

``python -m evalkit.project.ci_route --run reports/ci [--base-production FILE] [--base-ref NAME]
[--candidate ID] [--candidate-file ci/candidate.txt]`` prints the arguments of ``python -m evalkit.gate``,
one per line, and the route it took on stderr. The routes, in order:

1. **Production's retriever changed.** The base branch's config (its ``conf/``, composed as the sweep
   composes it) names another retriever than this run's: another ``retriever=external`` service url,
   target or version, or another retriever. The base's production cannot be a grid point of this run, so
   the recipe sweeps the base's config into a second folder (``--base-run``; ``--retriever-changed`` says
   whether it must) and the new production is gated against the production found there.
2. **Production changed.** The pull request's base branch names another production point than this
   checkout: the new production is the candidate, the base's production the baseline. Gating production
   against itself (the head's file as the baseline) would pass any change, a worse one included.
3. **A candidate.** Production is unchanged (or no base is known): ``--candidate``, else the candidate
   file, else the sweep's recommendation, gated against production. A sweep that keeps production gates
   production against itself, a pass by construction, and the route says so.

``--retriever-changed --base-conf DIR`` prints ``changed`` or ``same`` instead (the reason on stderr).

Exit codes: 0 the arguments (or the answer) were printed, 2 bad input (one line on stderr).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from evalkit.pipeline.production_file import load_production_point
from evalkit.run.folder import BaselinePoint, RunError, load_run
from evalkit.scoring.gatecheck import GateError

PRODUCTION_FILE = "conf/baseline/production.yaml"
IDENTITY_KEYS = ("name", "url", "target", "version")
"""What names the retriever production runs; its transport (timeouts, batch size, retries) does not."""


@dataclass(frozen=True)
class Route:
    """The gate's two configs and the sentence that says why."""

    gate_args: tuple[str, ...]
    reason: str


def production_changed(base: BaselinePoint, head: BaselinePoint | None) -> bool:
    """Whether the base branch's production point differs from the one this run was swept with."""
    return head is None or base != head


def retriever_identity(block: Mapping[str, object]) -> dict[str, str]:
    """The retriever's name and, for an external one, the service it calls (url or target) and its version."""
    return {key: str(block.get(key) or "") for key in IDENTITY_KEYS}


def describe_retriever(identity: Mapping[str, str]) -> str:
    where = identity["url"] or identity["target"]
    named = f"{identity['name']} {where}" if where else identity["name"]
    return f"{named} version {identity['version']}" if identity["version"] else named


def base_retriever(base_conf: str, overrides: Sequence[str]) -> dict[str, str]:
    """The retriever the base branch's config names, composed as the sweep composes it (its conf/ first)."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from evalkit.project.layers import compose_config, find_source, hydra_overrides

    try:
        source = find_source(("--config-dir", base_conf), Path.cwd())
        cfg = compose_config(source, hydra_overrides(overrides))
        # Only the identity's four keys are read (resolved on access), never the whole node as a raw dict.
        block = {key: cfg.retriever.get(key) for key in IDENTITY_KEYS}
    except (HydraException, OmegaConfBaseException) as exc:
        problem = " ".join(str(exc).split())
        raise GateError(f"{base_conf}: the base branch's config does not compose ({problem})") from None
    return retriever_identity(block)


def retriever_change(run_dir: str, base_conf: str, overrides: Sequence[str]) -> str | None:
    """Why the base's production retriever differs from this run's, or None when it is the same."""
    run = load_run(run_dir)
    head = retriever_identity((run.manifest.get("config") or {}).get("retriever") or {})
    base = base_retriever(base_conf, overrides)
    if head == base:
        return None
    return f"production's retriever changes from {describe_retriever(base)} to {describe_retriever(head)}"


def choose_route(
    run_dir: str,
    base_production: str | None,
    base_ref: str | None,
    candidate: str | None,
    candidate_file: str | None,
    base_run: str | None = None,
) -> Route:
    """The route for this run (see the module's docstring).

    Raises:
        GateError, RunError: a file that cannot be read, or a run without a production config (one line).
    """
    run = load_run(run_dir)
    base_name = f"the base branch {base_ref}" if base_ref else "the base production file"
    production = (run.recommendation or {}).get("production") or {}
    head_production = production.get("config_id")
    if base_run:
        base = load_run(base_run)
        base_config = ((base.recommendation or {}).get("production") or {}).get("config_id")
        if not head_production or not base_config:
            missing = run_dir if not head_production else base_run
            raise GateError(f"{missing}: the run names no production config; cannot gate the change to it")
        change = describe_retriever(retriever_identity((base.manifest.get("config") or {}).get("retriever") or {}))
        ignored = f"; the candidate {candidate!r} is not gated in this run" if candidate else ""
        reason = (
            f"this pull request changes production's retriever (from {change}): the new production "
            f"{head_production} is the candidate, the production of {base_name} ({base_config}, swept into "
            f"{base_run}) the baseline{ignored}"
        )
        args = ("--baseline", base_run, "--candidate", run_dir, "--candidate-config", head_production)
        return Route((*args, "--route", reason), reason)
    if base_production:
        base_point = load_production_point(base_production)
        if production_changed(base_point, run.baseline_point()):
            if not head_production:
                raise GateError(f"{run.root}: the run names no production config; cannot gate the change to it")
            ignored = f"; the candidate {candidate!r} is not gated in this run" if candidate else ""
            reason = (
                f"this pull request changes production ({PRODUCTION_FILE}): the new production "
                f"{head_production} is the candidate, the production of {base_name} ({base_point.describe()}) "
                f"the baseline{ignored}"
            )
            args = ("--run", run_dir, "--baseline-point", base_production, "--candidate-config", head_production)
            return Route((*args, "--route", reason), reason)
        unchanged = f"production is unchanged from {base_name}"
    elif base_ref:
        unchanged = f"{base_name} has no {PRODUCTION_FILE} (evalkit is new there): production as in this checkout"
    else:
        unchanged = "no base branch is known (not a pull request): production as in this checkout"
    chosen, source = _candidate(run_dir, candidate, candidate_file, run.recommendation or {})
    if chosen is None:
        raise GateError(f"{run.root}: no candidate, no recommendation and no production config to gate")
    same = " (the sweep keeps production: production against itself, a pass)" if chosen == head_production else ""
    reason = f"{unchanged}; the candidate is {source}{same}"
    return Route(("--run", run_dir, "--candidate-config", chosen, "--route", reason), reason)


def _candidate(
    run_dir: str, candidate: str | None, candidate_file: str | None, recommendation: dict
) -> tuple[str | None, str]:
    if candidate:
        return candidate, f"{candidate} (EVALKIT_CANDIDATE)"
    if candidate_file and Path(candidate_file).is_file():
        try:
            named = Path(candidate_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise GateError(f"{candidate_file}: cannot read the candidate ({exc})") from exc
        if not named or "\n" in named:
            raise GateError(f"{candidate_file}: expected one config id on one line")
        return named, f"{named} ({candidate_file})"
    recommended = (recommendation.get("recommended") or {}).get("config_id")
    production = (recommendation.get("production") or {}).get("config_id")
    chosen = recommended or production
    return chosen, f"{chosen} (the sweep's recommendation in {run_dir})"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"evalkit-gate: error: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _Parser(prog="python -m evalkit.project.ci_route", description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True, help="the CI sweep's run folder")
    parser.add_argument("--base-production", help="the base branch's production file (absent: no base known)")
    parser.add_argument("--base-ref", help="the base branch's name, for the route's wording")
    parser.add_argument("--candidate", help="a config id to gate (EVALKIT_CANDIDATE)")
    parser.add_argument("--candidate-file", help="a file holding a config id (ci/candidate.txt)")
    parser.add_argument("--base-run", help="the base branch's config swept into its own folder (its retriever changed)")
    parser.add_argument("--base-conf", help="the base branch's conf/ folder (with --retriever-changed)")
    parser.add_argument("--sweep-args", default="", help="the overrides both sweeps get (EVALKIT_SWEEP_ARGS)")
    parser.add_argument(
        "--retriever-changed", action="store_true", help="print changed or same: does the base name another retriever"
    )
    args = parser.parse_args(argv)
    try:
        if args.retriever_changed:
            if not args.base_conf:
                raise GateError("--retriever-changed needs --base-conf")
            change = retriever_change(args.run, args.base_conf, args.sweep_args.split())
            print(f"evalkit-gate: {change or 'production runs the same retriever as the base branch'}", file=sys.stderr)
            print("changed" if change else "same")
            return 0
        route = choose_route(
            args.run,
            args.base_production or None,
            args.base_ref or None,
            args.candidate or None,
            args.candidate_file,
            args.base_run or None,
        )
    except (GateError, RunError) as exc:
        print(f"evalkit-gate: error: {exc}", file=sys.stderr)
        return 2
    print(f"evalkit-gate: route: {route.reason}", file=sys.stderr)
    print("\n".join(route.gate_args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
