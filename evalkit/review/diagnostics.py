"""Plain-word diagnostics: rules applied where the data supports them, each stating its arithmetic.

Every rule is a pure function of the run's frames (and the paired comparisons
of :mod:`evalkit.scoring.compare`, directly or through the steps of
:mod:`evalkit.review.analysis`) returning :class:`Finding` records.
A rule that fires gives advice; one that does not still shows its numbers, so
a reviewer sees what was checked.

Advice is gated before it is given (issue 47): every value a rule advises names a config of the run (a lower
overlap, a smaller top_k, a lower threshold, the calibration's threshold scored beside the grid), the gate
judges that config against production (:func:`evalkit.review.advice_gate.config_verdict`), and advice the gate
fails is reported as failing, not advised. Rules that would contradict each other on one page defer to the
measured one: a measured overlap step without a gain outranks the gold-cut heuristic's "raise the overlap",
and a measured top_k step without a gain outranks "the best config sits on the grid's largest top_k".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from evalkit.report import fmt
from evalkit.report.decision import Objective
from evalkit.review.advice_gate import ConfigVerdict, GateWord, gated
from evalkit.review.analysis import Settings, find_config, k_label, resampling
from evalkit.review.diagnostic_moves import with_moves
from evalkit.review.threshold_advice import calibration_rows
from evalkit.review.threshold_rules import calibration_rule, first_raise, raised_steps, threshold_rule
from evalkit.run.review import Finding, PositionSummary, Step
from evalkit.scoring import compare
from evalkit.scoring.registry import measure
from evalkit.scoring.values import matrix

MIN_CHUNK_GROWTH = 0.05
"""Overlap rule: below this growth in chunk count, overlap costs too little to flag."""
MAX_GOLD_CUT = 0.05
"""Gold-cut rule: flag a chunking whose boundaries split more than this share of answer spans."""


def overlap_rule(
    results: pd.DataFrame,
    summary: pd.DataFrame,
    chunkings: pd.DataFrame,
    rec: Mapping[str, Any],
    objective: Objective,
    statistics: Settings,
    config_gate: ConfigVerdict | None = None,
) -> tuple[Finding, ...]:
    """More overlap means more chunks; flag it when the objective gains no more than the noise. The advised lower
    overlap (the recommended k and threshold at that chunking) carries the gate's verdict (:func:`gated`)."""
    return tuple(f for _, f in _overlap_findings(results, summary, chunkings, rec, objective, statistics, config_gate))


def _overlap_findings(
    results: pd.DataFrame,
    summary: pd.DataFrame,
    chunkings: pd.DataFrame,
    rec: Mapping[str, Any],
    objective: Objective,
    statistics: Settings,
    config_gate: ConfigVerdict | None,
) -> list[tuple[int | None, Finding]]:
    """:func:`overlap_rule`'s findings, each with its chunk size (None: not applicable)."""
    m = measure(objective.primary)
    k, t = int(rec["top_k"]), float(rec["threshold"])
    counts = dict(zip(chunkings["chunking"], chunkings.get("n_chunks", pd.Series(dtype=float)), strict=False))
    findings: list[tuple[int | None, Finding]] = []
    for size, group in summary.groupby("chunk_size", sort=True):
        overlaps = sorted(group["chunk_overlap"].unique())
        if len(overlaps) < 2:
            continue
        keys = group.drop_duplicates("chunk_overlap").set_index("chunk_overlap")["chunking"]
        low = overlaps[0]
        for high in overlaps[1:]:
            lo_id = find_config(summary, keys[low], k, t)
            hi_id = find_config(summary, keys[high], k, t)
            n_lo, n_hi = counts.get(keys[low]), counts.get(keys[high])
            if lo_id is None or hi_id is None or not n_lo or n_hi is None:
                continue
            wide = matrix(results, m, [lo_id, hi_id])
            c = compare.paired(
                wide[lo_id].to_numpy(), wide[hi_id].to_numpy(), resampling(statistics), m.name, wide.index.to_numpy()
            )
            if c is None:  # no question defines the objective in both configs: nothing to compare
                continue
            growth = n_hi / n_lo - 1
            arithmetic = (
                f"chunk_size {size}: overlap {low} → {high} takes the index from {fmt.count(n_lo)} to "
                f"{fmt.count(n_hi)} chunks ({growth:+.0%}); {k_label(m.name, k)} changes by {fmt.delta(c)}"
            )
            no_gain = c.delta_low <= 0.0
            if growth >= MIN_CHUNK_GROWTH and no_gain:
                findings.append(
                    (
                        int(size),
                        Finding(
                            "overlap",
                            True,
                            f"overlap {high} adds {growth:.0%} chunks for {fmt.signed_points(c.delta)} points "
                            f"{k_label(m.name, k)}, within noise",
                            arithmetic,
                            gated(
                                f"the chunk count grows while {k_label(m.name, k)} does not: lower the overlap first, "
                                f"to {low} at chunk_size {size} (a {1 - n_lo / n_hi:.0%} smaller index for the same "
                                f"{k_label(m.name, k)})",
                                lo_id,
                                config_gate,
                                f"lowering the overlap to {low} at chunk_size {size}",
                            ),
                        ),
                    )
                )
            else:
                why = "the gain is beyond the noise" if not no_gain else "the index barely grows"
                findings.append(
                    (int(size), Finding("overlap", False, f"overlap {high} at chunk_size {size}: {why}", arithmetic))
                )
    if not findings:
        findings.append(
            (None, Finding("overlap", False, "not applicable: the grid has one overlap per chunk size", ""))
        )
    return findings


def _flat(step: Step) -> bool:
    """The step gains nothing beyond the noise (its interval reaches 0 or below)."""
    return step.comparison.delta_low <= 0.0


def top_k_rule(
    k_steps: tuple[Step, ...], summary: pd.DataFrame, metric: str, config_gate: ConfigVerdict | None = None
) -> tuple[Finding, ...]:
    """A larger top_k that gains no more than the noise only lengthens the prompt; the advised smaller top_k
    carries the gate's verdict (:func:`gated`)."""
    mean_returned = dict(zip(summary["config_id"], summary["mean_returned"], strict=True))
    findings = []
    for s in k_steps:
        before, after = mean_returned.get(s.from_id, np.nan), mean_returned.get(s.to_id, np.nan)
        growth = after / before - 1 if before else np.nan
        arithmetic = (
            f"top_k {s.frm:g} → {s.to:g}: {fmt.num(before, 1)} → {fmt.num(after, 1)} chunks returned per question "
            f"({growth:+.0%} context); {measure(metric).label.replace('@k', '')} {fmt.delta(s.comparison)}"
        )
        if _flat(s):
            findings.append(
                Finding(
                    "top_k",
                    True,
                    f"top_k {s.frm:g} → {s.to:g} adds {growth:.0%} context for {fmt.signed_points(s.comparison.delta)} "
                    "points, within noise",
                    arithmetic,
                    gated(
                        f"top_k {s.frm:g} → {s.to:g} leaves {measure(metric).label.replace('@k', '')} flat: lower "
                        f"the input budget back to top_k {s.frm:g}",
                        s.from_id,
                        config_gate,
                        f"lowering top_k to {s.frm:g}",
                    ),
                )
            )
        else:
            findings.append(
                Finding("top_k", False, f"top_k {s.frm:g} → {s.to:g} still gains beyond the noise", arithmetic)
            )
    if not findings:
        findings.append(Finding("top_k", False, "not applicable: the grid has one top_k", ""))
    return tuple(findings)


def position_rule(position: PositionSummary | None) -> tuple[Finding, ...]:
    """Wrong answers concentrated in the middle of the context point at placement, not chunk_size."""
    if position is None:
        return (Finding("position", False, "no position data in this run", ""),)
    if not {"head", "mid", "tail"} <= set(position.buckets):
        return (Finding("position", False, "position data lacks head/mid/tail buckets", ""),)
    i = {b: position.buckets.index(b) for b in ("head", "mid", "tail")}
    findings = []
    for arm, cis in position.accuracy.items():
        head, mid, tail = cis[i["head"]], cis[i["mid"]], cis[i["tail"]]
        if head is None or mid is None or tail is None:
            continue
        arithmetic = (
            f"arm {arm}: accuracy head {fmt.interval(head)}, mid {fmt.interval(mid)}, tail {fmt.interval(tail)}"
        )
        edge = max(head.mean, tail.mean)
        if mid.mean < min(head.mean, tail.mean) and mid.high < edge:
            findings.append(
                Finding(
                    "position",
                    True,
                    f"arm {arm}: wrong answers concentrate where the gold sits in the middle "
                    f"({fmt.pct(mid.mean)} vs {fmt.pct(edge)} at the better edge)",
                    arithmetic,
                    "fix placement and rerank (strongest chunks first and last), not chunk_size",
                )
            )
        else:
            findings.append(
                Finding("position", False, f"arm {arm}: no lost-in-the-middle dip beyond the noise", arithmetic)
            )
    return tuple(findings)


def gold_cut_rule(chunkings: pd.DataFrame, flat_overlap: frozenset[int] = frozenset()) -> tuple[Finding, ...]:
    """Chunk boundaries that split answer spans make them unretrievable whole.

    ``flat_overlap``: chunk sizes where a higher overlap was measured and gained nothing beyond the noise (the
    overlap rule fired): there "raise the overlap" would contradict that measurement, so only chunk_size is advised.
    """
    if "gold_cut_share" not in chunkings.columns:
        return ()
    findings = []
    for row in chunkings.sort_values("chunking").itertuples(index=False):
        share = float(row.gold_cut_share) if row.gold_cut_share is not None else np.nan
        if np.isfinite(share) and share > MAX_GOLD_CUT:
            size = getattr(row, "chunk_size", None)
            fix = "raise the overlap (or chunk_size) so answers are not split"
            if size is not None and int(size) in flat_overlap:
                fix = (
                    f"raise the chunk_size so answers are not split (a higher overlap at chunk_size {int(size)} was "
                    "measured: it gains nothing beyond the noise)"
                )
            findings.append(
                Finding(
                    "gold_cut",
                    True,
                    f"{row.chunking}: {fmt.pct(share)} of answer spans are cut by a chunk boundary",
                    f"gold_cut_share = {share:.3f} (answerable questions whose span no single chunk holds whole)",
                    fix,
                )
            )
    return tuple(findings)


VALUE_COLUMNS = ("recall", "hit", "precision", "context_precision", "mrr", "ndcg", "zero_hit", "n_returned")
"""Per-question values compared by the overlap-without-effect flag."""


def whole_document_rule(summary: pd.DataFrame, manifest: Mapping[str, Any] | None) -> tuple[Finding, ...]:
    """Chunkings whose chunks are whole documents: chunk_size and overlap no longer change anything."""
    n_docs = ((manifest or {}).get("labelset") or {}).get("documents")
    if not n_docs or "n_chunks" not in summary.columns:
        return ()
    findings = []
    for row in summary.drop_duplicates("chunking").itertuples(index=False):
        if 0 < int(row.n_chunks) <= int(n_docs):
            findings.append(
                Finding(
                    "degenerate",
                    True,
                    f"{row.chunking}: every chunk is a whole document",
                    f"{fmt.count(row.n_chunks)} chunks for {fmt.count(n_docs)} documents (summary n_chunks, "
                    "manifest labelset.documents)",
                    f"read chunk_size {row.chunk_size} as whole-document retrieval: every document fits one chunk, "
                    "so larger sizes and overlap change nothing; keep chunk sizes below the document length to "
                    "compare chunkings",
                )
            )
    return tuple(findings)


def overlap_effect_rule(results: pd.DataFrame, summary: pd.DataFrame) -> tuple[Finding, ...]:
    """Two chunkings differing only in overlap whose every per-question value is identical."""
    return tuple(f for _, f in _no_effect(results, summary))


def _no_effect(results: pd.DataFrame, summary: pd.DataFrame) -> list[tuple[int, Finding]]:
    """:func:`overlap_effect_rule`'s findings, each with its chunk size."""
    columns = [c for c in VALUE_COLUMNS if c in results.columns]
    keys = [c for c in ("chunker", "chunk_size", "retriever", "reranker") if c in summary.columns]
    chunkings = summary.drop_duplicates("chunking")
    findings: list[tuple[int, Finding]] = []
    for _, group in chunkings.groupby(keys, sort=True):
        group = group.sort_values("chunk_overlap")
        if len(group) < 2:
            continue
        values = {
            c: results[results["chunking"] == c].sort_values(["top_k", "threshold", "question_id"])[columns]
            for c in group["chunking"]
        }
        low = group.iloc[0]
        for high in group.iloc[1:].itertuples(index=False):
            a, b = values[low["chunking"]], values[high.chunking]
            same = a.shape == b.shape and all(
                np.array_equal(a[c].to_numpy(dtype=float), b[c].to_numpy(dtype=float), equal_nan=True) for c in columns
            )
            if same and len(a):
                finding = Finding(
                    "degenerate",
                    True,
                    f"overlap {high.chunk_overlap} at chunk_size {high.chunk_size} has no effect",
                    f"{high.chunking} and {low['chunking']}: {', '.join(columns)} identical for all "
                    f"{fmt.count(len(a))} (config, question) rows",
                    f"drop overlap {high.chunk_overlap} at chunk_size {high.chunk_size}: it changes no result",
                )
                findings.append((int(high.chunk_size), finding))
    return findings


def grid_edge_rule(
    summary: pd.DataFrame, objective: Objective, flat_k: frozenset[float] = frozenset()
) -> tuple[Finding, ...]:
    """The best config by the objective's measure sits on the largest top_k or chunk_size of the grid.

    ``flat_k``: top_k values whose step into them was measured to gain nothing beyond the noise (the top_k rule
    fired): a best point estimate there is noise, and "try a larger top_k" would contradict "lower top_k".
    """
    m = measure(objective.primary)
    if m.name not in summary.columns or summary[m.name].isna().all():
        return ()
    best = summary.loc[summary[m.name].astype(float).idxmax()]
    label = k_label(m.name, int(best["top_k"]))
    findings = []
    for axis in ("top_k", "chunk_size"):
        values = sorted(summary[axis].unique())
        if len(values) > 1 and best[axis] == values[-1]:
            if axis == "top_k" and float(best[axis]) in flat_k:
                findings.append(
                    Finding(
                        "degenerate",
                        False,
                        f"the best {label} config uses the largest top_k of the grid ({best[axis]:g}), but the step "
                        "into it gains nothing beyond the noise",
                        f"{best['config_id']}: {label} {fmt.pct(best[m.name])}; see the top_k finding",
                    )
                )
                continue
            findings.append(
                Finding(
                    "degenerate",
                    True,
                    f"the best {label} config uses the largest {axis} of the grid ({best[axis]:g})",
                    f"{best['config_id']}: {label} {fmt.pct(best[m.name])}; grid {axis} "
                    + ", ".join(f"{v:g}" for v in values),
                    f"extend the grid: try {axis} beyond {best[axis]:g} before trusting the pick",
                )
            )
    return tuple(findings)


def diagnose(
    results: pd.DataFrame,
    summary: pd.DataFrame,
    chunkings: pd.DataFrame,
    rec: Mapping[str, Any],
    objective: Objective,
    statistics: Settings,
    k_steps: tuple[Step, ...],
    calibrated: float | None,
    position: PositionSummary | None,
    calibration: pd.DataFrame | None = None,
    manifest: Mapping[str, Any] | None = None,
    moves: tuple[Any, ...] = (),
    gate_verdict: Callable[[float], GateWord] | None = None,
    config_gate: ConfigVerdict | None = None,
) -> tuple[Finding, ...]:
    """Every rule, fired findings first, each fired one with its knob's one-knob move (``moves``: the decision's).

    ``calibration`` (calibration.parquet) falls back on the per-chunking info files; ``manifest``
    gives the document count of the whole-document flag, which is skipped without it. ``gate_verdict`` (threshold
    -> verdict) and ``config_gate`` (config -> verdict) are the gate's word on advice (:mod:`.advice_gate`).
    """
    table = calibration_rows(calibration, chunkings)
    raised_at = first_raise(raised_steps(results, summary, rec, objective, statistics))
    sized = _overlap_findings(results, summary, chunkings, rec, objective, statistics, config_gate)
    no_effect = _no_effect(results, summary)
    # Chunk sizes where a higher overlap was measured to gain nothing (or to change nothing at all).
    flat_overlap = frozenset(size for size, f in (*sized, *no_effect) if f.fired and size is not None)
    flat_k = frozenset(float(s.to) for s in k_steps if _flat(s))
    found = (
        tuple(f for _, f in sized)
        + top_k_rule(k_steps, summary, objective.primary, config_gate)
        + calibration_rule(table, results, rec, objective, gate_verdict, raised_at)
        + threshold_rule(results, summary, rec, objective, statistics, calibrated, table, gate_verdict, config_gate)
        + whole_document_rule(summary, manifest)
        + tuple(f for _, f in no_effect)
        + grid_edge_rule(summary, objective, flat_k)
        + gold_cut_rule(chunkings, flat_overlap)
        + position_rule(position)
    )
    return with_moves(tuple(sorted(found, key=lambda f: not f.fired)), moves)
