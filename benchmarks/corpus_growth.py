"""A corpus grown x1 / x20 / x200 with the same questions: wall time, peak memory and seconds per stage.

    PYTHONPATH=. python benchmarks/corpus_growth.py --sizes 1 20 200 --out reports/growth
    PYTHONPATH=. python benchmarks/corpus_growth.py --sizes 1 20 --source ../old-checkout --out reports/before
    PYTHONPATH=. python benchmarks/corpus_growth.py --sizes 1 --ray --out reports/growth-ray
    PYTHONPATH=. python benchmarks/corpus_growth.py --sizes 20 --again --out reports/growth-again

Corpus xN: squad2-en's documents plus N-1 paragraph-reversed copies of each (new ids) as distractors; the
questions and their gold spans are squad2-en's own (the copies hold the same words in another order, so they
compete for every question but are never gold). BM25, the default grid, answers and position off.

Every sweep runs as its own process (``python -m evalkit.sweep``) with the code of ``--source`` (default:
this checkout) and a cold cache and unit store of its own. Peak memory is the largest sum of the resident
set sizes of the sweep and every process below it (worker processes included), sampled every 0.2 s, and
the driver's own high-water mark (``VmHWM``). Stage seconds are the run's ``run_stats.json``; "outside"
is the wall time no stage accounts for (start-up, reading the set, writing results, the latency pass when
the run does not time it separately). The load average is printed beside each run: the machine is shared,
so a wall time means little without it; ``cpu_s`` (user + system seconds of the sweep and the processes it
waited for, Ray's nodes not included) moves much less with the load. Not part of CI: x200 takes many minutes.

``--again``: each size is swept a second time in the same folder (a new run id): every unit comes from the
unit store, so the row is what a re-run costs (the latency pass, the decision, reading and writing).

``--ray``: the sweeps run with ``executor=ray`` on a real two-node Ray cluster started on 127.0.0.1 (one CPU
per node, token-authenticated, as ``tests/test_ray.py`` starts it); peak memory then also counts every process
of the cluster, and the row says how many nodes were alive.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SQUAD = REPO.parent / "shared" / "labelsets" / "squad2-en"
SWEEP = ["retriever=bm25", "answer_check=off", "position=off", "report=false", "progress=false"]
STAGES = ("chunk", "index", "retrieve", "score", "latency", "decide")


def reversed_paragraphs(text: str) -> str:
    """The document with its paragraphs (blank-line separated) in reverse order."""
    return "\n\n".join(reversed(text.split("\n\n")))


def grown_set(source: Path, copies: int, out: Path) -> Path:
    """``source``'s documents and questions plus ``copies - 1`` paragraph-reversed copies of every document."""
    from evalkit.labels.read import load_labelset
    from evalkit.labels.write import write_labelset

    labelset = load_labelset(source)
    documents = list(labelset.documents)
    for copy in range(1, copies):
        documents += [
            replace(d, doc_id=f"{d.doc_id}--d{copy}", path="", text=reversed_paragraphs(d.text))
            for d in labelset.documents
        ]
    return write_labelset(out, documents, labelset.questions, overwrite=True)


def _tree(pid: int) -> list[int]:
    """``pid`` and every process below it."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*/children"):
            try:
                todo += [int(p) for p in task.read_text().split()]
            except OSError:
                continue
    return found


def _status_kb(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


class PeakMemory(threading.Thread):
    """Largest summed RSS of a process tree, and the root's own high-water mark (kB)."""

    def __init__(self, pid: int, others: Callable[[], set[int]] = set) -> None:
        super().__init__(daemon=True)
        self.pid, self.tree_kb, self.driver_kb, self.done = pid, 0, 0, threading.Event()
        self.others = others
        """More processes counted in the tree (a Ray cluster's nodes and workers, which are not its children)."""

    def run(self) -> None:
        while not self.done.is_set():
            pids = set(_tree(self.pid)) | self.others()
            self.tree_kb = max(self.tree_kb, sum(_status_kb(p, "VmRSS:") for p in pids))
            self.driver_kb = max(self.driver_kb, _status_kb(self.pid, "VmHWM:"))
            time.sleep(0.2)


def sweep(
    labelset: Path,
    folder: Path,
    source: Path,
    extra: list[str],
    env: dict[str, str] | None = None,
    others: Callable[[], set[int]] = set,
    run_id: str = "r",
) -> dict[str, float]:
    """One sweep in its own process: wall seconds, peak memory (MB) and the run's stage seconds.

    Run ``r`` is cold (its folder, cache and unit store removed first); another ``run_id`` is run in the same
    folder, so it reuses what the cold run stored.
    """
    if run_id == "r":
        shutil.rmtree(folder, ignore_errors=True)
    overrides = [*SWEEP, f"run_id={run_id}", f"labelset.path={labelset}", f"reports_dir={folder}", *extra]
    env = {**(env or os.environ), "PYTHONPATH": str(source)}
    load = os.getloadavg()[0]
    before = os.times()
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "evalkit.sweep", *overrides], cwd=source, env=env)
    sampler = PeakMemory(process.pid, others)
    sampler.start()
    code = process.wait()
    wall = time.perf_counter() - started
    after = os.times()
    cpu = (after.children_user + after.children_system) - (before.children_user + before.children_system)
    sampler.done.set()
    sampler.join()
    if code != 0:
        raise SystemExit(f"sweep failed ({code}): {' '.join(overrides)}")
    seconds = json.loads((folder / run_id / "run_stats.json").read_text())["seconds"]
    staged = {f"{stage}_s": round(seconds.get(stage, float("nan")), 1) for stage in STAGES}
    # The index seconds overlap the chunk seconds when the worker builds both beside the driver: not added.
    counted = sum(seconds.get(stage, 0.0) for stage in (*STAGES, "embed", "rerank") if stage != "index")
    return {
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "peak_tree_mb": round(sampler.tree_kb / 1024),
        "peak_driver_mb": round(sampler.driver_kb / 1024),
        **staged,
        "outside_s": round(wall - counted, 1),
        "load_start": round(load, 2),
        "load_end": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 20, 200])
    parser.add_argument("--out", type=Path, default=REPO / "reports" / "growth")
    parser.add_argument("--source", type=Path, default=REPO, help="the checkout whose code runs the sweeps")
    parser.add_argument("--ray", action="store_true", help="on a two-node Ray cluster started on 127.0.0.1")
    parser.add_argument("--again", action="store_true", help="each size run a second time on its stored units")
    parser.add_argument("extra", nargs="*", help="more sweep overrides, e.g. retriever=hybrid")
    args = parser.parse_args()
    source, out = args.source.resolve(), args.out.resolve()
    print(f"machine: {os.cpu_count()} CPUs; code: {source}", flush=True)
    rows, cluster = [], None
    if args.ray:
        sys.path.insert(0, str(REPO))  # the tests' loopback cluster: the same start and stop as tests/test_ray.py
        from tests.loopback.ray_cluster import alive_nodes, cluster_pids, start_cluster, stop_cluster

        (out / "ray").mkdir(parents=True, exist_ok=True)
        cluster = start_cluster(out / "ray")
    try:
        for copies in args.sizes:
            labelset = grown_set(SQUAD, copies, out / "sets" / f"x{copies}")
            extra, env, others, where = list(args.extra), None, set, {"executor": "local"}
            if cluster is not None:
                extra += ["executor=ray", f"executor.address={cluster.address}"]
                env, others = cluster.driver_env, lambda: cluster_pids(cluster)
                where = {"executor": "ray", "nodes": alive_nodes(cluster.address, cluster.env)}
            for run_id in ("r", "again") if args.again else ("r",):
                measured = sweep(labelset, out / f"x{copies}", source, extra, env, others, run_id)
                row = {"corpus": f"x{copies}", "run": "cold" if run_id == "r" else "again", **where, **measured}
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        if cluster is not None:
            stop_cluster(cluster)
    columns = list(rows[0])
    print("\n| " + " | ".join(columns) + " |\n|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(str(row[c]) for c in columns) + " |")


if __name__ == "__main__":
    main()
