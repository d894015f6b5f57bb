"""``python -m evalkit.report reports/<run_id> [--compare reports/<earlier>]``: write index.html.

Exit codes: 0 written, 2 bad input (one line on stderr, no traceback).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from evalkit.report.analysis import Objective
from evalkit.report.build import write_report
from evalkit.run.folder import RunError
from evalkit.scoring.registry import MEASURES


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m evalkit.report", description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", help="the run folder, reports/<run_id>")
    parser.add_argument("--compare", metavar="EARLIER_RUN", help="an earlier run folder: deltas and flipped questions")
    parser.add_argument(
        "--metric",
        default="recall",
        choices=[m for m, v in MEASURES.items() if v.higher_is_better],
        help="objective to maximise (default recall)",
    )
    parser.add_argument(
        "--max-zero-hit",
        type=float,
        default=0.05,
        metavar="SHARE",
        help="cap on zero-hit among answerable questions (default 0.05; negative: no cap)",
    )
    parser.add_argument(
        "--max-cost", type=float, default=None, metavar="USD", help="cap on $ per query (only with cost data)"
    )
    parser.add_argument(
        "--tie-tolerance",
        type=float,
        default=0.01,
        metavar="SHARE",
        help="configs this close to the best and within noise tie; the cheapest wins (default 0.01)",
    )
    parser.add_argument("--resamples", type=int, default=5000, help="bootstrap resamples (default 5000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-questions", type=int, default=200, help="questions per drill-down page (default 200)")
    parser.add_argument("--labelset", help="the labelled set folder, if the manifest's path does not resolve")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    objective = Objective(
        metric=args.metric,
        max_zero_hit_answerable=None if args.max_zero_hit < 0 else args.max_zero_hit,
        max_cost_per_query=args.max_cost,
        tie_tolerance=args.tie_tolerance,
        n_resamples=args.resamples,
        seed=args.seed,
    )
    try:
        path = write_report(
            args.run_dir,
            compare=args.compare,
            objective=objective,
            max_questions=args.max_questions,
            labelset=args.labelset,
        )
    except RunError as exc:
        print(f"evalkit.report: error: {exc}", file=sys.stderr)
        return 2
    print(f"evalkit.report: wrote {path}", file=sys.stderr)
    if args.compare:
        for line in compare_lines(args.run_dir, args.compare):
            print(f"evalkit.report: {line}", file=sys.stderr)
    return 0


def compare_lines(run_dir: str, earlier_dir: str) -> list[str]:
    """What the run-over-run comparison found, for the terminal: a plain note, or the focus configs' deltas."""
    from evalkit.report.analysis import resolve_baseline
    from evalkit.report.compare import compare_runs
    from evalkit.run.folder import load_run

    now, earlier = load_run(run_dir), load_run(earlier_dir)
    recommended = ((now.recommendation or {}).get("recommended") or {}).get("config_id")
    baseline = resolve_baseline(now.summary, now.baseline_point())
    delta = compare_runs(now, earlier, [c for c in (recommended, baseline) if c])
    lines = [delta.summary_line()]
    if delta.note is None:
        rows = delta.deltas[(delta.deltas["metric"] == "recall") & (delta.deltas["n_paired"] > 0)]
        lines += [
            f"  {r.config_id}: recall {r.delta_paired * 100:+.1f} pts "
            f"[{r.delta_low * 100:+.1f}, {r.delta_high * 100:+.1f}] (paired, {int(r.n_paired)} questions)"
            for r in rows.itertuples(index=False)
        ]
    return lines


if __name__ == "__main__":
    sys.exit(main())
