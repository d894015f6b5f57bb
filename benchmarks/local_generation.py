"""Local generation throughput by decoding threads, prompt threads and batch size, on an idle and a busy machine.

For each configuration a fresh llama.cpp server (xllamacpp, the default 0.5B
model) answers the same few RAG prompts of the demo set (a question with ~300
tokens of its source document), greedy, ``max_tokens`` 32, no prompt cache.
Per configuration it reports prompt tokens/s and generated tokens/s (llama.cpp's
own timings, summed over the prompts), and whether the answers' text equals the
reference configuration's (the default settings): at temperature 0 that tells
which settings change outputs (and so must stay in the cache key).

"Busy": one extra process spinning in a loop (started here, stopped after), so
one of the 2 cores is taken by something else, as when another job runs. The
1-minute load average is printed beside every row (other users of the machine
show there too).

    PYTHONPATH=. python benchmarks/local_generation.py --out reports/local_generation

Writes ``throughput.csv`` into ``--out`` and prints the table. Not part of CI (~5-10 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd

from evalkit.answers.generation import prompts_for
from evalkit.answers.generation.local import LlamaCppGenerator, LocalSettings, chat_payload, server_params
from evalkit.answers.generation.request import GenerationRequest, build_request
from evalkit.labels.read import load_labelset

REPO = Path(__file__).resolve().parents[1]
THREADS = ("1,1", "2,2", "1,2")
"""decoding threads,prompt-processing threads."""
BATCHES = (128, 256, 512)
"""n_ubatch = n_batch."""


def demo_requests(n: int, context_chars: int) -> list[GenerationRequest]:
    """The first ``n`` answerable English demo questions, each with the start of its source document."""
    import yaml

    cfg = yaml.safe_load((REPO / "conf" / "generator" / "local.yaml").read_text(encoding="utf-8"))
    labelset = load_labelset(REPO / "labelsets" / "demo")
    docs = {doc.doc_id: doc for doc in labelset.documents}
    out = []
    for q in labelset.questions:
        if len(out) == n:
            break
        if not q.answerable or q.lang != "en" or not q.source_passage:
            continue
        span = q.source_passage[0]
        doc = docs[span.doc_id]
        start = max(0, min(span.start, len(doc.text) - context_chars))
        context = f"[{doc.doc_id}] {doc.title}\n{doc.text[start : start + context_chars]}"
        out.append(
            build_request(q.question, context, model="qwen", max_tokens=32, question_id=q.id, **prompts_for(cfg, "en"))
        )
    return out


def run_config(settings: LocalSettings, decode: int, prompt: int, requests: list[GenerationRequest]) -> dict:
    """Load a server with these threads, answer every request, return summed timings and the texts."""
    import xllamacpp

    gen = LlamaCppGenerator(settings=settings)
    params = server_params(xllamacpp, gen.model_file(), settings)
    params.cpuparams.n_threads = decode  # the thread count llama.cpp decodes with (one token at a time)
    params.cpuparams_batch.n_threads = prompt  # the thread count for prompt batches
    server = xllamacpp.Server(params)
    server.handle_chat_completions(chat_payload(requests[0], settings) | {"max_tokens": 2})  # warm the weights
    load = os.getloadavg()[0]
    totals = {"prompt_n": 0, "prompt_ms": 0.0, "predicted_n": 0, "predicted_ms": 0.0}
    texts = []
    for request in requests:
        response = server.handle_chat_completions(chat_payload(request, settings))
        timings = response["timings"]
        for key in totals:
            totals[key] += timings[key]
        texts.append(response["choices"][0]["message"]["content"])
    del server
    gc.collect()
    return {
        "load_1min": round(load, 2),
        "prompt_tok_s": round(1000 * totals["prompt_n"] / totals["prompt_ms"], 1),
        "gen_tok_s": round(1000 * totals["predicted_n"] / totals["predicted_ms"], 1),
        "prompt_tokens": totals["prompt_n"],
        "generated_tokens": totals["predicted_n"],
        "texts": texts,
    }


def busy_loop() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2, help="demo questions (prompts) per configuration")
    parser.add_argument("--context-chars", type=int, default=1200, help="characters of source document per prompt")
    parser.add_argument("--out", type=Path, default=REPO / "reports" / "local_generation")
    parser.add_argument("--threads", nargs="+", default=list(THREADS), help="decode,prompt thread pairs")
    parser.add_argument("--batches", nargs="+", type=int, default=list(BATCHES), help="n_ubatch = n_batch values")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a kill still stops the busy loop (finally)
    requests = demo_requests(args.n, args.context_chars)
    base = LocalSettings(n_ctx=2048)
    reference = run_config(base, base.n_threads, base.n_threads_batch, requests)["texts"]  # the defaults, idle
    print(f"reference (defaults, idle): {reference}", flush=True)
    rows = []
    for pair in args.threads:
        decode, prompt = (int(n) for n in pair.split(","))
        for batch in args.batches:
            settings = dataclasses.replace(base, n_batch=batch, n_ubatch=batch)
            for busy in (False, True):  # back to back, so both see the same background load
                spinner = busy_loop() if busy else None
                try:
                    result = run_config(settings, decode, prompt, requests)
                finally:
                    if spinner is not None:
                        spinner.kill()
                        spinner.wait()
                texts = result.pop("texts")
                row = {"machine": "busy" if busy else "idle", "decode_threads": decode, "prompt_threads": prompt}
                row |= {"n_ubatch=n_batch": batch, **result, "same_text_as_default": texts == reference}
                row["texts_differing"] = sum(a != b for a, b in zip(texts, reference, strict=True))
                rows.append(row)
                print(" ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    table = pd.DataFrame(rows)
    table.to_csv(args.out / "throughput.csv", index=False)
    print(table.to_string(index=False))
    keys = ["decode_threads", "prompt_threads", "n_ubatch=n_batch"]
    paired = table.pivot_table(index=keys, columns="machine", values=["prompt_tok_s", "gen_tok_s"])
    for what in ("prompt_tok_s", "gen_tok_s"):
        paired[(what, "idle/busy")] = (paired[(what, "idle")] / paired[(what, "busy")]).round(2)
    print(paired.to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
