"""Does reranking a BM25 pool help, and which local reranker? hit@5 / context precision@5 and speed.

For each labelled set: fixed 512-character chunks (no overlap), a BM25 top-50
pool per question, then the pool reranked by each local reranker. A chunk is
relevant when it wholly contains an evidence span. Also prints each
reranker's score distribution (best score per answerable vs unanswerable
question, relevant vs irrelevant chunks), which is what a threshold grid in
``conf/reranker/*.yaml`` is picked from.

    PYTHONPATH=. python benchmarks/rerank_quality.py --sets squad2-en cmrc2018-zh --questions 300

Reads ``../shared/labelsets``; writes nothing unless ``--json PATH``.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evalkit.cache import Cache
from evalkit.chunking.relevance import is_relevant
from evalkit.labels.read import LabelSet, load_labelset
from evalkit.records import Question, Span
from evalkit.retrieval.bm25 import BM25Index
from evalkit.retrieval.rerank.base import RerankCounter, Reranker, rerank_scores
from evalkit.retrieval.rerank.local import E5Reranker, NanoReranker
from evalkit.scoring.ir.context_precision import context_precision_at_k
from evalkit.scoring.ir.hit import hit_at_k

SHARED = Path(__file__).resolve().parents[2] / "shared" / "labelsets"
RERANKERS: dict[str, Callable[[], Reranker]] = {"nano": NanoReranker, "e5": E5Reranker}
PERCENTILES = (10, 25, 50, 75, 90)


@dataclass(frozen=True)
class Unit:
    """One fixed-size chunk: its span and text."""

    span: Span
    text: str


def fixed_chunks(labelset: LabelSet, size: int) -> list[Unit]:
    return [
        Unit(Span(doc.doc_id, start, min(start + size, len(doc.text))), doc.text[start : start + size])
        for doc in labelset.documents
        for start in range(0, len(doc.text), size)
    ]


def sample(questions: Sequence[Question], answerable: bool, n: int, seed: int) -> list[Question]:
    pool = [q for q in questions if q.answerable == answerable and (not answerable or q.evidence_mode == "any")]
    return sorted(random.Random(seed).sample(pool, min(n, len(pool))), key=lambda q: q.id)


def bm25_pools(units: Sequence[Unit], questions: Sequence[Question], pool_size: int) -> list[np.ndarray]:
    """Unit indices of each question's BM25 top ``pool_size``, best first (ties by unit order)."""
    index = BM25Index([unit.text for unit in units])
    index.set_queries([q.question for q in questions])
    scores = index.score_rows(slice(0, len(questions)))
    return [np.argsort(-row, kind="stable")[:pool_size] for row in scores]


def metrics(rel: Sequence[bool], k: int) -> tuple[float, float]:
    return hit_at_k(rel, k), context_precision_at_k(rel, k)


def describe(values: Sequence[float]) -> str:
    if not values:
        return "-"
    return " ".join(f"{v:.4f}" for v in np.percentile(np.asarray(values), PERCENTILES))


def evaluate_set(name: str, args: argparse.Namespace) -> dict:
    labelset = load_labelset(SHARED / name)
    units = fixed_chunks(labelset, args.chunk_size)
    answerable = sample(labelset.questions, True, args.questions, args.seed)
    unanswerable = sample(labelset.questions, False, args.unanswerable, args.seed)
    questions = answerable + unanswerable
    started = time.perf_counter()
    pools = bm25_pools(units, questions, args.pool)
    print(
        f"\n## {name}: {len(units)} chunks of {args.chunk_size}, {len(answerable)} answerable + "
        f"{len(unanswerable)} unanswerable questions, BM25 pool {args.pool} ({time.perf_counter() - started:.1f} s)"
    )
    relevance = [[is_relevant(units[i].span, q) for i in pool] for q, pool in zip(questions, pools)]
    in_pool = np.mean([any(rel) for rel in relevance[: len(answerable)]])
    print(f"answer chunk in pool: {in_pool:.3f}")

    report: dict = {"set": name, "chunks": len(units), "answerable": len(answerable), "in_pool": in_pool, "arms": {}}
    arms: dict[str, list[list[bool]]] = {"bm25": relevance[: len(answerable)]}
    for arm in args.rerankers:
        reranker = RERANKERS[arm]()
        counter = RerankCounter()
        reranked: list[list[bool]] = []
        best_answerable: list[float] = []
        best_unanswerable: list[float] = []
        relevant_scores: list[float] = []
        irrelevant_scores: list[float] = []
        with Cache(":memory:") as cache:
            started = time.perf_counter()
            for number, (question, pool, rel) in enumerate(zip(questions, pools, relevance)):
                scores = rerank_scores(reranker, question.question, [units[i].text for i in pool], cache, counter)
                order = np.argsort(-scores, kind="stable")  # ties keep BM25 order
                if number < len(answerable):
                    reranked.append([rel[i] for i in order])
                    best_answerable.append(float(scores.max()))
                    relevant_scores += [float(s) for s, r in zip(scores, rel) if r]
                    irrelevant_scores += [float(s) for s, r in zip(scores, rel) if not r]
                else:
                    best_unanswerable.append(float(scores.max()))
            elapsed = time.perf_counter() - started
        pairs = sum(counter.pairs_scored.values())
        arms[arm] = reranked
        report["arms"][arm] = {
            "pairs": pairs,
            "seconds": elapsed,
            "pairs_per_second": pairs / elapsed,
            "best_answerable": list(np.percentile(best_answerable, PERCENTILES)),
            "best_unanswerable": list(np.percentile(best_unanswerable, PERCENTILES)) if best_unanswerable else None,
            "relevant": list(np.percentile(relevant_scores, PERCENTILES)) if relevant_scores else None,
            "irrelevant": list(np.percentile(irrelevant_scores, PERCENTILES)),
            "min": min(irrelevant_scores + relevant_scores),
            "max": max(irrelevant_scores + relevant_scores),
        }
        print(
            f"{arm}: {pairs} pairs in {elapsed:.1f} s = {pairs / elapsed:.0f} pairs/s; "
            f"scores in [{report['arms'][arm]['min']:.4f}, {report['arms'][arm]['max']:.4f}]"
        )
        print(f"  percentiles {PERCENTILES}")
        print(f"  best, answerable:   {describe(best_answerable)}")
        print(f"  best, unanswerable: {describe(best_unanswerable)}")
        print(f"  relevant chunks:    {describe(relevant_scores)}")
        print(f"  irrelevant chunks:  {describe(irrelevant_scores)}")

    print(f"\n| {name} | hit@1 | hit@5 | context precision@5 |\n|---|---|---|---|")
    for arm, rels in arms.items():
        hit1 = np.mean([hit_at_k(rel, 1) for rel in rels])
        hit5, cp5 = (float(np.mean(values)) for values in zip(*(metrics(rel, 5) for rel in rels)))
        report.setdefault("quality", {})[arm] = {"hit@1": hit1, "hit@5": hit5, "context_precision@5": cp5}
        print(f"| {arm} | {hit1:.3f} | {hit5:.3f} | {cp5:.3f} |")
    return report


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", nargs="+", default=["squad2-en", "cmrc2018-zh"])
    parser.add_argument("--questions", type=int, default=300, help="answerable questions sampled per set")
    parser.add_argument("--unanswerable", type=int, default=100, help="unanswerable questions (score ranges only)")
    parser.add_argument("--pool", type=int, default=50)
    parser.add_argument("--chunk-size", type=int, default=512)
    parser.add_argument("--rerankers", nargs="+", default=list(RERANKERS), choices=list(RERANKERS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    args = parser.parse_args(argv)
    reports = [evaluate_set(name, args) for name in args.sets]
    if args.json is not None:
        args.json.write_text(json.dumps(reports, indent=2, default=float), encoding="utf-8")


if __name__ == "__main__":
    main()
