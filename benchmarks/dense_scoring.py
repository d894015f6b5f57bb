"""What exact cosines cost: dense scoring of one chunking, float32 BLAS (the old kernel) vs exact fixed point.

    python benchmarks/dense_scoring.py [--questions 6078] [--units 1878] [--dim 384] [--repeats 3]

The default shape is squad2-en at 512/64 with e5 (6,078 questions, 1,878 units, dimension 384). Both
kernels score the same random unit vectors in the sweep's blocks (``question_blocks``) and keep the
top 50; the output is seconds per chunking (best of ``--repeats``), the ratio, and whether each kernel
gave the same bits with blocks of 1 row and of 256 rows.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from evalkit.retrieval.cosine import exact_cosines, to_fixed_point
from evalkit.retrieval.pools import question_blocks, top_n


def _float32_blas(queries: np.ndarray, units: np.ndarray, cells: int) -> np.ndarray:
    blocks = question_blocks(len(queries), len(units), cells)
    return np.vstack([top_n(queries[rows] @ units.T, 50)[1] for rows in blocks])


def _exact(queries: np.ndarray, units: np.ndarray, cells: int) -> np.ndarray:
    fixed_units, fixed_queries = to_fixed_point(units), to_fixed_point(queries)
    blocks = question_blocks(len(queries), len(units), cells)
    return np.vstack([top_n(exact_cosines(fixed_queries.take(rows), fixed_units), 50)[1] for rows in blocks])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=6078)
    parser.add_argument("--units", type=int, default=1878)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)

    def unit_rows(n: int) -> np.ndarray:
        rows = rng.standard_normal((n, args.dim)).astype(np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    units, queries = unit_rows(args.units), unit_rows(args.questions)
    one_row_cells = args.units  # one question per block
    print(f"{args.questions} questions x {args.units} units, dim {args.dim}, top 50, blocks of 256 rows")
    timings = {}
    for name, kernel in (("float32 BLAS", _float32_blas), ("exact fixed point", _exact)):
        best = float("inf")
        for _ in range(args.repeats):
            start = time.perf_counter()
            blocked = kernel(queries, units, 1 << 22)
            best = min(best, time.perf_counter() - start)
        same = np.array_equal(blocked, kernel(queries, units, one_row_cells), equal_nan=True)
        timings[name] = best
        print(f"{name:>18}: {best:6.3f} s per chunking; blocks of 1 and 256 rows give the same bits: {same}")
    print(f"exact / float32: {timings['exact fixed point'] / timings['float32 BLAS']:.2f}x")


if __name__ == "__main__":
    main()
