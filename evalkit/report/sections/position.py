"""Accuracy by gold position: per arm and third of the context, flip rate, deliberate placements."""

from __future__ import annotations

import json
from pathlib import Path

from evalkit.report import fmt, plots
from evalkit.report.html import Markup, img, no_data, section, table, tag
from evalkit.report.model import ReportModel
from evalkit.run import files


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _status(model: ReportModel) -> Markup | None:
    """Why the experiment did not run, and the command that runs it (position/status.json)."""
    status = _read(model.run.root / files.POSITION_STATUS)
    if status is None or status.get("ran"):
        return None
    return tag("p", f"The position experiment did not run: {status.get('why')}. To run it: {status.get('command')}")


def _effects(model: ReportModel) -> list[Markup]:
    """Paired position effects with the smallest effect the experiment could detect (position/effects.json)."""
    record = _read(model.run.root / files.POSITION_EFFECTS)
    if not record or not record.get("effects"):
        return []
    rows = []
    for e in record["effects"]:
        mde = "could not detect any effect at this size" if e.get("mde_unbounded") else fmt.pct(e.get("mde"))
        rows.append([
            e["arm"], f"{e['candidate']} vs {e['baseline']}", fmt.pct(e.get("candidate_accuracy")),
            fmt.pct(e.get("baseline_accuracy")), f"{100 * e['delta']:+.1f} pts [{100 * e['delta_low']:+.1f}, "
            f"{100 * e['delta_high']:+.1f}]", f"{e.get('mcnemar_p', float('nan')):.2f}", str(e.get("n_questions")), mde,
        ])  # fmt: skip
    head = ["arm", "placement", "accuracy", "baseline", "difference [95% CI]", "McNemar p", "questions",
            "smallest detectable effect"]  # fmt: skip
    arms = [[a["arm"], fmt.pct(a.get("accuracy_answerable")), fmt.pct(a.get("refused_unanswerable")),
             fmt.pct(a.get("citations_valid")), f"{a.get('mean_prompt_tokens') or 0:,.0f}",
             str(a.get("n_does_not_fit")) + (f" (needs {a['tokens_needed_does_not_fit']:,} tokens)"
                                              if a.get("tokens_needed_does_not_fit") else "")]
            for a in record.get("arms", [])]  # fmt: skip
    return [
        tag("h3", "Paired position effects (same questions, same shuffles of the other chunks)"),
        table(head, rows, numeric=(2, 3, 4, 5, 6)),
        tag("h3", "Arms: stuff vs retrieve-5 vs retrieve-10"),
        table(
            [
                "arm",
                "accuracy (answerable)",
                "refusals (unanswerable)",
                "citations valid",
                "prompt tokens",
                "does not fit",
            ],
            arms,
            numeric=(1, 2, 3, 4),
        ),
    ]


def position(model: ReportModel) -> Markup:
    source = files.POSITION
    if not model.run.has_position:
        status = _status(model)
        return section(
            source.key, source.title, [status if status is not None else no_data(source.where, source.how_to_get)]
        )
    summary = model.position
    if summary is None:
        return section(
            source.key,
            source.title,
            [
                tag(
                    "p",
                    f"{source.where}: columns missing (arm, placement, gold_bucket, accuracy / correct).",
                    class_="nodata",
                )
            ],
        )
    body: list[Markup] = []
    if summary.accuracy and summary.buckets:
        png = plots.draw(lambda: plots.grouped_bars(summary.buckets, summary.accuracy), model.font)
        body.append(img(png, "accuracy by gold position per arm"))
    rows = [
        [arm, *[fmt.interval(c) for c in cis], fmt.pct(summary.flip_rate.get(arm))]
        for arm, cis in summary.accuracy.items()
    ]
    body.append(
        table(
            ["arm (shuffled order)", *summary.buckets, "flip rate across repeats"],
            rows,
            numeric=tuple(range(1, 2 + len(summary.buckets))),
        )
    )
    body.extend(_effects(model))
    if summary.controlled:
        rows = [[arm, placement, fmt.interval(ci)] for arm, placement, ci in summary.controlled]
        body.append(tag("h3", "Gold placed deliberately"))
        body.append(table(["arm", "placement", "accuracy [95% CI]"], rows, numeric=(2,)))
    note = (
        f"From {files.POSITION_SUMMARY if summary.source == 'summary' else files.POSITION_ROWS}. Accuracy: each "
        "question's share of correct answers, averaged over questions, with a 95% bootstrap CI over questions; "
        "head/mid/tail is the third of the context the gold sat in. Flip rate: share of questions whose "
        "correctness changed across shuffled repeats."
    )
    return section(source.key, source.title, body, note)
