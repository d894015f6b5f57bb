"""How a sweep scales: local vs Ray, a corpus grown 1x..8x, exact vs hnsw vs LanceDB dense search.

    PYTHONPATH=. python benchmarks/scale.py all --out reports/scale   # or: ray | grow | ann

(a) ``ray``: the hybrid e5 default grid on squad2-en with ``executor=local`` and with
    ``executor=ray`` (a local Ray instance of two worker CPUs), each with a cold cache of its own:
    wall time, peak RSS of the driver and of the largest Ray worker, and whether per-question
    results are identical.
(b) ``grow``: squad2-en with every document repeated k times under new ids and every question
    repeated with its gold moved to the copy (k = 1, 2, 4, 8), BM25 default grid: wall time,
    seconds per million (question x chunk) pairs and peak RSS per size.
(c) ``ann``: exact against hnsw dense search (e5 vectors of squad2-en at 512/64, pool 50): search
    time and recall@10 / recall@50 of hnsw against exact; and through a LanceDB table (flat: checked equal to
    exact; IVF indexes: recall), each time with the table's build.

Every sweep runs as its own process (``python -m evalkit.sweep``); peak RSS is the kernel's
high-water mark (``VmHWM``) of each process, sampled every 0.2 s. Not part of CI: it takes minutes.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
SQUAD = REPO.parent / "shared" / "labelsets" / "squad2-en"
QUIET = ["progress=false", "report=false", "position=off", "run_id=r"]


def _hwm_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _ray_pids() -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                title = (entry / "cmdline").read_bytes().split(b"\0")[0]
            except OSError:
                continue
            if title.startswith(b"ray::"):
                pids.append(int(entry.name))
    return pids


class PeakRss(threading.Thread):
    """Peak RSS (MB) of one process and of the largest Ray worker seen while it runs."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.driver_kb, self.worker_kb, self.done = pid, 0, 0, threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.driver_kb = max(self.driver_kb, _hwm_kb(self.pid))
            for pid in _ray_pids():
                self.worker_kb = max(self.worker_kb, _hwm_kb(pid))
            time.sleep(0.2)


def sweep(overrides: list[str]) -> dict[str, float]:
    """One sweep in its own process: wall seconds, peak RSS of the driver and the largest Ray worker (MB)."""
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "evalkit.sweep", *QUIET, *overrides], cwd=REPO)
    sampler = PeakRss(process.pid)
    sampler.start()
    code = process.wait()
    sampler.done.set()
    sampler.join()
    if code != 0:
        raise SystemExit(f"sweep failed ({code}): {' '.join(overrides)}")
    return {
        "wall_s": round(time.perf_counter() - started, 1),
        "driver_rss_mb": round(sampler.driver_kb / 1024),
        "worker_rss_mb": round(sampler.worker_kb / 1024),
    }


def same_results(a: Path, b: Path) -> bool:
    return all(pd.read_parquet(a / n).equals(pd.read_parquet(b / n)) for n in ("results.parquet", "summary.parquet"))


def bench_ray(out: Path) -> pd.DataFrame:
    rows = []
    grid = [f"labelset.path={SQUAD}", "retriever=hybrid", "embedder=e5"]
    for name, extra in [("local", []), ("ray (2 workers)", ["executor=ray", "executor.num_cpus=2"])]:
        folder = out / "ray" / name.split()[0]
        measured = sweep([*grid, *extra, f"reports_dir={folder}", f"cache_path={folder}/cache.sqlite"])
        rows.append({"executor": name, **measured})
    table = pd.DataFrame(rows)
    table["identical"] = same_results(out / "ray" / "local" / "r", out / "ray" / "ray" / "r")
    return table


def grown_set(source: Path, copies: int, out: Path) -> Path:
    """``source`` with every document repeated ``copies`` times (new ids) and every question with it."""
    from evalkit.labels.read import load_labelset
    from evalkit.labels.write import write_labelset

    labelset = load_labelset(source)

    def moved(spans: tuple, copy: int) -> tuple:  # type: ignore[type-arg]
        return tuple(replace(s, doc_id=f"{s.doc_id}--r{copy}") for s in spans)

    documents, questions = [], []
    for copy in range(copies):
        documents += [replace(d, doc_id=f"{d.doc_id}--r{copy}", path="") for d in labelset.documents]
        questions += [
            replace(
                q,
                id=f"{q.id}--r{copy}",
                evidence=moved(q.evidence, copy),
                source_passage=moved(q.source_passage, copy),
            )
            for q in labelset.questions
        ]
    return write_labelset(out, documents, questions, overwrite=True)


def bench_grow(out: Path, sizes: tuple[int, ...] = (1, 2, 4, 8)) -> pd.DataFrame:
    rows = []
    for copies in sizes:
        labelset = grown_set(SQUAD, copies, out / "grow" / f"x{copies}" / "set")
        folder = out / "grow" / f"x{copies}"
        measured = sweep([f"labelset.path={labelset}", f"reports_dir={folder}", f"cache_path={folder}/cache.sqlite"])
        summary = pd.read_parquet(folder / "r" / "summary.parquet")
        chunks = summary[["chunking", "n_chunks"]].drop_duplicates()
        n_questions = int(summary["n_questions"].iloc[0])
        pairs = n_questions * int(chunks["n_chunks"].sum())
        rows.append(
            {
                "corpus": f"{copies}x",
                "questions": n_questions,
                "chunks (all chunkings)": int(chunks["n_chunks"].sum()),
                **measured,
                "s per 1M (question x chunk)": round(measured["wall_s"] / (pairs / 1e6), 3) if pairs else None,
            }
        )
    return pd.DataFrame(rows)


def bench_ann(out: Path) -> pd.DataFrame:
    """Exact vs hnsw on the e5 vectors of squad2-en's 512/64 chunks (from the ray bench's cache if there)."""
    from evalkit.cache import Cache
    from evalkit.chunking.chunkers import chunk_corpus
    from evalkit.labels.read import load_labelset
    from evalkit.records import ChunkingSpec
    from evalkit.retrieval.ann import hnsw_pool, recall_against_exact
    from evalkit.retrieval.embedding.base import embed_texts
    from evalkit.retrieval.embedding.registry import make_embedder
    from evalkit.retrieval.embedding.settings import EmbedderSettings
    from evalkit.retrieval.pools import DenseIndex, QueryVectors, dense_pool
    from evalkit.retrieval.vectorstore import StoreSettings, StoreTable, store_pool

    labelset = load_labelset(SQUAD)
    chunks = list(chunk_corpus(labelset.documents, ChunkingSpec("recursive", 512, 64)))
    embedder = make_embedder(EmbedderSettings(name="e5"))
    cache_path = out / "ray" / "local" / "cache.sqlite"
    cache_path.parent.mkdir(parents=True, exist_ok=True)
    with Cache(cache_path) as cache:
        units = embed_texts(embedder, [c.embed_text for c in chunks], "passage", cache)
        queries = embed_texts(embedder, [q.question for q in labelset.questions], "query", cache)
    index, asked = DenseIndex(embedder.identity, embedder.dim, units), QueryVectors(embedder.identity, queries)
    started = time.perf_counter()
    exact = dense_pool(index, asked, 50)
    exact_s = time.perf_counter() - started
    started = time.perf_counter()
    approximate = hnsw_pool(index, asked, 50)
    hnsw_s = time.perf_counter() - started
    recall = recall_against_exact(index, asked, approximate)
    store_rows = []
    for settings in (StoreSettings("flat"), StoreSettings("ivf_flat"), StoreSettings("ivf_hnsw_sq")):
        table = StoreTable(Path(tempfile.mkdtemp(prefix="evalkit-ann-")), "t")  # a fresh table: its build is timed
        started = time.perf_counter()
        pool = store_pool(index, asked, 50, table, settings=settings)
        seconds = time.perf_counter() - started
        found = recall_against_exact(index, asked, pool)
        if settings.exact:  # the store's exact mode is exact search, pool for pool
            assert np.array_equal(pool.indices, exact.indices) and np.array_equal(pool.scores, exact.scores, True)
        store_rows.append(
            {
                "index": f"lancedb {settings.index}" + ("" if settings.exact else f" (nprobes={settings.nprobes})"),
                "units": len(chunks),
                "questions": len(queries),
                "seconds (build + search)": round(seconds, 2),
                "recall@10 vs exact": round(found["recall_at_10"], 4),
                "recall@50 vs exact": round(found["recall_at_pool"], 4),
            }
        )
    return pd.DataFrame(
        [
            {"index": "exact", "units": len(chunks), "questions": len(queries), "seconds": round(exact_s, 2)},
            {
                "index": "hnsw (M=16, ef=64)",
                "units": len(chunks),
                "questions": len(queries),
                "seconds (build + search)": round(hnsw_s, 2),
                "recall@10 vs exact": round(recall["recall_at_10"], 4),
                "recall@50 vs exact": round(recall["recall_at_pool"], 4),
            },
            *store_rows,
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["all", "ray", "grow", "ann"])
    parser.add_argument("--out", type=Path, default=REPO / "reports" / "scale")
    parser.add_argument("--copies", type=int, nargs="+", default=[1, 2, 4, 8], help="grow: sizes (default 1 2 4 8)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"machine: {os.cpu_count()} CPUs, {os.uname().sysname} {os.uname().release}")
    benches = {"ray": bench_ray, "grow": lambda out: bench_grow(out, tuple(args.copies)), "ann": bench_ann}
    for name, bench in benches.items():
        if args.what in ("all", name):
            table = bench(args.out)
            table.to_csv(args.out / f"{name}.csv", index=False)
            print(f"\n## {name}\n{table.to_string(index=False)}", flush=True)


if __name__ == "__main__":
    main()
