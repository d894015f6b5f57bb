"""Item analysis on planted wrong gold in a real set: precision and recall per kind, and the second signal.

A copy of a shared labelled set (squad2-en by default) gets wrong gold planted in three kinds, ``--per-kind``
questions each (answerable, one evidence span, chosen at random with ``--seed``):

- ``other_document``: the gold moved to text of the same length at a random place of another document;
- ``same_document``: moved to text of the same length in the same document, at least 800 characters from the
  paragraph the question was written against;
- ``near_miss``: moved to another question's answer in the same paragraph (a plausible wrong answer a few
  sentences away).

The planted questions' answers become the planted text (a wrong label is wrong in both). A BM25 sweep of 48
configs (chunk_size 128/256/512/1024 x top_k 1/3/5 x bm25's four thresholds) runs over the copy; review.json's
item analysis is read back. Printed: what item analysis flags (recall per kind, precision), what its second
signal says of each flag (gold elsewhere vs hard question: precision of each verdict, recall per kind of "gold
elsewhere"), and the unplanted flags with their question and gold, to read by hand.

    PYTHONPATH=. python benchmarks/item_kinds.py                  # squad2-en, 10 per kind, seed 7
    PYTHONPATH=. python benchmarks/item_kinds.py --set cmrc2018-zh --per-kind 8
    PYTHONPATH=. python benchmarks/item_kinds.py --keep reports/item-kinds   # keep the run; again: recompute its review only

Reads ``../shared/labelsets`` (never writes there: the set is copied to a temporary folder).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "labelsets"
REPO = Path(__file__).resolve().parents[1]
KINDS = ("other_document", "same_document", "near_miss")
FAR = 800
"""A same-document plant starts at least this many characters from the question's paragraph."""
GRID = [
    "chunk_size=[128,256,512,1024]",
    "chunk_overlap=[0]",
    "top_k=[1,3,5]",
    "retriever=bm25",
    "baseline.chunk_overlap=0",
    "progress=false",
    "report=false",
    "answer_check=off",
    "position=off",
]
ELSEWHERE = ("wrong_span", "wrong_document")


def _span(doc_id: str, text: str, start: int, end: int) -> dict[str, object]:
    return {"doc_id": doc_id, "start": start, "end": end, "text": text[start:end]}


def plant(root: Path, per_kind: int, seed: int) -> dict[str, str]:
    """Plant wrong gold in the set at ``root`` (rewrites its questions.jsonl); returns planted id -> kind."""
    index = [json.loads(line) for line in (root / "docs.jsonl").read_text(encoding="utf-8").splitlines()]
    docs = {d["doc_id"]: (root / d["path"]).read_text(encoding="utf-8") for d in index}
    questions = [json.loads(line) for line in (root / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    rng = random.Random(seed)
    answerable = [
        q for q in questions if q["answerable"] and q["evidence"] and len({e["doc_id"] for e in q["evidence"]}) == 1
    ]
    rng.shuffle(answerable)
    by_passage: dict[tuple[str, int, int], list[dict]] = {}
    for q in answerable:
        for p in q.get("source_passage", [])[:1]:
            by_passage.setdefault((p["doc_id"], p["start"], p["end"]), []).append(q)
    planted: dict[str, str] = {}
    used: set[str] = set()

    def passage(q: dict) -> tuple[int, int]:
        p = (q.get("source_passage") or [q["evidence"][0]])[0]
        return p["start"], p["end"]

    def other_document(q: dict) -> dict[str, object] | None:
        doc_id = rng.choice(sorted(d for d in docs if d != q["evidence"][0]["doc_id"]))
        length = q["evidence"][0]["end"] - q["evidence"][0]["start"]
        start = rng.randrange(0, max(len(docs[doc_id]) - length, 1))
        return _span(doc_id, docs[doc_id], start, start + length)

    def same_document(q: dict) -> dict[str, object] | None:
        doc_id, length = q["evidence"][0]["doc_id"], q["evidence"][0]["end"] - q["evidence"][0]["start"]
        a, b = passage(q)
        starts = [s for s in range(0, len(docs[doc_id]) - length) if s + length <= a - FAR or s >= b + FAR]
        if not starts:
            return None
        start = rng.choice(starts)
        return _span(doc_id, docs[doc_id], start, start + length)

    def near_miss(q: dict) -> dict[str, object] | None:
        p = q.get("source_passage", [])[:1]
        if not p:
            return None
        gold = {(e["start"], e["end"]) for e in q["evidence"]}
        answers = {a.strip().lower() for a in q["answers"]}
        for other in by_passage.get((p[0]["doc_id"], p[0]["start"], p[0]["end"]), []):
            span = other["evidence"][0]
            if other["id"] == q["id"] or span["text"].strip().lower() in answers:
                continue
            if all(span["end"] <= s or span["start"] >= e for s, e in gold):
                return _span(span["doc_id"], docs[span["doc_id"]], span["start"], span["end"])
        return None

    makers = {"other_document": other_document, "same_document": same_document, "near_miss": near_miss}
    for kind in ("near_miss", "same_document", "other_document"):  # the scarcest first
        for q in answerable:
            if sum(1 for k in planted.values() if k == kind) == per_kind:
                break
            if q["id"] in used:
                continue
            span = makers[kind](q)
            if span is None:
                continue
            used.add(q["id"])
            planted[q["id"]] = kind
            q["evidence"], q["evidence_mode"] = [span], "any"
            q["answer"], q["answers"] = span["text"], [span["text"]]
            q.pop("source_passage", None)  # the passage the old gold came from says nothing of the new one
    (root / "questions.jsonl").write_text(
        "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in questions), encoding="utf-8"
    )
    return planted


def score(suspect: list[dict], planted: dict[str, str]) -> dict[str, object]:
    """Precision and recall per kind of item analysis's flags and of its second signal's "gold elsewhere"."""
    flagged = {s["question_id"]: s for s in suspect}
    elsewhere = {q for q, s in flagged.items() if s.get("doubt") in ELSEWHERE}
    hard = {q for q, s in flagged.items() if s.get("doubt") == "hard"}
    out: dict[str, object] = {
        "planted": len(planted),
        "flagged": len(flagged),
        "flag_precision": len(flagged.keys() & planted.keys()) / max(len(flagged), 1),
        "flag_recall": len(flagged.keys() & planted.keys()) / max(len(planted), 1),
        "elsewhere": len(elsewhere),
        "elsewhere_precision": len(elsewhere & planted.keys()) / max(len(elsewhere), 1),
        "elsewhere_recall": len(elsewhere & planted.keys()) / max(len(planted), 1),
        "hard": len(hard),
        "hard_unplanted": len(hard - planted.keys()),
    }
    for kind in KINDS:
        ids = {q for q, k in planted.items() if k == kind}
        out[f"{kind}_flagged"] = f"{len(ids & flagged.keys())}/{len(ids)}"
        out[f"{kind}_elsewhere"] = f"{len(ids & elsewhere)}/{len(ids)}"
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", default="squad2-en")
    parser.add_argument("--per-kind", type=int, default=10)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temporary one)")
    args = parser.parse_args(argv)
    from hydra import compose, initialize_config_dir

    from evalkit.sweep import sweep

    work = args.keep or Path(tempfile.mkdtemp(prefix="item-kinds-"))
    labelset = work / "set"
    began = time.perf_counter()
    done = sorted(p.parent for p in (work / "reports").glob("*/review.json")) if args.keep else []
    if done:  # a kept run: its review computed again with the code as it is now, nothing swept
        from evalkit.review.build import write_review

        run_dir, planted = done[-1], json.loads((work / "planted.json").read_text(encoding="utf-8"))
        write_review(run_dir, labelset=labelset)
    else:
        shutil.copytree(SHARED / args.set, labelset, ignore=shutil.ignore_patterns(".history"))
        planted = plant(labelset, args.per_kind, args.seed)
        (work / "planted.json").write_text(json.dumps(planted, indent=1), encoding="utf-8")
        overrides = [*GRID, f"labelset.path={labelset}", f"reports_dir={work / 'reports'}"]
        with initialize_config_dir(version_base="1.3", config_dir=str(REPO / "conf")):
            run_dir = sweep(compose(config_name="config", overrides=overrides))
    seconds = time.perf_counter() - began
    review = json.loads((run_dir / "review.json").read_text(encoding="utf-8"))
    items = review["items"]
    figures = score(items["suspect"], planted)
    print(
        f"{args.set}: {figures['planted']} planted ({args.per_kind} per kind, seed {args.seed}), "
        f"{items['n_questions']} questions x {items['n_configs']} configs on {items['measure']}, {seconds:.0f} s"
    )
    print(json.dumps(figures, indent=1))
    questions = {
        q["id"]: q for q in map(json.loads, (labelset / "questions.jsonl").read_text(encoding="utf-8").splitlines())
    }
    for s in items["suspect"]:
        q = questions[s["question_id"]]
        mark = planted.get(s["question_id"], "unplanted")
        gold = q["evidence"][0]["text"][:60] if q["evidence"] else ""
        print(
            f"  {mark:15} {s['doubt'] or '-':15} gold {s['gold_overlap']:.2f} elsewhere {s['elsewhere_overlap']:.2f} "
            f"retrieved={s['gold_doc_retrieved']}  {q['question'][:70]!r} gold {gold!r}"
        )
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
