"""``python -m evalkit.report reports/<run_id> [--compare reports/<earlier>]``: write index.html.

The page renders the run folder's files. What they lack is computed first, by :mod:`evalkit.review`:
review.json for a run made before it (or when ``--resamples``/``--seed`` ask for other resampling than
the folder's), and ``compare/<earlier>.json`` for ``--compare``; the terminal's comparison lines read
the same file as the page.

Exit codes: 0 written, 2 bad input (one line on stderr, no traceback).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from evalkit.review import Statistics, write_report
from evalkit.run.comparison import read_comparison
from evalkit.run.disk import describe_os_error
from evalkit.run.folder import RunError

DEFAULT = Statistics()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m evalkit.report", description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", help="the run folder, reports/<run_id>")
    parser.add_argument("--compare", metavar="EARLIER_RUN", help="an earlier run folder: deltas and flipped questions")
    parser.add_argument(
        "--resamples",
        type=int,
        help=f"bootstrap resamples of review.json (default: the folder's; {DEFAULT.n_resamples} when computed anew); "
        "a value other than the folder's computes it again",
    )
    parser.add_argument(
        "--seed", type=int, help=f"bootstrap seed of review.json (default: the folder's; {DEFAULT.seed})"
    )
    parser.add_argument("--max-questions", type=int, default=200, help="questions per drill-down page (default 200)")
    parser.add_argument("--labelset", help="the labelled set folder, if the manifest's path does not resolve")
    return parser.parse_args(argv)


def _statistics(args: argparse.Namespace) -> Statistics | None:
    """Other resampling than the folder's when asked for; None keeps review.json as it is."""
    if args.resamples is None and args.seed is None:
        return None
    return Statistics(
        n_resamples=DEFAULT.n_resamples if args.resamples is None else args.resamples,
        seed=DEFAULT.seed if args.seed is None else args.seed,
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        path = write_report(
            args.run_dir,
            compare=args.compare,
            statistics=_statistics(args),
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
    """What the run-over-run comparison found, for the terminal: a plain note, or the focus configs' deltas.

    Read from ``compare/<earlier>.json``, the file the page renders.
    """
    delta = read_comparison(Path(run_dir), Path(earlier_dir))
    if delta is None:
        return [f"no comparison with {earlier_dir} in {run_dir}"]
    return [delta.summary_line(), *delta.recall_lines()]


if __name__ == "__main__":
    sys.exit(main())
