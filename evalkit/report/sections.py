"""The report's sections, rendered from a :class:`ReportModel` (text and tables; plots come from plots.py)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from typing import Any

from evalkit.report import fmt
from evalkit.report.analysis import cost_key
from evalkit.report.drilldown import question_details
from evalkit.report.html import Markup, esc, join, no_data, section, table, tag
from evalkit.report.measures import Measure, measure
from evalkit.report.model import ReportModel
from evalkit.run import files
from evalkit.scoring import stats

TOP_CONFIGS = 15
"""Rows of the configs-versus-baseline table (the Holm family is always all eligible configs)."""


def _points(share: float) -> str:
    value = 100 * share
    return f"{value:g} point" + ("" if value == 1 else "s")


def describe_config(row: Mapping[str, Any]) -> str:
    return (
        f"chunk_size {int(row['chunk_size'])} · overlap {int(row['chunk_overlap'])} · "
        f"top_k {int(row['top_k'])} · threshold {fmt.threshold(float(row['threshold']))}"
    )


def verdict(c: stats.PairedComparison | None, m: Measure, alpha: float, adjusted: bool = False) -> Markup:
    """``within noise`` when the CI contains 0, else better/worse (and whether Holm keeps it)."""
    if c is None:
        return tag("span", "n/a", class_="pill neutral")
    if c.delta_low == c.delta_high == 0.0:
        return tag("span", "no difference", class_="pill neutral")
    if stats.within_noise(c):
        return tag("span", "within noise", class_="pill neutral")
    better = (c.delta > 0) == m.higher_is_better
    word = "better" if better else "worse"
    if adjusted and c.p_adjusted is not None and c.p_adjusted >= alpha:
        return tag("span", f"{word}, not after Holm", class_="pill warn")
    return tag("span", word, class_="pill good" if better else "pill bad")


def recommendation(model: ReportModel) -> Markup:
    rec, row, objective = model.rec, model.rec_row, model.rec.objective
    m = measure(objective.metric)
    alpha = 1 - objective.level
    body: list[Markup | str] = [
        tag("p", "Recommended configuration", class_="note"),
        tag("div", describe_config(row), class_="big"),
        tag(
            "p",
            [
                "config ",
                tag("code", rec.config_id),
                f" · {model.run.labelset_name} · "
                f"{fmt.count(row.get('n_questions'))} questions ({fmt.count(row.get('n_answerable'))} answerable)",
            ],
            class_="note",
        ),
    ]
    label = m.label.replace("@k", f"@{int(row['top_k'])}")
    caps = []
    if rec.n_over_zero_hit_cap:
        caps.append(f"{rec.n_over_zero_hit_cap} over the zero-hit cap")
    if rec.n_over_cost_cap:
        caps.append(f"{rec.n_over_cost_cap} over the cost cap")
    why = (
        f"Objective: {objective.describe()}. {rec.n_eligible} of {rec.n_configs} configs eligible"
        + (f" ({', '.join(caps)})" if caps else "")
        + "."
    )
    if rec.caps_relaxed:
        why += " No config met the caps, so all were considered."
    leader = model.run.config_row(rec.leader_id)
    ties = len(rec.ties)
    if rec.config_id == rec.leader_id:
        why += f" It has the best mean {label}"
        why += (
            f"; {ties - 1} other config(s) tie with it (within {_points(objective.tie_tolerance)} and "
            "within noise)"
            " and none is cheaper."
            if ties > 1
            else "."
        )
    else:
        rec_index, lead_index = row.get("stored_chars"), leader.get("stored_chars")
        index_words = (
            f"the same index ({fmt.count(rec_index)} characters)"
            if rec_index == lead_index
            else f"an index of {fmt.count(rec_index)} characters vs {fmt.count(lead_index)}"
        )
        why += (
            f" The best mean is {fmt.pct(leader.get(objective.metric))} ({leader['config_id']}); "
            f"{ties} configs tie with it (mean at most {_points(objective.tie_tolerance)} below and "
            f"the paired 95% CI of the difference contains 0). The recommendation is the cheapest of them: "
            f"{index_words}, about {fmt.num(cost_key(row)[2], 0)} vs {fmt.num(cost_key(leader)[2], 0)} context "
            "characters per question."
        )
    body.append(tag("p", why))
    comparison = model.comparison
    if comparison is None:
        point = model.run.baseline_point()
        body.append(
            tag(
                "p",
                [
                    tag("strong", "No baseline comparison: "),
                    (
                        f"the production grid point ({point.describe()}) is not in this grid. "
                        "Include its values in the sweep, e.g. "
                        f"python -m evalkit.sweep chunk_size=[...,{point.chunk_size}] "
                        f"chunk_overlap=[...,{point.chunk_overlap}] top_k=[...,{point.top_k}]."
                    )
                    if point
                    else "the manifest has no baseline block.",
                ],
            )
        )
        return section("recommendation", "Recommendation", body)
    base_row = model.run.config_row(comparison.baseline_id)
    body.append(
        tag(
            "p",
            [
                "Production (baseline): ",
                tag("strong", describe_config(base_row)),
                " — ",
                tag("code", comparison.baseline_id),
            ],
        )
    )
    same_k = int(base_row["top_k"]) == int(row["top_k"])
    rows = []
    for h in comparison.headline:
        rows.append(
            [
                h.measure.label.replace("@k", f"@{int(row['top_k'])}") if same_k else h.measure.label,
                fmt.interval(h.recommended, h.measure.proportion),
                fmt.interval(h.baseline, h.measure.proportion),
                fmt.delta(h.comparison, h.measure.proportion),
                verdict(h.comparison, h.measure, alpha),
            ]
        )
    body.append(
        table(
            ["measure", "recommended [95% CI]", "baseline [95% CI]", "difference [95% CI]", "verdict"],
            rows,
            numeric=(1, 2, 3),
        )
    )
    if not same_k:
        body.append(tag("p", "@k: each config at its own top_k.", class_="note"))
    cost = cost_sentence(row, base_row)
    if cost:
        body.append(tag("p", cost))
    family = dict(comparison.family)
    own = family.get(rec.config_id)
    if rec.config_id == comparison.baseline_id:
        body.append(tag("p", [tag("strong", "The recommendation is the production config: keep it.")]))
    elif own is not None:
        holm = (
            f"Holm-adjusted p = {fmt.p_value(own.p_adjusted)} across the {len(family)} eligible configs compared "
            "with the baseline"
        )
        if stats.within_noise(own):
            text = (
                f"On {label}, the recommended config differs from production by {fmt.delta(own)}: within noise "
                f"(the 95% CI contains 0; {holm}). Switching buys a cheaper or equal config, not a measured gain."
            )
        elif own.p_adjusted is not None and own.p_adjusted < alpha:
            text = f"On {label}, the recommended config differs from production by {fmt.delta(own)} ({holm})."
        else:
            text = (
                f"On {label}, the recommended config differs from production by {fmt.delta(own)}; the CI excludes "
                f"0 but the difference does not survive the correction for picking among many configs ({holm})."
            )
        body.append(tag("p", text))
    if comparison.mde is not None and comparison.mde.n:
        mde = comparison.mde
        value = (
            "more than 100 points (unmeasurable)"
            if mde.value == float("inf")
            else (f"{fmt.signed_points(mde.value).lstrip('+')} points")
        )
        body.append(
            tag(
                "p",
                (
                    f"Minimum detectable effect: with {fmt.count(mde.n)} paired questions, a difference in {m.label} "
                    f"smaller than {value} cannot reliably be told from noise (80% power, two-sided α = {alpha:g}; "
                    f"{mde.how})."
                ),
                class_="note",
            )
        )
    return Markup(section("recommendation", "Recommendation", body).replace('class="card"', 'class="card rec"', 1))


def cost_sentence(rec: Mapping[str, Any], base: Mapping[str, Any]) -> str:
    """$/query and $/day of the recommended against the baseline config, from the summary (point values)."""
    r, b = rec.get(files.COST_PER_QUERY), base.get(files.COST_PER_QUERY)
    if r is None or b is None or not (float(b) > 0):
        return ""
    change = (float(r) / float(b) - 1) * 100
    text = f"Cost per query: {fmt.money(r)} against {fmt.money(b)} ({change:+.0f}%)".replace("-", fmt.MINUS)
    if rec.get(files.COST_PER_DAY) is not None and base.get(files.COST_PER_DAY) is not None:
        text += f"; per day {fmt.money(rec[files.COST_PER_DAY])} against {fmt.money(base[files.COST_PER_DAY])}"
    model = rec.get("cost_model")
    estimated = " (estimated tokens)" if rec.get("cost_estimated") else ""
    return text + (f" on {model}" if model else "") + estimated + "."


def family_table(model: ReportModel) -> Markup:
    comparison = model.comparison
    objective = model.rec.objective
    m = measure(objective.metric)
    if comparison is None:
        return section(
            "configs",
            "Configs against the baseline",
            [tag("p", "No baseline config in this grid, so no paired comparisons.", class_="note")],
        )
    summary = model.run.summary.set_index("config_id")
    family = dict(comparison.family)
    ordered = sorted(family, key=lambda c: -float(summary.loc[c, objective.metric]))
    shown = ordered[:TOP_CONFIGS]
    for extra in (model.rec.config_id, comparison.baseline_id):
        if extra not in shown:
            shown.append(extra)
    rows = []
    for cid in shown:
        row = summary.loc[cid]
        c = family.get(cid)
        name = [tag("code", cid)]
        if cid == model.rec.config_id:
            name.append(tag("span", " recommended", class_="pill good"))
        if cid == comparison.baseline_id:
            name.append(tag("span", " baseline", class_="pill neutral"))
        rows.append(
            [
                join(name),
                fmt.pct(row[objective.metric]),
                fmt.pct(row.get("zero_hit_answerable")),
                fmt.count(row.get("stored_chars")),
                fmt.delta(c) if c else "—",
                fmt.p_value(c.p_value) if c else "—",
                fmt.p_value(c.p_adjusted) if c else "—",
                verdict(c, m, 1 - objective.level, adjusted=True) if c else "",
            ]
        )
    note = (
        f"{len(shown)} of {len(family)} eligible configs shown, best {m.label} first. Differences are paired "
        f"by question (bootstrap, {objective.n_resamples} resamples, seed {objective.seed}: the smallest p it can "
        f"show is {fmt.p_value(2 / (objective.n_resamples + 1))}); Holm's correction runs over all {len(family)} "
        "comparisons with the baseline."
    )
    headers = [
        "config",
        m.label,
        "zero-hit (answerable)",
        "index chars",
        "Δ vs baseline [95% CI]",
        "p",
        "Holm p",
        "verdict",
    ]
    return section("configs", "Configs against the baseline", [table(headers, rows, numeric=(1, 2, 3, 4, 5, 6))], note)


def diagnostics(model: ReportModel) -> Markup:
    fired = [f for f in model.findings if f.fired]
    quiet = [f for f in model.findings if not f.fired]
    body: list[Markup] = []
    if fired:
        items = [
            tag("li", [tag("strong", f.title), " → ", f.advice, tag("span", f.arithmetic, class_="finding-arith")])
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
        "Rules: more overlap without a gain beyond the noise → lower it; a larger top_k without a gain → cut the "
        "input budget; a higher threshold that raises misses without a gain → widen the pool or use the "
        "calibrated threshold; wrong answers concentrated mid-context → placement and rerank; answer spans cut "
        "by chunk boundaries → more overlap. Gains are paired 95% bootstrap CIs at the recommended top_k and "
        "threshold."
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


def run_over_run(model: ReportModel) -> Markup:
    delta = model.run_delta
    if delta is None:
        return section(
            "compare",
            "Run over run",
            [
                tag(
                    "p",
                    [
                        "Not compared with an earlier run. To see per-metric deltas and flipped questions: ",
                        tag("code", f"python -m evalkit.report {model.run.root} --compare reports/<earlier_run_id>"),
                    ],
                    class_="nodata",
                )
            ],
        )
    body: list[Markup] = [
        tag(
            "p",
            (
                f"Against {delta.earlier_id}: {delta.n_matching} matching configs ({delta.only_now} only in this run, "
                f"{delta.only_earlier} only in the earlier one)."
                + (
                    ""
                    if delta.same_labelset
                    else " The labelled set differs (fingerprint changed): questions were matched "
                    "by id; numbers move with the set as well as the config."
                )
            ),
        )
    ]
    focus = [c for c in (model.rec.config_id, model.baseline_id) if c]
    frame = delta.deltas
    if not frame.empty:
        pick = frame[frame["config_id"].isin(focus)]
        movers = (
            frame[frame["metric"] == "recall"]
            .assign(size=lambda f: f["delta"].abs())
            .sort_values("size", ascending=False)
            .head(10)
        )
        shown = [c for c in focus if c in set(pick["config_id"])]
        cells = {(r.config_id, r.metric): r for r in pick.itertuples(index=False)}
        rows = []
        for metric in dict.fromkeys(pick["metric"]):
            row: list[str] = [metric]
            for cid in shown:
                r = cells.get((cid, metric))
                row.append(f"{fmt.pct(r.earlier)} → {fmt.pct(r.now)} ({fmt.signed_points(r.delta)})" if r else "n/a")
            rows.append(row)
        labels = {model.rec.config_id: "recommended", model.baseline_id: "baseline"}
        headers = ["metric", *[f"{labels.get(c, c)}: earlier → now (Δ points)" for c in shown]]
        body.append(tag("h3", "Recommended and baseline configs"))
        body.append(tag("p", " · ".join(f"{labels.get(c, c)} = {c}" for c in shown), class_="note"))
        body.append(table(headers, rows, numeric=tuple(range(1, len(headers)))))
        rows = [
            [tag("code", r.config_id), fmt.pct(r.earlier), fmt.pct(r.now), fmt.signed_points(r.delta)]
            for r in movers.itertuples(index=False)
        ]
        body.append(tag("h3", "Largest recall changes"))
        body.append(table(["config", "earlier", "now", "Δ points"], rows, numeric=(1, 2, 3)))
    questions = model.labelset.questions if model.labelset else {}
    flips = [
        [
            tag("code", f.config_id),
            tag("code", f.question_id),
            questions[f.question_id].question if f.question_id in questions else "",
            "miss → hit" if f.after > f.before else "hit → miss",
        ]
        for f in delta.flips[:200]
    ]
    body.append(tag("h3", f"Questions that flipped (hit@k changed): {len(delta.flips)}"))
    body.append(table(["config", "question", "text", "change"], flips) if flips else tag("p", "None.", class_="note"))
    return section("compare", "Run over run", body)


def labelset_tables(model: ReportModel) -> list[Markup]:
    """Counts by language, answerability, evidence mode, and each tag."""
    one = model.run.results[model.run.results["config_id"] == model.rec.config_id]
    parts: list[Markup] = []
    for column in ("lang", "answerable", "evidence_mode"):
        if column in one.columns:
            counts = one[column].astype(str).value_counts()
            parts.append(table([column, "questions"], [[k, fmt.count(v)] for k, v in counts.items()], numeric=(1,)))
    if model.labelset is not None:
        tags: dict[str, Counter[str]] = {}
        for q in model.labelset.questions.values():
            for key, value in q.tags.items():
                text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
                tags.setdefault(str(key), Counter())[text] += 1
        rows = []
        for key in sorted(tags):
            counter = tags[key]
            top = ", ".join(f"{v} ({n})" for v, n in counter.most_common(5))
            rows.append([key, fmt.count(sum(counter.values())), fmt.count(len(counter)), top])
        parts.append(table(["tag", "questions with it", "distinct values", "most common"], rows, numeric=(1, 2)))
    return parts


def questions(model: ReportModel) -> Markup:
    drill = model.drilldown
    sel = drill.selection
    lines = [f"{len(sel.question_ids)} of {sel.n_total} questions shown"]
    if len(drill.configs) > 1 and sel.n_differing == 0:
        lines.append("no question's outcome differs between the recommended and the baseline config")
    elif len(drill.configs) > 1:
        lines.append(
            f"all {sel.n_shown_differing} of the {sel.n_differing} whose outcome differs between the "
            "recommended and the baseline config come first"
            if sel.n_shown_differing == sel.n_differing
            else f"the first {sel.n_shown_differing} of the {sel.n_differing} whose outcome differs come first"
        )
    if sel.n_sampled:
        lines.append(
            ("then " if sel.n_shown_differing else "") + f"a random sample of {sel.n_sampled} (seed {sel.seed})"
        )
    note = "; ".join(lines) + (
        ". Outcome: hit for answerable questions, abstention (nothing returned) for "
        "unanswerable ones. Click a row to see the gold span in its document and the chunks "
        "each config returned."
    )
    if model.labelset is None:
        note += " The labelled set folder was not found, so question and document text are missing (--labelset)."
    toolbar = Markup(
        '<div class="toolbar"><input id="qfilter" type="search" placeholder="Filter questions (id, text, answer)" '
        'aria-label="Filter questions"><button id="qexpand" type="button">Expand all</button>'
        f'<button id="qcollapse" type="button">Collapse all</button><span class="note"><span id="qshown">'
        f"{len(sel.question_ids)}</span> shown</span></div>"
    )
    questions_by_id = model.labelset.questions if model.labelset else {}
    items = []
    for qid in sel.question_ids:
        configs = []
        for label, config_id in drill.configs:
            rows = drill.rows[config_id]
            row = rows.loc[qid].to_dict() if qid in rows.index else None
            chunks = drill.chunks[config_id]
            configs.append((label, config_id, row, chunks[chunks["question_id"] == qid]))
        items.append(question_details(qid, questions_by_id.get(qid), configs, drill.documents))
    return section("questions", "Questions", [toolbar, join(items)], note)


def optional_note(source: files.OptionalSource) -> Markup:
    return no_data(source.where, source.how_to_get)


def about(model: ReportModel) -> Markup:
    manifest = model.run.manifest
    labelset = manifest.get("labelset") or {}
    config = manifest.get("config") or {}
    grid = manifest.get("grid") or {}
    objective = model.rec.objective
    items: list[tuple[str, Any]] = [
        ("run id", model.run.run_id),
        ("folder", str(model.run.root)),
        (
            "labelled set",
            f"{labelset.get('name')} at {labelset.get('path')} ({labelset.get('documents')} documents, "
            f"{labelset.get('questions')} questions)",
        ),
        ("labelled set fingerprint", labelset.get("fingerprint")),
        ("retriever", json.dumps(config.get("retriever"), ensure_ascii=False, sort_keys=True)),
        ("embedder", json.dumps(manifest.get("embedder"), ensure_ascii=False, sort_keys=True)),
        (
            "grid",
            f"{len(grid.get('chunkings', []))} chunkings × top_k {grid.get('top_k')} × threshold "
            f"{grid.get('threshold')} = {grid.get('points')} points",
        ),
        ("pool size / relevance tau", f"{config.get('pool_size')} / {config.get('relevance_tau')}"),
        (
            "statistics",
            f"{objective.level:.0%} percentile bootstrap, {objective.n_resamples} resamples, seed "
            f"{objective.seed}; paired by question",
        ),
        ("packages", json.dumps(manifest.get("packages"), sort_keys=True)),
        ("plot font for Chinese", model.font.family or f"none — {model.font.warning}"),
    ]
    dl = join(join([tag("dt", k), tag("dd", v)]) for k, v in items)
    return section("run", "About this run", [Markup(f'<dl class="kv">{dl}</dl>')])


def esc_json(value: Any) -> Markup:
    return esc(json.dumps(value, ensure_ascii=False, sort_keys=True, default=str))
