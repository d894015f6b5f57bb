"""``python -m evalkit.report reports/<run_id> [--compare reports/<earlier>]``: write index.html.

Exit codes: 0 written, 2 bad input (one line on stderr, no traceback).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from evalkit.report.analysis import Statistics
from evalkit.report.build import write_report
from evalkit.run.disk import describe_os_error
from evalkit.run.folder import RunError


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m evalkit.report", description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", help="the run folder, reports/<run_id>")
    parser.add_argument("--compare", metavar="EARLIER_RUN", help="an earlier run folder: deltas and flipped questions")
    parser.add_argument("--resamples", type=int, default=5000, help="bootstrap resamples (default 5000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-questions", type=int, default=200, help="questions per drill-down page (default 200)")
    parser.add_argument("--labelset", help="the labelled set folder, if the manifest's path does not resolve")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    statistics = Statistics(n_resamples=args.resamples, seed=args.seed)
    try:
        path = write_report(
            args.run_dir,
            compare=args.compare,
            statistics=statistics,
            max_questions=args.max_questions,
            labelset=args.labelset,
        )
    except RunError as exc:
        print(f"evalkit.report: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # the page cannot be written (full or read-only disk): the path and the cause
        print(f"evalkit.report: error: {describe_os_error(exc, Path(args.run_dir), Path())}", file=sys.stderr)
        return 2
    print(f"evalkit.report: wrote {path}", file=sys.stderr)
    if args.compare:
        for line in compare_lines(args.run_dir, args.compare):
            print(f"evalkit.report: {line}", file=sys.stderr)
    return 0


def compare_lines(run_dir: str, earlier_dir: str) -> list[str]:
    """What the run-over-run comparison found, for the terminal: a plain note, or the focus configs' deltas."""
    from evalkit.report.compare import compare_runs
    from evalkit.report.model import focus_and_production
    from evalkit.run.folder import load_run

    now, earlier = load_run(run_dir), load_run(earlier_dir)
    focus, production = focus_and_production(now)
    delta = compare_runs(now, earlier, [c for c in (focus, production) if c])
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
