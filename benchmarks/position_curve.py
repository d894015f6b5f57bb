"""The "lost in the middle" curve: accuracy by the gold passage's position among k distractors.

For N answerable questions of a shared set (SQuAD 2.0 English by default) the
gold passage (the question's ``source_passage``) is placed among k distractor
passages at every position 0..k. Distractors are the corpus's other
paragraphs ranked by BM25 against the question, so they look relevant; a
paragraph holding any gold answer string is never a distractor. The
distractors keep their BM25 order around the gold one, so the only thing that
changes between the k + 1 prompts of a question is where the gold sits.
Answers come from the local generator (``conf/generator/local.yaml``, the
0.5B model by default) through evalkit's response cache, are scored as the
sweep scores them, and the curve is accuracy by position with a Wilson 95%
interval per position (N answers each), plus seconds per call, and the paired first-vs-middle and
last-vs-middle comparisons per k with the sweep's statistics (``paired.csv``: exact McNemar, Newcombe
interval, discordance, exact MDE or "not detectable at this size").

    PYTHONPATH=. python benchmarks/position_curve.py --n 2 --ks 9 19 --out reports/position_curve

Writes ``curve.csv`` (k, position, n, accuracy, low, high), ``curve.png`` and
``calls.csv`` (one row per call, with its seconds) into ``--out``; prints the
table. Not part of CI: at ~100 prompt tokens/s a k = 19 prompt takes ~30 s.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from evalkit.answers.blocks import ContextItem, render_context
from evalkit.answers.generation import make_generator, prompts_for
from evalkit.answers.generation.batches import generate_many
from evalkit.answers.generation.request import build_request
from evalkit.answers.generation.tally import GenerationCounter
from evalkit.cache import Cache
from evalkit.labels.read import LabelSet, load_labelset
from evalkit.records import Question
from evalkit.retrieval.bm25 import BM25Index
from evalkit.scoring.answers import DEFAULT_REFUSALS, score_answer
from evalkit.scoring.stats import mcnemar_exact_p, paired_binary_mde, paired_difference_ci, wilson_ci

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "labelsets"


def paragraphs(labelset: LabelSet) -> list[ContextItem]:
    """Every paragraph of every document (blank-line separated), as a context item."""
    out = []
    for doc in labelset.documents:
        start = 0
        for part in doc.text.split("\n\n"):
            end = start + len(part)
            if part.strip():
                out.append(ContextItem(f"{doc.doc_id}@{start}", doc.doc_id, start, end, part, 0.0, False, doc.title))
            start = end + 2
    return out


def gold_item(question: Question, labelset: LabelSet) -> ContextItem:
    span = question.source_passage[0] if question.source_passage else question.evidence[0]
    doc = labelset.document(span.doc_id)
    text = doc.text[span.start : span.end]
    return ContextItem(f"{doc.doc_id}@{span.start}", doc.doc_id, span.start, span.end, text, 1.0, True, doc.title)


def distractors(
    question: Question, gold: ContextItem, units: list[ContextItem], scores: np.ndarray, k: int
) -> list[ContextItem]:
    """The k best BM25 paragraphs that neither overlap the gold passage nor contain a gold answer."""
    answers = [a.lower() for a in question.answers if a.strip()]
    picked: list[ContextItem] = []
    for index in np.argsort(-scores, kind="stable"):
        unit = units[int(index)]
        overlaps = unit.doc_id == gold.doc_id and unit.start < gold.end and gold.start < unit.end
        if overlaps or any(a in unit.text.lower() for a in answers):
            continue
        picked.append(unit)
        if len(picked) == k:
            break
    return picked


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default="squad2-en")
    parser.add_argument("--n", type=int, default=2, help="answerable questions")
    parser.add_argument("--ks", type=int, nargs="+", default=[9, 19], help="distractors per prompt")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--generator", default="local", help="conf/generator/<name>.yaml")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--out", type=Path, default=REPO / "reports" / "position_curve")
    parser.add_argument("--cache", type=Path, default=REPO / "reports" / ".cache" / "evalkit.sqlite")
    args = parser.parse_args(argv)

    labelset = load_labelset(SHARED / args.set)
    cfg = yaml.safe_load((REPO / "conf" / "generator" / f"{args.generator}.yaml").read_text(encoding="utf-8"))
    cfg["max_tokens"] = args.max_tokens
    generator = make_generator(cfg)
    answerable = [q for q in labelset.questions if q.answerable and (q.source_passage or q.evidence)]
    questions = random.Random(args.seed).sample(answerable, args.n)
    units = paragraphs(labelset)
    index = BM25Index([u.text for u in units])
    index.set_queries([q.question for q in questions])
    scores = index.score_rows(slice(0, len(questions)))
    documents = {d.doc_id: d.text for d in labelset.documents}
    refusals = (*[str(r) for r in cfg.get("refusal", {}).values()], *DEFAULT_REFUSALS)
    args.out.mkdir(parents=True, exist_ok=True)
    calls = []
    with Cache(args.cache) as cache:
        counter = GenerationCounter()
        for k in args.ks:
            for qi, question in enumerate(questions):
                gold = gold_item(question, labelset)
                others = distractors(question, gold, units, scores[qi], k)
                prompts = prompts_for(cfg, question.lang)
                for position in range(k + 1):
                    items = [*others[:position], gold, *others[position:]]
                    request = build_request(
                        question.question,
                        render_context(items),
                        model=generator.model or cfg["model"],
                        system=prompts["system"],
                        max_tokens=args.max_tokens,
                        context_template=prompts["context_template"],
                        question_template=prompts["question_template"],
                        question_id=question.id,
                    )
                    started = time.perf_counter()
                    (answer,) = generate_many(generator, [request], cache, counter)
                    seconds = time.perf_counter() - started
                    provided = {i.doc_id for i in items}
                    score = score_answer(question, answer.text, refusals, provided, documents)
                    calls.append(
                        {
                            "k": k, "question_id": question.id, "position": position, "correct": score.correct,
                            "refused": score.refused, "cached": answer.cached, "seconds": round(seconds, 2),
                            "input_tokens": answer.usage.input_tokens, "output_tokens": answer.usage.output_tokens,
                            "answer": answer.text,
                        }
                    )  # fmt: skip
                    print(f"k={k} q{qi} pos={position}: {score.correct} {seconds:.1f}s", file=sys.stderr, flush=True)
    frame = pd.DataFrame(calls)
    frame.to_csv(args.out / "calls.csv", index=False)
    curve = curve_table(frame)
    curve.to_csv(args.out / "curve.csv", index=False)
    paired = paired_table(frame)
    paired.to_csv(args.out / "paired.csv", index=False)
    print(paired.to_string(index=False))
    plot(curve, args.out / "curve.png", args.n)
    fresh = frame[~frame["cached"]]
    print(curve.to_string(index=False))
    if len(fresh):
        by_k = fresh.groupby("k")["seconds"].mean().round(1).to_dict()
        print(f"seconds per uncached call by k: {by_k}; N = {args.n} questions")


def curve_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Accuracy by (k, position) with a Wilson 95% interval over the N answers at that position."""
    rows = []
    for (k, position), group in frame.groupby(["k", "position"], sort=True):
        values = group["correct"].astype(float).to_numpy()
        interval = wilson_ci(values)
        rows.append(
            {"k": k, "position": position, "n": len(values), "accuracy": interval.mean,
             "low": interval.low, "high": interval.high, "mean_seconds": group["seconds"].mean()}
        )  # fmt: skip
    return pd.DataFrame(rows)


def paired_table(frame: pd.DataFrame) -> pd.DataFrame:
    """First vs middle and last vs middle per k, the question as the unit (one answer per question and position):
    exact McNemar p, Newcombe 95% interval of the difference, discordance psi, and the exact McNemar MDE at 80%
    power (None: not detectable at this size, exact power at delta = psi below 0.8), as the sweep reports them."""
    rows = []
    for k, group in frame.groupby("k", sort=True):
        wide = group.pivot_table(index="question_id", columns="position", values="correct", aggfunc="mean")
        middle = k // 2
        for name, position in (("first", 0), ("last", k)):
            pairs = wide[[middle, position]].dropna()
            if pairs.empty:
                continue
            base, cand = pairs[middle].to_numpy(float), pairs[position].to_numpy(float)
            wins, losses = int((cand > base).sum()), int((cand < base).sum())
            psi = (wins + losses) / len(pairs)
            interval = paired_difference_ci(base, cand)
            mde = paired_binary_mde(len(pairs), psi)
            rows.append(
                {"k": k, "comparison": f"{name} vs middle", "n": len(pairs), "delta": float(cand.mean() - base.mean()),
                 "low": interval.low, "high": interval.high, "mcnemar_p": mcnemar_exact_p(wins, losses),
                 "discordance": psi, "mde": "not detectable at this size" if mde is None else round(mde, 3)}
            )  # fmt: skip
    return pd.DataFrame(rows)


def plot(curve: pd.DataFrame, path: Path, n: int) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 4))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    for k, group in curve.groupby("k"):
        x = group["position"] / k  # 0 = first, 1 = last, so both k share one axis
        axes.plot(x, group["accuracy"], marker="o", label=f"k = {k} distractors")
        axes.fill_between(x, group["low"], group["high"], alpha=0.15)
    axes.set_xlabel("gold passage position (0 = first, 1 = last)")
    axes.set_ylabel("accuracy")
    axes.set_ylim(-0.02, 1.02)
    axes.set_title(f"Accuracy by gold position, N = {n} questions (Wilson 95%)")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
