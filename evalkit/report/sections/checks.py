"""The verdict sections: the diagnostic rules that fired (and those checked quietly) and the gate's result."""

from __future__ import annotations

from evalkit.report import fmt
from evalkit.report.html import Markup, section, table, tag
from evalkit.report.model import ReportModel
from evalkit.run import files


def diagnostics(model: ReportModel) -> Markup:
    fired = [f for f in model.findings if f.fired]
    quiet = [f for f in model.findings if not f.fired]
    body: list[Markup] = []
    if fired:
        items = [
            tag(
                "li",
                [
                    tag("strong", f.title),
                    " → ",
                    f.advice,
                    tag("span", f.arithmetic, class_="finding-arith"),
                    tag("span", f.move, class_="finding-arith") if f.move else "",
                ],
            )
            for f in fired
        ]
        body.append(tag("ul", items, class_="findings"))
    else:
        body.append(tag("p", "No rule fired: nothing to change on these grounds."))
    if quiet:
        items = [
            tag("li", [f.title, tag("span", f.arithmetic, class_="finding-arith") if f.arithmetic else ""])
            for f in quiet
        ]
        body.append(
            tag(
                "details",
                [tag("summary", f"Checked without a finding ({len(quiet)})"), tag("ul", items, class_="findings")],
            )
        )
    note = (
        "Rules, on the objective's measure: the chunk count grows while it does not → lower the overlap first; "
        "a larger top_k leaves it flat → lower the input budget back; a higher threshold raises zero-hit "
        "without a gain → widen the candidate pool, do not lower the threshold; wrong answers concentrate "
        "mid-context → fix placement and rerank, not chunk_size; answer spans cut by chunk boundaries → more "
        "overlap. A fired rule names the one-knob move from production that carries it out, with the gate's "
        "verdict. Gains are paired 95% bootstrap CIs at the recommended top_k and threshold, "
        f"{fmt.resampled(model.statistics.cluster_by)}."
    )
    return section("diagnostics", "Diagnostics", body, note)


def gate(model: ReportModel) -> Markup | None:
    report = model.run.gate
    if report is None:
        return None
    passed = bool(report.get("passed"))
    head = tag(
        "p",
        [
            tag("span", "PASS" if passed else "FAIL", class_="pill good" if passed else "pill bad"),
            " ",
            f"candidate {report.get('candidate', {}).get('config_id', '?')} vs baseline "
            f"{report.get('baseline', {}).get('config_id', '?')} at "
            f"{fmt.pct(report.get('confidence'), 0)} confidence",
        ],
    )
    rows = []
    for check in report.get("checks", []):
        prop = bool(check.get("proportion", True))
        rows.append(
            [
                check.get("metric"),
                fmt.value(check.get("baseline"), prop),
                fmt.value(check.get("candidate"), prop),
                fmt.check_delta(check),
                check.get("margin_text", ""),
                tag(
                    "span",
                    "pass" if check.get("passed") else "fail",
                    class_="pill good" if check.get("passed") else "pill bad",
                ),
            ]
        )
    skipped = [f"{s.get('metric')}: {s.get('reason')}" for s in report.get("skipped", [])]
    body = [head, table(["metric", "baseline", "candidate", "delta [CI]", "margin", "result"], rows, numeric=(1, 2, 3))]
    if skipped:
        body.append(tag("p", "Skipped: " + "; ".join(skipped), class_="note"))
    return section("gate", "Gate", body, f"From {files.GATE_JSON} in this folder (python -m evalkit.gate).")
