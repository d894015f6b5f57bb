"""Accuracy by gold position: per arm and third of the context, flip rate, deliberate placements."""

from __future__ import annotations

from evalkit.report import fmt, plots
from evalkit.report.html import Markup, img, no_data, section, table, tag
from evalkit.report.model import ReportModel
from evalkit.run import files


def position(model: ReportModel) -> Markup:
    source = files.POSITION
    if not model.run.has_position:
        return section(source.key, source.title, [no_data(source.where, source.how_to_get)])
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
