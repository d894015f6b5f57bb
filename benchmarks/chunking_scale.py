"""Does chunking stay linear on pathological documents? ``python benchmarks/chunking_scale.py``.

For every document shape (see :data:`SHAPES`), every size (default 0.1, 0.5,
1, 2 and 5 MB of text) and every chunker, one subprocess builds the
document, chunks it (``chunk_size=512``, ``chunk_overlap=64``) and runs the
chunk-health checks on the result. The parent prints a table of wall time
(chunking, health) and the child's peak RSS (``ru_maxrss``), then the
growth exponent of time and of RSS above the interpreter's baseline from the
smallest to the largest size (1.0 is linear).

Target (issue 13): a 5 MB document of any shape chunks and health-checks in
under 60 s and 1.5 GB. Each child runs under an address-space limit
(``--limit-gb``, default 4) and a timeout, so a regression fails one case
rather than the machine. Exit status 1 if any case misses the target.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

MB = 1_000_000
TARGET_SECONDS = 60.0
TARGET_RSS_MB = 1500.0
CHUNKERS = ("fixed", "recursive", "markdown", "code", "parent_child")

_WORDS = "the of and to in is was for on that with as by at from this chunk retrieval index answer".split()


def _words(rng: random.Random, n: int) -> str:
    """About ``n`` characters of English-like prose on one line, a sentence end now and then."""
    out: list[str] = []
    size = 0
    while size <= n:
        word = rng.choice(_WORDS)
        if rng.random() < 0.08:
            word += "."
        out.append(word)
        size += len(word) + 1
    return " ".join(out)[:n]


def plain(n: int) -> str:
    """One line of prose, no line break anywhere."""
    return _words(random.Random(1), n)


def heading(n: int) -> str:
    """One line starting with ``# ``: the whole document is one heading (the 24 GB case)."""
    return "# " + plain(n - 2)


def table(n: int) -> str:
    """One huge pipe table: header, delimiter, then rows up to ``n`` characters."""
    rng = random.Random(2)
    rows = ["| id | name | value | note |", "|---|---|---|---|"]
    size = sum(len(r) + 1 for r in rows)
    i = 0
    while size <= n:
        row = f"| {i} | {rng.choice(_WORDS)} | {rng.randint(0, 10**6)} | {_words(rng, 30)} |"
        rows.append(row)
        size += len(row) + 1
        i += 1
    return "\n".join(rows)[:n]


def table_line(n: int) -> str:
    """One single line of pipe-separated cells (a table row that never ends)."""
    rng = random.Random(3)
    cells: list[str] = []
    size = 0
    while size <= n:
        cell = f"| {rng.choice(_WORDS)} {rng.randint(0, 999)} "
        cells.append(cell)
        size += len(cell)
    return "".join(cells)[:n]


def code(n: int) -> str:
    """A Python file without blank lines: classes of methods, comments, decorators."""
    lines: list[str] = []
    size = 0
    i = 0
    while size <= n:
        block = [
            f"# section {i}",
            f"class Thing{i}(Base):",
            f'    """Thing number {i}."""',
            "    @property",
            f"    def value_{i}(self) -> int:",
            f"        return self._value * {i} + compute(self, {i}, [1, 2, 3])",
            f"    def method_{i}(self, x: int, y: int = {i}) -> list[int]:",
            "        if x > y:",
            "            return [x, y]",
            "        return [y for _ in range(x)]",
            f"def helper_{i}(a, b):",
            f"    return Thing{i}().method_{i}(a, b)",
        ]
        lines.extend(block)
        size += sum(len(line) + 1 for line in block)
        i += 1
    return "\n".join(lines)[:n]


def chinese(n: int) -> str:
    """Chinese characters on one line, without punctuation or spaces."""
    rng = random.Random(4)
    # A random 100k-character block, repeated: building 5M one-character strings would itself use 400 MB.
    block = "".join(chr(rng.randint(0x4E00, 0x9FA5)) for _ in range(min(n, 100_000)))
    return (block * (n // len(block) + 1))[:n]


def nesting(n: int) -> str:
    """Headings nested six deep, over and over, each with a one-line body."""
    rng = random.Random(5)
    lines: list[str] = []
    size = 0
    i = 0
    while size <= n:
        level = i % 6 + 1
        pair = [f"{'#' * level} Heading {i} level {level}", _words(rng, rng.randint(20, 120))]
        lines.extend(pair)
        size += sum(len(line) + 1 for line in pair)
        i += 1
    return "\n".join(lines)[:n]


SHAPES: dict[str, Callable[[int], str]] = {
    "plain": plain,
    "heading": heading,
    "table": table,
    "table_line": table_line,
    "code": code,
    "chinese": chinese,
    "nesting": nesting,
}
"""Document shape name to a generator of ``n`` characters of it."""


def document(shape: str, n: int):  # type: ignore[no-untyped-def]
    """The benchmark document of ``shape`` with ``n`` characters (code is stored as ``big.py``)."""
    from evalkit.records import Document

    path = "big.py" if shape == "code" else f"{shape}.md"
    return Document(doc_id=shape, text=SHAPES[shape](n), path=path)


def run_case(shape: str, n: int, chunker: str) -> dict[str, float]:
    """Chunk and health-check one document in this process; times and peak RSS."""
    from evalkit.chunking.chunkers import chunk_corpus
    from evalkit.chunking.health import chunk_health
    from evalkit.records import ChunkingSpec

    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    doc = document(shape, n)
    assert len(doc.text) == n, (shape, len(doc.text), n)
    spec = ChunkingSpec(chunker=chunker, chunk_size=512, chunk_overlap=64)
    t0 = time.perf_counter()
    chunks = chunk_corpus([doc], spec)
    t1 = time.perf_counter()
    chunk_health([doc], chunks)
    t2 = time.perf_counter()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"chunks": len(chunks), "chunk_s": t1 - t0, "health_s": t2 - t1, "rss_mb": rss, "base_mb": base_rss}


def _child(shape: str, n: int, chunker: str, limit_gb: float, timeout: float) -> dict[str, object]:
    """Run one case in a subprocess under an address-space limit; its figures or the failure."""
    cmd = [sys.executable, __file__, "--case", shape, str(n), chunker, "--limit-gb", str(limit_gb)]
    started = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout:.0f} s"}
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return {"error": f"exit {done.returncode}: {last[:60]}", "wall_s": time.perf_counter() - started}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _exponent(points: list[tuple[float, float]]) -> float:
    """Slope of log(y) over log(x) between the first and last point (1.0 = linear)."""
    (x0, y0), (x1, y1) = points[0], points[-1]
    if y0 <= 0 or y1 <= 0 or x1 == x0:
        return float("nan")
    return math.log(y1 / y0) / math.log(x1 / x0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="0.1,0.5,1,2,5", help="document sizes in MB (10^6 characters)")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--chunkers", default=",".join(CHUNKERS))
    parser.add_argument("--limit-gb", type=float, default=4.0, help="address-space limit of each case")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds before a case is stopped")
    parser.add_argument("--case", nargs=3, metavar=("SHAPE", "CHARS", "CHUNKER"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        limit = int(args.limit_gb * 1024**3)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        shape, n, chunker = args.case
        print(json.dumps(run_case(shape, int(n), chunker)))
        return 0
    sizes = [float(s) for s in args.sizes.split(",")]
    print(f"{'shape':<11}{'chunker':<13}{'MB':>5}{'chunks':>8}{'chunk s':>9}{'health s':>9}{'total s':>9}{'RSS MB':>8}")
    failed = 0
    for shape in args.shapes.split(","):
        for chunker in args.chunkers.split(","):
            times: list[tuple[float, float]] = []
            rss: list[tuple[float, float]] = []
            for size in sizes:
                row = _child(shape, int(size * MB), chunker, args.limit_gb, args.timeout)
                if "error" in row:
                    print(f"{shape:<11}{chunker:<13}{size:>5g}  FAILED {row['error']}", flush=True)
                    failed += 1
                    break
                total = float(row["chunk_s"]) + float(row["health_s"])  # type: ignore[arg-type]
                peak = float(row["rss_mb"])  # type: ignore[arg-type]
                times.append((size, total))
                rss.append((size, max(peak - float(row["base_mb"]), 1e-3)))  # type: ignore[arg-type]
                ok = total <= TARGET_SECONDS and peak <= TARGET_RSS_MB
                failed += not ok
                print(
                    f"{shape:<11}{chunker:<13}{size:>5g}{row['chunks']:>8}{row['chunk_s']:>9.2f}"
                    f"{row['health_s']:>9.2f}{total:>9.2f}{peak:>8.0f}{'' if ok else '  MISSED'}",
                    flush=True,
                )
            if len(times) > 1:
                print(
                    f"{shape:<11}{chunker:<13}growth exponent {sizes[0]:g}->{times[-1][0]:g} MB: "
                    f"time {_exponent(times):.2f}, RSS above baseline {_exponent(rss):.2f}",
                    flush=True,
                )
    print("target met" if not failed else f"{failed} case(s) missed the target")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
