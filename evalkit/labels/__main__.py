"""``python -m evalkit.labels``: validate, describe, check, import and export labelled sets.

Subcommands (``--help`` on each for options)::

    validate PATH                       the loader's problems (exit 2) and warnings (exit 0)
    stats PATH [--json]                 composition: languages, kinds, modes, tags, evidence, documents
    health PATH [--json]                label health: duplicates, near-duplicates, verbatim copies,
                                        trivial questions, stale spans, composition
    reanchor PATH [--before OLD] [--dry-run] [--report FILE] [--json] [--verbose]
                                        labels in changed documents checked against the documents
                                        as labelled and found again; never guessed (ambiguous, lost
                                        and typo-in-answer ones queued for a person)
    import --from squad FILE.json OUT_DIR [--unit article|paragraph] [--lang L]
    import --from ragas FILE OUT_DIR --docs DOCS [--lang L]
    import --from hf DATASET OUT_DIR [--docs DOCS] [--split S] [--lang L]
    export PATH --to ragas OUT.jsonl|OUT.csv [--contexts passage|evidence]
    export PATH --to hf OUT [--format auto|arrow|parquet]
    sample LOG --docs DOCS OUT_SET      an unlabelled set from a query log: frequent questions and failures
    annotate SET [--port P] [--open]    a local page to label questions with document spans
    add-failures RUN_DIR SET            queue the questions a run's production config missed
    queue --suspect RUN_DIR [SET]       queue the questions whose gold the report's item analysis doubts
    generate SET [--generator NAME]     synthetic candidate questions with source spans (tags.synthetic)

Exit status: 0 done; 1 import written but some rows were reported and
skipped, or reanchor written but some spans were queued for a person
(ambiguous, lost, proposed) or could not be checked; 2 an invalid set or
unusable input (every problem one line, no traceback). Every command that
reads a labelled set reads it as ``validate`` does and refuses (exit 2) a
set it cannot read whole; ``validate`` keeps a copy of each document as
labelled in the set's ``.history/`` for ``reanchor``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalkit.labels.anchor import ImportResult
from evalkit.labels.health import format_health, label_health
from evalkit.labels.hf_format import hf_rows, import_hf, write_hf
from evalkit.labels.history import remember
from evalkit.labels.load import read_documents, readable_set
from evalkit.labels.ragas_format import import_ragas, ragas_rows, write_rows
from evalkit.labels.read import LabelsetError, load_labelset
from evalkit.labels.squad_format import import_squad, read_squad
from evalkit.labels.stats import format_stats, label_stats
from evalkit.labels.validate import validate
from evalkit.labels.write import write_labelset

EXIT_OK, EXIT_REPORTED, EXIT_INVALID = 0, 1, 2
MAX_NOTES = 10


def _validate(args: argparse.Namespace) -> int:
    from evalkit.curate.reanchor import reanchor_hint

    result = validate(args.path)
    # The documents as labelled, kept for reanchor: only texts that match docs.jsonl's sha256 are kept.
    note = _remember(args.path)
    if note:
        print(note, file=sys.stderr)
    for line in result.problems:
        print(line)
    for line in result.warnings:
        print(f"warning: {line}")
    if result.problems:
        print(
            f"{args.path}: {len(result.problems)} problem(s), {len(result.warnings)} warning(s): not a valid "
            "labelled set",
            file=sys.stderr,
        )
        for line in reanchor_hint(result.problems, args.path):
            print(line, file=sys.stderr)
        return EXIT_INVALID
    print(
        f"ok: {args.path}: {result.n_questions} questions, {result.n_documents} documents, "
        f"{len(result.warnings)} warning(s)"
    )
    return EXIT_OK


def _remember(path: Path) -> str:
    try:
        documents = read_documents(path)
    except LabelsetError:
        return ""  # validate has named why
    return remember(path, documents)


def _stats(args: argparse.Namespace) -> int:
    labelset = readable_set(args.path)
    if labelset.problems or labelset.stale:
        print(
            f"warning: {len(labelset.problems) + len(labelset.stale)} problem(s) in {args.path}; statistics cover "
            "the usable questions (run validate)",
            file=sys.stderr,
        )
    stats = label_stats(labelset.name, labelset.documents, labelset.questions)
    print(json.dumps(stats.to_dict(), ensure_ascii=False, indent=2) if args.json else format_stats(stats))
    return EXIT_OK


def _health(args: argparse.Namespace) -> int:
    labelset = readable_set(args.path)
    health = label_health(
        labelset.name,
        labelset.documents,
        labelset.questions,
        stale=labelset.stale,
        invalid=labelset.problems,
        near_threshold=args.near,
        verbatim_share=args.verbatim,
        tiny_doc_chars=args.tiny,
    )
    print(json.dumps(health.to_dict(), ensure_ascii=False, indent=2) if args.json else format_health(health))
    return EXIT_OK


def _reanchor(args: argparse.Namespace) -> int:
    import datetime as dt

    from evalkit.curate.reanchor import apply_reanchor, format_reanchor, plan_reanchor, report_record

    plan = plan_reanchor(args.path, args.before)
    now = dt.datetime.now(dt.UTC)
    report = args.report or args.path / f"reanchor-{now.strftime('%Y%m%dT%H%M%SZ')}.json"
    if args.json:
        print(json.dumps(report_record(plan, now), ensure_ascii=False, indent=2))
    else:
        print(format_reanchor(plan, args.verbose))
    if not plan.found and not plan.documents:
        checked = "" if plan.unchecked else " (every document read whole)"
        print(f"nothing stale in {args.path}{checked}; nothing written", file=sys.stderr)
        return EXIT_REPORTED if plan.unchecked else EXIT_OK
    if args.dry_run:
        print("dry run: nothing written", file=sys.stderr)
    else:
        note = apply_reanchor(plan, report, now)
        print(f"report: {report}", file=sys.stderr)
        if note:
            print(note, file=sys.stderr)
        if plan.queued:
            print(f"next: python -m evalkit.labels annotate {args.path}   (the queued questions)", file=sys.stderr)
    return EXIT_REPORTED if plan.queued or plan.kept or plan.unchecked else EXIT_OK


def _run_import(args: argparse.Namespace) -> ImportResult:
    documents = read_documents(args.docs) if args.docs else None
    if args.source_format == "squad":
        return import_squad(read_squad(args.source), args.source, args.unit, args.lang)
    if args.source_format == "ragas":
        if documents is None:
            raise ValueError("--from ragas needs --docs DOCS (the corpus the reference contexts come from)")
        return import_ragas(args.source, documents, args.lang)
    return import_hf(args.source, documents, args.lang, args.split)


def _import(args: argparse.Namespace) -> int:
    result = _run_import(args)
    for line in result.reports:
        print(line, file=sys.stderr)
    shown = result.notes if args.verbose else result.notes[:MAX_NOTES]
    for line in shown:
        print(f"note: {line}", file=sys.stderr)
    if len(shown) < len(result.notes):
        print(f"note: … {len(result.notes) - len(shown)} more notes (--verbose shows all)", file=sys.stderr)
    if not result.questions:
        print(f"error: no question could be imported from {args.source}; nothing written", file=sys.stderr)
        return EXIT_INVALID
    write_labelset(args.out, result.documents, result.questions, overwrite=args.overwrite)
    check = validate(args.out)
    if check.problems:
        for line in check.problems:
            print(line, file=sys.stderr)
        print(f"error: the imported set at {args.out} does not validate (a bug in the importer)", file=sys.stderr)
        return EXIT_INVALID
    answerable = sum(q.answerable for q in result.questions)
    print(
        f"imported {len(result.questions)} questions ({answerable} answerable, "
        f"{len(result.questions) - answerable} unanswerable) over {len(result.documents)} documents into "
        f"{args.out}; {len(result.reports)} reported, {len(result.notes)} notes"
    )
    return EXIT_REPORTED if result.reports else EXIT_OK


def _export(args: argparse.Namespace) -> int:
    readable_set(args.path)  # a set not read whole: one line naming the first problem
    labelset = load_labelset(args.path)
    if args.to == "ragas":
        out = write_rows(ragas_rows(labelset.documents, labelset.questions, args.contexts), args.out)
        kind = "CSV" if out.suffix.lower() == ".csv" else "JSONL"
        print(
            f"wrote {len(labelset.questions)} rows to {out} (ragas EvaluationDataset {kind}); back with: "
            f"python -m evalkit.labels import --from ragas {out} OUT_DIR --docs {args.path}"
        )
        return EXIT_OK
    where = write_hf(hf_rows(labelset.documents, labelset.questions, args.contexts), args.out, args.format)
    print(
        f"wrote {len(labelset.questions)} rows: {where}; back with: "
        f"python -m evalkit.labels import --from hf {args.out} OUT_DIR --docs {args.path}"
    )
    return EXIT_OK


def _add_reanchor(commands: Any) -> None:
    """The ``reanchor`` subcommand (its own function: the parser stays one screen)."""
    command = commands.add_parser(
        "reanchor", help="find stale spans again in changed documents; queue ambiguous and lost ones"
    )
    command.add_argument("path", type=Path)
    command.add_argument(
        "--before",
        type=Path,
        metavar="OLD",
        help="the documents as labelled (an older copy of the set, or a folder of files): ambiguous spans are "
        "looked for again with their old surroundings",
    )
    command.add_argument("--dry-run", action="store_true", help="report what would move; write nothing")
    command.add_argument(
        "--report", type=Path, metavar="FILE", help="report file (default PATH/reanchor-<UTC time>.json)"
    )
    command.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")
    command.add_argument("--verbose", action="store_true", help="list every span, not the first fifty")
    command.set_defaults(run=_reanchor)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m evalkit.labels``."""
    parser = argparse.ArgumentParser(
        prog="python -m evalkit.labels",
        description=(__doc__ or "").replace("``", ""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)

    command = commands.add_parser("validate", help="check a labelled set (exit 2 on problems)")
    command.add_argument("path", type=Path)
    command.set_defaults(run=_validate)

    command = commands.add_parser("stats", help="composition of a labelled set")
    command.add_argument("path", type=Path)
    command.add_argument("--json", action="store_true", help="JSON instead of a table")
    command.set_defaults(run=_stats)

    command = commands.add_parser("health", help="label health: duplicates, copies, trivial and stale labels")
    command.add_argument("path", type=Path)
    command.add_argument("--json", action="store_true", help="JSON instead of a table")
    command.add_argument("--near", type=float, default=0.9, help="near-duplicate 3-gram Jaccard (default 0.9)")
    command.add_argument(
        "--verbatim",
        type=float,
        default=0.8,
        help="share of a question's characters in one run of its document (default 0.8)",
    )
    command.add_argument("--tiny", type=int, default=200, help="tiny document: body characters under (default 200)")
    command.set_defaults(run=_health)

    _add_reanchor(commands)

    command = commands.add_parser("import", help="a labelled set from SQuAD, ragas or Hugging Face data")
    command.add_argument("--from", dest="source_format", choices=("squad", "ragas", "hf"), required=True)
    command.add_argument("source", type=Path, help="SQuAD JSON, ragas JSONL/CSV, or a dataset folder/file")
    command.add_argument("out", type=Path, help="folder to write the labelled set to")
    command.add_argument("--docs", type=Path, help="corpus: a labelled set folder or a folder of text files")
    command.add_argument(
        "--unit",
        choices=("article", "paragraph"),
        default="article",
        help="squad: one document per article (default) or per paragraph",
    )
    command.add_argument("--lang", default="", help="language tag for every question (squad: detected if omitted)")
    command.add_argument("--split", default="", help="hf: split of a DatasetDict (default train, else the first)")
    command.add_argument("--overwrite", action="store_true", help="write over a labelled set already in OUT")
    command.add_argument("--verbose", action="store_true", help="print every note, not the first ten")
    command.set_defaults(run=_import)

    command = commands.add_parser("export", help="a labelled set as ragas or Hugging Face data")
    command.add_argument("path", type=Path)
    command.add_argument("--to", choices=("ragas", "hf"), required=True)
    command.add_argument("out", type=Path, help="ragas: a .jsonl or .csv file; hf: a folder or a .parquet file")
    command.add_argument(
        "--contexts",
        choices=("passage", "evidence"),
        default="passage",
        help="reference contexts: source passages (default; evidence where none) or evidence text",
    )
    command.add_argument(
        "--format",
        choices=("auto", "arrow", "parquet"),
        default="auto",
        help="hf: save_to_disk (arrow) when 'datasets' is installed, else parquet (auto)",
    )
    command.set_defaults(run=_export)
    from evalkit.curate.cli import add_commands  # curation (sample, annotate, ...) lives above labels/: imported here

    add_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; return the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except BrokenPipeError:  # output piped into `head`: stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except LabelsetError as exc:
        for line in exc.problems:
            print(line, file=sys.stderr)
        return EXIT_INVALID
    except (OSError, ValueError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID


if __name__ == "__main__":
    sys.exit(main())
