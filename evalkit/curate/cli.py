"""The curation subcommands of ``python -m evalkit.labels``: sample, annotate, add-failures, queue, generate.

``evalkit.labels.__main__`` adds them to its parser (importing this module only then),
so ``python -m evalkit.labels`` stays the one entry point for every subcommand.

::

    sample LOG --docs DOCS OUT_SET [--n 40] [--failure-share 0.5] [--months 3 | --since DATE|7d] [--until DATE]
                                   [--seed 0] [--fold 0.8] [--append] [--overwrite]
    annotate SET [--port 0] [--open]
    add-failures RUN_DIR SET [--labelset PATH] [--unanswerable]
    queue --suspect [--never-discriminating] RUN_DIR [SET] [--labelset PATH]
    generate SET [--generator local|anthropic|fake] [--n 20] [--seed 0] [--cache PATH]

Exit status as for the other subcommands: 0 done, 1 done but rows were
reported and skipped, 2 unusable input (one line each, no traceback).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path
from typing import Any

from evalkit.curate.querylog import parse_timestamp
from evalkit.curate.queue import merge_queue, read_queue, write_queue
from evalkit.curate.sampling import SampleSettings, parse_since

__all__ = ["add_commands", "add_window_options", "read_window"]

EXIT_OK, EXIT_REPORTED, EXIT_INVALID = 0, 1, 2
MAX_SHOWN = 20


def _shown(lines: tuple[str, ...] | list[str], what: str) -> None:
    for line in lines[:MAX_SHOWN]:
        print(line, file=sys.stderr)
    if len(lines) > MAX_SHOWN:
        print(f"… {len(lines) - MAX_SHOWN} more {what}", file=sys.stderr)


def _sample(args: argparse.Namespace) -> int:
    from evalkit.curate.sampleset import sample_into_set

    until, since = read_window(args)
    settings = SampleSettings(args.n, args.failure_share, args.months, until, args.fold, args.seed, since)
    outcome = sample_into_set(args.log, args.docs, args.out, settings, append=args.append, overwrite=args.overwrite)
    _shown(outcome.problems, "skipped rows")
    picked = outcome.picked
    strata = {s: sum(1 for _, t in picked.picked if t == s) for s in ("frequent", "failure")}
    print(
        f"{args.log}: {outcome.rows} rows, {len(outcome.problems)} skipped; window {picked.start.date()} .. "
        f"{picked.until.date()}: {picked.rows_in_window} rows, {picked.groups} distinct questions "
        f"({picked.failure_groups} with failures)"
    )
    if outcome.unknown_docs:
        print(
            f"note: production returned {len(outcome.unknown_docs)} document id(s) not in the corpus", file=sys.stderr
        )
    print(
        f"sampled {len(picked.picked)} ({strata['frequent']} frequent, {strata['failure']} failures); "
        f"{len(outcome.added)} added to {args.out / 'queue.jsonl'}\n"
        f"next: python -m evalkit.labels annotate {args.out}"
    )
    return EXIT_REPORTED if outcome.problems else EXIT_OK


def _set_documents(root: Path) -> dict[str, Any]:
    """The documents of the labelled set at ``root``, once the set reads whole as ``labels validate`` reads it.

    Raises :class:`evalkit.labels.read.LabelsetError` naming the first problem (exit 2): a tool working on a
    set with a document file missing or a garbled line would speak about documents it never read.
    """
    from evalkit.labels.load import read_documents, readable_set

    if (root / "questions.jsonl").is_file():
        readable_set(root)
    return {d.doc_id: d for d in read_documents(root)}


def _annotate(args: argparse.Namespace) -> int:
    from evalkit.curate.annotate.server import serve

    _set_documents(args.set)
    return serve(str(args.set), args.port, args.open)


def _add_failures(args: argparse.Namespace) -> int:
    from evalkit.curate.failures import propose_failures

    documents = _set_documents(args.set)  # the set first: a broken one is named before the run is read
    proposal = propose_failures(args.run_dir, args.labelset, args.unanswerable)
    existing, problems = read_queue(args.set, documents)
    if problems:
        raise ValueError(f"{args.set / 'queue.jsonl'}: {len(problems)} unreadable line(s), first: {problems[0]}")
    merged = merge_queue(existing, proposal.items)
    if len(merged) > len(existing):
        write_queue(args.set, merged)
    added = len(merged) - len(existing)
    if proposal.missing:
        print(f"note: {len(proposal.missing)} failed question(s) not in the labelled set any more", file=sys.stderr)
    print(
        f"run {proposal.run_id}: production {proposal.config_id} missed {len(proposal.items)} of "
        f"{proposal.scored} questions; {added} added to {args.set / 'queue.jsonl'} "
        f"({len(proposal.items) - added} already queued)\nnext: python -m evalkit.labels annotate {args.set}"
    )
    return EXIT_OK


def _queue(args: argparse.Namespace) -> int:
    from evalkit.curate.suspects import propose_items

    if not (args.suspect or args.never_discriminating):
        raise ValueError("queue: say what to queue: --suspect and/or --never-discriminating")
    if args.set is not None:
        _set_documents(args.set)  # the set first: a broken one is named before the run is read
    proposal = propose_items(args.run_dir, args.labelset, args.suspect, args.never_discriminating)
    target = args.set if args.set is not None else proposal.labelset
    documents = _set_documents(target)
    existing, problems = read_queue(target, documents)
    if problems:
        raise ValueError(f"{target / 'queue.jsonl'}: {len(problems)} unreadable line(s), first: {problems[0]}")
    merged = merge_queue(existing, proposal.items)
    if len(merged) > len(existing):
        write_queue(target, merged)
    added = len(merged) - len(existing)
    if proposal.missing:
        print(f"note: {len(proposal.missing)} listed question(s) not in the labelled set any more", file=sys.stderr)
    what = " and ".join(
        w for w, on in (("suspect gold", args.suspect), ("never discriminating", args.never_discriminating)) if on
    )
    print(
        f"run {proposal.run_id}: {proposal.listed} {what} question(s) on {proposal.measure}; {added} added to "
        f"{target / 'queue.jsonl'} ({len(proposal.items) - added} already queued)\n"
        f"next: python -m evalkit.labels annotate {target}   (check each gold; the proposed span is the current one)"
    )
    return EXIT_OK


def _generator_config(name: str) -> dict[str, Any]:
    import yaml

    from evalkit.confdir import conf_dir

    folder = conf_dir() / "generator"
    path = folder / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in folder.glob("*.yaml")))
        raise ValueError(f"--generator {name!r}: no {path} (known: {known})")
    return dict(yaml.safe_load(path.read_text(encoding="utf-8")) or {})


def _generate(args: argparse.Namespace) -> int:
    from evalkit.answers.generation import make_generator
    from evalkit.answers.generation.request import GenerationError
    from evalkit.cache import Cache
    from evalkit.curate.generate import generate_candidates
    from evalkit.plugins import PluginError
    from evalkit.usercode import UserCodeError

    documents = _set_documents(args.set)
    try:
        generator = make_generator(_generator_config(args.generator))
        with Cache(args.cache) as cache:
            generated = generate_candidates(generator, cache, documents, args.n, args.seed)
    except (GenerationError, PluginError, UserCodeError) as exc:  # a generator plugin's failure is one line too
        raise RuntimeError(str(exc).splitlines()[0]) from None
    existing, _ = read_queue(args.set, documents)
    merged = merge_queue(existing, generated.items)
    if len(merged) > len(existing):
        write_queue(args.set, merged)
    _shown(generated.rejected, "rejected replies")
    print(
        f"{generated.requests} passages asked, {len(generated.items)} candidates ({len(generated.rejected)} rejected); "
        f"{len(merged) - len(existing)} added to {args.set / 'queue.jsonl'} as synthetic (tags.synthetic=true)\n"
        f"next: python -m evalkit.labels annotate {args.set}   (accept or correct each proposed span)"
    )
    return EXIT_REPORTED if generated.rejected else EXIT_OK


def add_window_options(command: argparse.ArgumentParser, since: str = "") -> None:
    """``--since`` and ``--until``: the window of the log, read the same way by ``sample`` and ``replay``.

    ``since``: the default start (``replay``: ``7d``); none: ``--months`` decides (``sample``).
    """
    default = f"default {since}" if since else "overrides --months"
    command.add_argument(
        "--since", default=since, help=f"start of the window: a date, or 7d / 2w back from its end ({default})"
    )
    command.add_argument("--until", default="", help="end of the window (default: the log's latest timestamp)")


def read_window(args: argparse.Namespace) -> tuple[dt.datetime | None, dt.datetime | dt.timedelta | None]:
    """``(until, since)`` from :func:`add_window_options`' flags; ValueError names the flag."""
    until = parse_timestamp(args.until) if args.until else None
    if args.until and until is None:
        raise ValueError(f"--until {args.until!r} is not a date (YYYY-MM-DD or ISO 8601)")
    return until, parse_since(args.since) if args.since else None


def add_commands(commands: Any) -> None:
    """Add the five subcommands to ``python -m evalkit.labels``'s subparsers."""
    command = commands.add_parser(
        "sample", help="an unlabelled set from a production query log (JSONL, CSV or OTLP traces)"
    )
    command.add_argument(
        "log", type=Path, help="query log: .jsonl or .csv (question, timestamp, ...), or an OTLP JSON trace export"
    )
    command.add_argument("out", type=Path, help="folder of the set to write (documents + queue.jsonl)")
    command.add_argument("--docs", type=Path, help="corpus: a labelled set folder or a folder of text files")
    command.add_argument("--n", type=int, default=40, help="questions to sample (default 40)")
    command.add_argument("--failure-share", type=float, default=0.5, help="share of known failures (default 0.5)")
    command.add_argument("--months", type=int, default=3, help="window in calendar months (default 3)")
    add_window_options(command)
    command.add_argument("--fold", type=float, default=0.8, help="near-duplicate 3-gram Jaccard (default 0.8)")
    command.add_argument("--seed", type=int, default=0)
    command.add_argument("--append", action="store_true", help="add new questions to an existing set's queue")
    command.add_argument("--overwrite", action="store_true", help="write over an unannotated set in OUT")
    command.set_defaults(run=_sample)

    command = commands.add_parser("annotate", help="a local web page to anchor questions to document spans")
    command.add_argument("set", type=Path)
    command.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    command.add_argument("--open", action="store_true", help="open the page in the default browser")
    command.set_defaults(run=_annotate)

    command = commands.add_parser("add-failures", help="queue the questions a run's production config missed")
    command.add_argument("run_dir", type=Path, help="a run folder, reports/<run_id>")
    command.add_argument("set", type=Path, help="the set whose queue gets them")
    command.add_argument("--labelset", type=Path, help="the run's labelled set (default: the manifest's path)")
    command.add_argument("--unanswerable", action="store_true", help="also unanswerable questions given context")
    command.set_defaults(run=_add_failures)

    command = commands.add_parser(
        "queue", help="queue a run's suspect-gold or never-discriminating questions (the report's item analysis)"
    )
    command.add_argument("run_dir", type=Path, help="a run folder, reports/<run_id>")
    command.add_argument("set", type=Path, nargs="?", help="the set whose queue gets them (default: the run's set)")
    command.add_argument("--suspect", action="store_true", help="questions whose gold the item analysis doubts")
    command.add_argument("--never-discriminating", action="store_true", help="questions every config scores the same")
    command.add_argument("--labelset", type=Path, help="the run's labelled set (default: the manifest's path)")
    command.set_defaults(run=_queue)

    command = commands.add_parser("generate", help="synthetic candidate questions with source spans (optional)")
    command.add_argument("set", type=Path)
    command.add_argument("--generator", default="local", help="conf/generator/NAME.yaml: local, anthropic, fake")
    command.add_argument("--n", type=int, default=20, help="passages to ask about (default 20)")
    command.add_argument("--seed", type=int, default=0)
    command.add_argument("--cache", type=Path, default=Path("reports/.cache/evalkit.sqlite"))
    command.set_defaults(run=_generate)
