"""``python -m evalkit replay LOG``: the weekly replay of fresh production questions.

Runs production's config (``baseline`` of the config, a project's ``conf/project.yaml``
included) on the most asked questions of a window of the query log, counts the questions
that get no context (the zero-hit rate, with its Wilson interval), appends the point to the
replay history (``<reports_dir>/replay/history.jsonl``) and says the move: keep, widen the
candidate pool one step, or label the questions and re-sweep; never a lower threshold
(:mod:`evalkit.scoring.replay`). The log is read, windowed and folded as ``labels sample``
reads it (:mod:`evalkit.curate`): the same file formats and the same ``--since``,
``--until``, ``--n``, ``--fold`` and ``--seed``.

Exit status as for ``labels sample``: 0 recorded, 1 recorded but log rows were reported
and skipped (``--strict``: 2, nothing recorded), 2 unusable input (a missing log, a bad
option, override or config, a broken history line: one line each, no traceback).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from evalkit.curate.cli import add_window_options, read_window
from evalkit.curate.querylog import LogReading, read_query_log
from evalkit.curate.replay import REPLAY_N, ReplayQuestions, replay_questions
from evalkit.curate.sampling import SampleSettings
from evalkit.labels.read import LabelsetError
from evalkit.overrides import compose_run
from evalkit.pipeline.config import POOL_SIZE_MAX
from evalkit.pipeline.errors import CALL_ERRORS, SETUP_ERRORS, BudgetExceeded
from evalkit.pipeline.plan import SweepPlan
from evalkit.pipeline.replay import PoolZeroHits, corpus_of, production_point, replay_zero_hits
from evalkit.project.layers import find_source
from evalkit.run.replay_history import HistoryError, append_point, history_path, read_history
from evalkit.scoring.replay import ReplayAdvice, next_pool_size, replay_advice, zero_hit_rate
from evalkit.settings import ConfigError

EXIT_OK, EXIT_REPORTED, EXIT_INVALID = 0, 1, 2
SHOWN = 20
"""At most this many skipped rows are printed (their count is always given)."""
RECENT = 8
"""Earlier points printed beside the new one."""


def fail(line: str) -> NoReturn:
    print(f"evalkit replay: error: {line}", file=sys.stderr)
    sys.exit(EXIT_INVALID)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m evalkit replay",
        description="Replay fresh production questions on production's config; record the zero-hit rate and the move.",
        epilog="Overrides as for the sweep, e.g. baseline.threshold=10 reranker=local. "
        "History: <reports_dir>/replay/history.jsonl, one line per replay, appended.",
    )
    parser.add_argument("log", type=Path, help="query log: .jsonl, .csv or OTLP JSON traces, as labels sample")
    parser.add_argument("overrides", nargs="*", help="config overrides (key=value), as for python -m evalkit.sweep")
    add_window_options(parser, since="7d")  # a week: the maintenance loop's cadence
    parser.add_argument("--n", type=int, default=REPLAY_N, help=f"distinct questions to replay (default {REPLAY_N})")
    parser.add_argument("--fold", type=float, default=0.8, help="near-duplicate 3-gram Jaccard (default 0.8)")
    parser.add_argument("--seed", type=int, default=0, help="breaks ties among equally frequent questions")
    parser.add_argument("--history", type=Path, help="the history file (default <reports_dir>/replay/history.jsonl)")
    parser.add_argument("--strict", action="store_true", help="a skipped log row is an error: exit 2, nothing recorded")
    parser.add_argument("--config-dir", help="a project's conf/ (default ./conf when it holds project.yaml)")
    return parser


def _plan(args: argparse.Namespace) -> SweepPlan:
    from evalkit.sweep import plan_from

    argv = [*(["--config-dir", args.config_dir] if args.config_dir else []), *args.overrides]
    source = find_source(argv, Path.cwd())
    try:
        cfg = compose_run(source, source.argv)
    except ConfigError as exc:
        fail(str(exc))
    plan, _, _ = plan_from(cfg)  # a bad key is one line and exit 2 there
    return plan


def _read(args: argparse.Namespace) -> LogReading:
    try:
        reading = read_query_log(args.log)
    except (OSError, ValueError) as exc:
        fail(str(exc))
    for line in reading.problems[:SHOWN]:
        print(line, file=sys.stderr)
    if len(reading.problems) > SHOWN:
        print(f"… {len(reading.problems) - SHOWN} more skipped rows", file=sys.stderr)
    if args.strict and reading.problems:
        fail(f"{args.log}: {len(reading.problems)} row(s) skipped (above); --strict records nothing")
    return reading


def _pick(args: argparse.Namespace, reading: LogReading, plan: SweepPlan) -> ReplayQuestions:
    try:
        until, since = read_window(args)
        settings = SampleSettings(n=args.n, until=until, fold_threshold=args.fold, seed=args.seed, since=since)
        picked = replay_questions(reading.entries, settings, plan.filters.role_tag, plan.filters.as_of_tag)
    except ValueError as exc:
        fail(f"{args.log}: {exc}")
    if not picked.questions:
        window = f"{picked.sample.start.isoformat()} .. {picked.sample.until.isoformat()}"
        fail(f"{args.log}: no question in the window {window}; widen it with --since (e.g. --since 30d)")
    return picked


def _measure(plan: SweepPlan, picked: ReplayQuestions) -> tuple[PoolZeroHits, PoolZeroHits | None, int | None]:
    """Zero-hits at production's pool and, when above the target, at the pool one step wider."""
    try:
        corpus = corpus_of(plan)
        own = replay_zero_hits(plan, corpus, picked.questions, [plan.pool_size])[0]
        wider_pool = next_pool_size(plan.pool_size, POOL_SIZE_MAX)
        above = own.zero_hits / len(picked.questions) > plan.objective.zero_hit_answerable_max
        if not above or wider_pool is None:
            return own, None, wider_pool
        return own, replay_zero_hits(plan, corpus, picked.questions, [wider_pool])[0], wider_pool
    except LabelsetError as exc:
        fail(exc.problems[0])
    except (*SETUP_ERRORS, *CALL_ERRORS, BudgetExceeded) as exc:
        fail(str(exc).splitlines()[0])


def _point(
    args: argparse.Namespace,
    plan: SweepPlan,
    reading: LogReading,
    picked: ReplayQuestions,
    measured: tuple[PoolZeroHits, PoolZeroHits | None, int | None],
) -> tuple[dict[str, Any], ReplayAdvice]:
    own, wider, wider_pool = measured
    point = production_point(plan)
    rate = zero_hit_rate(own.zero_hits, len(picked.questions))
    wider_rate = None if wider is None else zero_hit_rate(wider.zero_hits, len(picked.questions))
    target = plan.objective.zero_hit_answerable_max
    reranked = plan.reranker.enabled
    advice = replay_advice(rate, target, point.threshold, plan.pool_size, wider_pool, wider_rate, reranked)
    row = {
        "replayed_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "log": str(reading.path),
        "window_start": picked.sample.start.isoformat(),
        "window_end": picked.sample.until.isoformat(),
        "rows_in_window": picked.sample.rows_in_window,
        "questions": rate.n,
        "zero_hits": rate.zero_hits,
        "zero_hit_rate": rate.rate,
        "ci_low": rate.low,
        "ci_high": rate.high,
        "ci_level": rate.level,
        "ci_method": rate.method,
        "target": target,
        "config_id": point.config_id,
        "labelset": plan.labelset_path,
        "pool_size": plan.pool_size,
        "threshold": point.threshold,
        "wider_pool_size": wider_pool,
        "zero_hits_wider": None if wider is None else wider.zero_hits,
        "move": advice.move,
        "advice": advice.reason,
    }
    return row, advice


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _table(points: Sequence[dict[str, Any]]) -> list[str]:
    lines = [f"  {'replayed at (UTC)':<20} {'window end':<11} {'n':>3}  {'zero-hit [95% CI]':<24} {'move':<8} config"]
    for p in points:
        rate = f"{_pct(p['zero_hit_rate'])} [{_pct(p['ci_low'])}, {_pct(p['ci_high'])}]"
        when, end = str(p["replayed_at"])[:19].replace("T", " "), str(p["window_end"])[:10]
        lines.append(f"  {when:<20} {end:<11} {p['questions']:>3}  {rate:<24} {p['move']:<8} {p['config_id']}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_intermixed_args(argv)
    if args.n < 1:
        fail(f"--n must be at least 1, got {args.n}")
    reading = _read(args)
    plan = _plan(args)
    picked = _pick(args, reading, plan)
    path = args.history or history_path(plan.options.reports_dir)
    try:
        earlier = read_history(path)  # before computing: a broken history must not cost a replay
    except HistoryError as exc:
        fail(str(exc))
    row, advice = _point(args, plan, reading, picked, _measure(plan, picked))
    append_point(path, row)
    sample = picked.sample
    print(
        f"{args.log}: {reading.rows} rows, {len(reading.problems)} skipped; window {sample.start.date()} .. "
        f"{sample.until.date()}: {sample.rows_in_window} rows, {sample.groups} distinct questions; "
        f"replayed the {len(picked.questions)} most asked"
    )
    print(f"production {row['config_id']} (pool_size {plan.pool_size}) on {plan.labelset_path}")
    print(f"zero-hit {row['zero_hits']} of {row['questions']} = {_pct(row['zero_hit_rate'])} "
          f"[{_pct(row['ci_low'])}, {_pct(row['ci_high'])}] (95% Wilson, continuity-corrected); "
          f"target {_pct(row['target'])} (objective.zero_hit_answerable_max)")  # fmt: skip
    count = len(earlier) + 1
    print(f"history {path} ({count} point{'s' if count > 1 else ''}):")
    for line in _table([*earlier[-RECENT:], row]):
        print(line)
    print(f"move: {advice.move}: {advice.reason}")
    if advice.move == "relabel":
        window = f"--since {sample.start.isoformat()} --until {sample.until.isoformat()} --n {args.n} --failure-share 0"
        print(f"next: python -m evalkit.labels sample {args.log} SET {window} --append   (then annotate, sweep)")
    return EXIT_REPORTED if reading.problems else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
