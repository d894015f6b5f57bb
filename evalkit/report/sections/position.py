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


def _detectable(e: dict) -> str:
    """The MDE, or why there is none (exact power at delta = psi below 0.8)."""
    return fmt.pct(e["mde"]) if e.get("mde") is not None else str(e.get("mde_status") or "not detectable at this size")


def _loglik(e: dict) -> str:
    if e.get("loglik_delta") is None:
        return "not scored"
    low, high = e.get("loglik_low"), e.get("loglik_high")
    ci = f" [{low:+.2f}, {high:+.2f}]" if low is not None and high is not None else ""
    mde = f"; detectable {e['loglik_mde']:.2f}" if e.get("loglik_mde") is not None else ""
    return f"{e['loglik_delta']:+.2f} nats{ci}{mde}"


def _effect_rows(record: dict) -> list[list[str]]:
    return [
        [
            e["arm"], f"{e['candidate']} vs {e['baseline']}", fmt.pct(e.get("candidate_accuracy")),
            fmt.pct(e.get("baseline_accuracy")), f"{100 * e['delta']:+.1f} pts [{100 * e['delta_low']:+.1f}, "
            f"{100 * e['delta_high']:+.1f}]", f"{e.get('mcnemar_p', float('nan')):.2f}",
            f"{e.get('discordance', float('nan')):.2f}", str(e.get("n_questions")), _detectable(e), _loglik(e),
        ]
        for e in record["effects"]
    ]  # fmt: skip


def _flip_sentence(flips: list[dict]) -> Markup | None:
    """The seed's rule: answers that change with the order mean the position effect is still there."""
    shuffled = [f for f in flips if f["placement"] == "shuffle"]
    if not shuffled:
        return None
    parts = [
        f"{f['arm']}: {fmt.pct(f['flip_rate'])} [{fmt.pct(f['flip_low'])}, {fmt.pct(f['flip_high'])}] of {f['n']}"
        for f in shuffled
    ]
    changed = any(f["flip_low"] > 0 for f in shuffled)
    verdict = (
        "Answers change with the chunk order: the position effect is still there, and the fix is placement and "
        "rerank, not the window."
        if changed
        else "No arm's flip rate is distinguishable from zero at this size: no evidence that order changes answers."
    )
    return tag("p", f"Flip rate (share of questions whose correctness changes with order, Wilson 95%): "
               f"{'; '.join(parts)}. {verdict}")  # fmt: skip


def _unit(model: ReportModel) -> str | None:
    """The unit the experiment resampled (effects.json's ``cluster_by``; absent before clusters: by question)."""
    record = _read(model.run.root / files.POSITION_EFFECTS) or {}
    return record.get("cluster_by")


def _effects(model: ReportModel) -> list[Markup]:
    """Paired position effects with the smallest effect the experiment could detect (position/effects.json)."""
    record = _read(model.run.root / files.POSITION_EFFECTS)
    if not record:
        return []
    out: list[Markup] = []
    if record.get("effects"):
        head = ["arm", "placement", "accuracy", "baseline", "difference [95% CI]", "McNemar p", "discordance",
                "questions", "smallest detectable effect", "gold log-likelihood, difference"]  # fmt: skip
        out += [
            tag("h3", f"Paired position effects ({fmt.resampled(record.get('cluster_by'))}, the same other chunks)"),
            table(head, _effect_rows(record), numeric=(2, 3, 4, 5, 6, 7)),
        ]
    sentence = _flip_sentence(record.get("flip_rates", []))
    if sentence is not None:
        out.append(sentence)
    arms = [[a["arm"], fmt.pct(a.get("accuracy_answerable"))
             + (f" [{fmt.pct(a['accuracy_low'])}, {fmt.pct(a['accuracy_high'])}]" if a.get("accuracy_low") is not None
                else ""),
             fmt.pct(a.get("refused_unanswerable")), fmt.pct(a.get("citations_valid")),
             f"{a.get('mean_prompt_tokens') or 0:,.0f}",
             str(a.get("n_does_not_fit")) + (f" (needs {a['tokens_needed_does_not_fit']:,} tokens)"
                                              if a.get("tokens_needed_does_not_fit") else "")]
            for a in record.get("arms", [])]  # fmt: skip
    out += [
        tag("h3", "Arms, with the closed-book control beside them (nothing subtracted)"),
        table(
            [
                "arm",
                "accuracy (answerable) [95% CI]",
                "refusals (unanswerable)",
                "citations valid",
                "prompt tokens",
                "does not fit",
            ],
            arms,
            numeric=(1, 2, 3, 4),
        ),
    ]
    return out


def _run_notes(model: ReportModel) -> list[Markup]:
    """The smoke label (what it cannot detect, the powered command) and the questions skipped as unclean."""
    out: list[Markup] = []
    status = _read(model.run.root / files.POSITION_STATUS) or {}
    if status.get("smoke"):
        out.append(tag("p", str(status["smoke"]), class_="nodata"))
    plan = _read(model.run.root / files.POSITION_DIR / "plan.json") or {}
    skipped = plan.get("skipped_unclean") or {}
    if skipped:
        parts = [f"{arm}: " + ", ".join(f"{n} {why}" for why, n in reasons.items()) for arm, reasons in skipped.items()]
        out.append(tag("p", "Questions skipped for want of a clean placement (no other chunk may hold a relevant "
                            f"span or an answer string): {'; '.join(parts)}."))  # fmt: skip
    if plan.get("sizing"):
        out.append(tag("p", str(plan["sizing"])))
    return out


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
    body[:0] = _run_notes(model)
    body.extend(_effects(model))
    if summary.controlled:
        rows = [[arm, placement, fmt.interval(ci)] for arm, placement, ci in summary.controlled]
        body.append(tag("h3", "Gold placed deliberately"))
        body.append(table(["arm", "placement", "accuracy [95% CI]"], rows, numeric=(2,)))
    note = (
        f"From {files.POSITION_SUMMARY if summary.source == 'summary' else files.POSITION_ROWS}. Accuracy: each "
        "question's share of correct answers, averaged over questions, with a 95% interval over questions (never "
        f"of width zero), {fmt.resampled(_unit(model))}; "
        "head/mid/tail is the third of the context the gold sat in. Flip rate: share of questions whose "
        "correctness changed across shuffled repeats."
    )
    return section(source.key, source.title, body, note)
