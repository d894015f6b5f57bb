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
    """gate.json as gate.md words it: the verdict, candidate and baseline, the route, every check. A run made for
    a gate (CI) opens with this section, so the page a reviewer opens says what the check said."""
    report = model.run.gate
    if report is None:
        return None
    passed = bool(report.get("passed"))
    base, cand = report.get("baseline") or {}, report.get("candidate") or {}
    labelset = (report.get("labelset") or {}).get("name", "?")
    verdict = tag(
        "div",
        ["evalkit gate: ", tag("span", "PASS" if passed else "FAIL", class_="pill good" if passed else "pill bad")],
        class_="big",
    )
    compared = tag(
        "p",
        [
            "Candidate ",
            tag("code", cand.get("config_id", "?")),
            f" ({cand.get('run_id', '?')}) against production ",
            tag("code", base.get("config_id", "?")),
            f" ({base.get('run_id', '?')}) on labelled set ",
            tag("strong", labelset),
            f" ({report.get('n_questions', '?')} questions). Non-inferiority at "
            f"{fmt.pct(report.get('confidence'), 0)} confidence: paired bootstrap over questions, "
            f"{report.get('n_resamples', '?')} resamples.",
        ],
    )
    body: list[Markup] = [verdict, compared]
    if report.get("route"):
        body.append(tag("p", ["Route: ", report["route"]], class_="route"))
    rows = []
    for check in report.get("checks", []):
        prop = bool(check.get("proportion", True))
        rows.append(
            [
                check.get("label") or check.get("metric"),
                fmt.value(check.get("baseline"), prop),
                fmt.value(check.get("candidate"), prop),
                fmt.check_delta(check).replace(" points", " pts"),  # gate.md's wording
                check.get("margin_text", ""),
                tag(
                    "span",
                    "pass" if check.get("passed") else "FAIL",
                    class_="pill good" if check.get("passed") else "pill bad",
                ),
            ]
        )
    body.append(table(["metric", "baseline", "candidate", "Δ [CI]", "margin", "result"], rows, numeric=(1, 2, 3)))
    skipped = [f"{s.get('metric')}: {s.get('reason')}" for s in report.get("skipped", [])]
    if skipped:
        body.append(tag("p", "Skipped: " + "; ".join(skipped), class_="note"))
    failed = [c.get("label") or c.get("metric") for c in report.get("checks", []) if not c.get("passed")]
    if failed:
        body.append(
            tag(
                "p",
                f"Worse than production beyond the margin (or not shown to be within it): {', '.join(failed)}.",
            )
        )
    note = f"From {files.GATE_JSON} in this folder (python -m evalkit.gate), as {files.GATE_MD} says it."
    return section("gate", "Gate", body, note)
