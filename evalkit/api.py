"""evalkit from Python (a notebook): ``evalkit.run_sweep(...)`` and ``evalkit.load_run(path)``.

``run_sweep`` takes the command line's overrides (``"chunk_size=[256,512]"``, ``"sweep=quick"``)
and composes them exactly as ``python -m evalkit.sweep`` does (a team's ``conf/`` included);
a bad override raises :class:`SweepError` with the CLI's one-line message instead of exiting.
It is ``run_sweep``, not ``evalkit.sweep``: ``evalkit.sweep`` is the module behind
``python -m evalkit.sweep``, and a function of that name on the package would be replaced by
the submodule as soon as anything imports it.

``load_run`` reads a run folder (files only) into pandas objects; the columns are listed on
:class:`RunData`.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from contextlib import redirect_stderr
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from evalkit.labels.read import LabelsetError, load_labelset
from evalkit.project.layers import find_source
from evalkit.run import files
from evalkit.run.folder import load_run as _read_run
from evalkit.run.labelset_path import find_labelset


class SweepError(RuntimeError):
    """A sweep that did not run or did not finish; the message is the CLI's one line (and its exit code)."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class RunData:
    """A run folder as pandas objects."""

    path: Path
    summary: pd.DataFrame
    """One row per config: config_id, chunking, chunker, chunk_size, chunk_overlap, retriever, reranker, top_k,
    threshold; the means recall, hit, precision, recall_trec, context_precision, mrr, ndcg, char_recall,
    char_precision, char_iou, zero_hit, zero_hit_answerable, zero_hit_unanswerable; n_questions, n_answerable,
    mean_returned, mean_returned_tokens, n_chunks, stored_chars, indexed_chars, cost_per_query_usd,
    cost_per_day_usd, ... (summary.csv has the same columns)."""
    results: pd.DataFrame
    """One row per (config, question): config_id, question_id, lang, evidence_mode, answerable, the grid point's
    columns as in ``summary``, the per-question values recall, hit, precision, context_precision, mrr, ndcg,
    char_*, zero_hit, n_returned, returned_tokens, best_score, gold_rank_in_pool, cost_per_query_usd, ..."""
    pools: pd.DataFrame
    """Every question's ranked candidate pool, per chunking: chunking, question_id, rank (1 = best), unit_id,
    doc_id, start, end (character offsets into the document), score, relevant (holds gold evidence)."""
    manifest: pd.Series
    """manifest.json flattened to dotted keys (``labelset.name``, ``config.baseline.top_k``, ``grid.points``...)."""
    recommendation: Mapping[str, Any] | None
    """recommendation.json as read (decision, production, recommended, near_misses), when the sweep wrote one."""
    questions: pd.DataFrame | None = None
    """The run's questions from its labelled set: question_id, question, lang, answerable, answers, evidence_mode,
    tags (a dict), line; one row per question in ``results``. None when the set the manifest names is not
    found or no longer reads (moved, or edited into an invalid state)."""

    @property
    def run_id(self) -> str:
        return str(self.manifest.get("run_id", self.path.name))

    def __repr__(self) -> str:
        decision = (self.recommendation or {}).get("decision", "none recorded")
        asked = self.results["question_id"].nunique() if "question_id" in self.results.columns else 0
        return (
            f"RunData(run_id={self.run_id!r}, {len(self.summary)} configs x {asked} questions, "
            f"decision={decision!r}, path={str(self.path)!r})"
        )


def load_run(path: str | Path) -> RunData:
    """Read ``reports/<run_id>``; raises evalkit.run.folder.RunError (one line) for a folder that is not a run."""
    run = _read_run(path)
    root = Path(path)
    frames = [
        pd.read_parquet(pool).assign(chunking=pool.stem) for pool in sorted((root / files.POOLS_DIR).glob("*.parquet"))
    ]
    pools = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["chunking", "question_id"])
    pools = pools[["chunking", *[c for c in pools.columns if c != "chunking"]]]
    manifest = pd.json_normalize(json.loads(json.dumps(run.manifest, default=str)), sep=".").iloc[0]
    return RunData(
        path=root,
        summary=run.summary,
        results=run.results,
        pools=pools,
        manifest=manifest,
        recommendation=run.recommendation,
        questions=_questions(run.manifest, root, run.results),
    )


QUESTION_COLUMNS = ["question_id", "question", "lang", "answerable", "answers", "evidence_mode", "tags", "line"]


def _questions(manifest: Mapping[str, Any], root: Path, results: pd.DataFrame) -> pd.DataFrame | None:
    """The labelled set's questions that the run scored, in the results' order of first appearance."""
    folder = find_labelset(manifest, root)
    if folder is None:
        return None
    try:
        labelset = load_labelset(folder)
    except LabelsetError:
        return None
    asked = list(dict.fromkeys(results["question_id"])) if "question_id" in results.columns else []
    by_id = {q.id: q for q in labelset.questions}
    rows = [
        [q.id, q.question, q.lang, q.answerable, list(q.answers), q.evidence_mode, dict(q.tags), q.line]
        for q in (by_id[i] for i in asked if i in by_id)
    ]
    return pd.DataFrame(rows, columns=QUESTION_COLUMNS)


def run_sweep(*overrides: str, config_dir: str | Path | None = None, quiet: bool = False) -> RunData:
    """Run (or resume) a sweep with the CLI's overrides; returns the finished run as :class:`RunData`.

    ``config_dir``: a team's conf/ (as ``--config-dir``); None: ``./conf`` when it holds project.yaml, else
    evalkit's bundled configs. ``quiet``: keep evalkit's stderr lines (progress, headline) to the exception.
    A ``-m`` style sweep (``retriever=bm25,dense``) is one call per value here.
    """
    from evalkit.overrides import compose_run
    from evalkit.settings import ConfigError
    from evalkit.sweep import sweep

    argv = [*(["--config-dir", str(config_dir)] if config_dir is not None else []), *overrides]
    source = find_source(argv, Path.cwd())
    if any("," in o.split("=", 1)[-1] and "[" not in o for o in overrides):
        raise SweepError("a multirun override (a,b): call run_sweep once per value", 2)
    try:
        cfg = compose_run(source, source.argv)  # composed once (explained on the error path)
    except ConfigError as exc:
        raise SweepError(str(exc), 2) from None
    err = io.StringIO()
    try:
        if quiet:
            with redirect_stderr(err):
                run_dir = sweep(cfg)
        else:
            run_dir = sweep(cfg)
    except SystemExit as exc:
        lines = [line for line in err.getvalue().splitlines() if "error" in line]
        raise SweepError(lines[-1] if lines else f"the sweep stopped (exit {exc.code})", int(exc.code or 1)) from None
    return load_run(run_dir)
