"""The labelled set: questions by language, answerability, evidence mode and tag (bars and tables)."""

from __future__ import annotations

import json
from collections import Counter

from evalkit.report import fmt, plots
from evalkit.report.html import Markup, img, section, table
from evalkit.report.model import ReportModel


def labelset(model: ReportModel) -> Markup:
    one = model.run.results[model.run.results["config_id"] == model.focus_id]
    panels: dict[str, dict[str, float]] = {}
    for column in ("lang", "answerable", "evidence_mode"):
        if column in one.columns:
            panels[column] = {str(k): float(v) for k, v in one[column].astype(str).value_counts().items()}
    if model.labelset is not None:
        for key in _plottable_tags(model):
            counter = Counter(str(q.tags[key]) for q in model.labelset.questions.values() if key in q.tags)
            panels[f"tag: {key}"] = {k: float(v) for k, v in counter.most_common(10)}
    body: list[Markup] = []
    if panels:
        png = plots.draw(lambda: plots.bars(panels), model.font)
        body.append(img(png, "questions by " + ", ".join(panels)))
    body.append(Markup('<div class="grid2">') + Markup("".join(labelset_tables(model))) + Markup("</div>"))
    note = f"{model.run.labelset_name}: {fmt.count(len(one))} questions scored."
    return section("labelset", "The labelled set", body, note)


def _plottable_tags(model: ReportModel, most: int = 2) -> list[str]:
    """Tags with 2 to 12 distinct scalar values (other than lang), most widely used first."""
    assert model.labelset is not None
    values: dict[str, set[str]] = {}
    uses: Counter[str] = Counter()
    for q in model.labelset.questions.values():
        for key, value in q.tags.items():
            if key == "lang" or isinstance(value, list | dict):
                continue
            values.setdefault(key, set()).add(str(value))
            uses[key] += 1
    keep = [k for k, _ in uses.most_common() if 2 <= len(values[k]) <= 12]
    return keep[:most]


def labelset_tables(model: ReportModel) -> list[Markup]:
    """Counts by language, answerability, evidence mode, and each tag."""
    one = model.run.results[model.run.results["config_id"] == model.focus_id]
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
