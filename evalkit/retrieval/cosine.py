"""Cosines whose bits depend only on the two vectors: exact integer dot products on BLAS.

A float32 ``queries @ units.T`` is rounded at every addition, and the order of those additions is
the BLAS kernel's: it changes with the number of rows in the call (gemv for one row, small-matrix
paths, edge tiles), the thread count and the CPU kernel OpenBLAS picks (``OPENBLAS_CORETYPE``). So
the same (question, unit) pair scored in another block, on a Ray worker or on another processor
could differ in the last bit, and a near-tie could swap ranks.

Here every vector is first written as integers times a power of two: each component rounded to
``bits`` bits below the vector's largest component (``bits`` chosen from the dimension so that
``dim * 2**(2*bits) < 2**53``). Every product and every partial sum of two such vectors is then an
integer below 2**53, which float64 holds exactly, so a float64 BLAS product computes the exact
integer dot product in whatever order it adds, and scaling back by powers of two is exact too. The
cosine is therefore a function of the two vectors alone: the same for any block, executor, thread
count or core type. Its distance from the real cosine of the float32 vectors is at most about
``dim * 2**-bits * max|component|**2`` (below 1e-8 for unit vectors of dimension 384, i.e. smaller
than the float32 rounding it replaces, which reaches ~3e-7); the cost is a float64 rather than a
float32 product (measured by ``benchmarks/dense_scoring.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

EXACT_BITS = 53
"""Integers up to 2**53 are exact in float64."""


@dataclass(frozen=True)
class FixedPointVectors:
    """Vectors as exact integers (stored in float64) times one power of two per vector."""

    mantissas: np.ndarray
    """Shape (n, dim): integer-valued float64, each |value| <= 2**bits."""
    scales: np.ndarray
    """Shape (n,): the power of two each row's integers are multiplied by."""

    def take(self, rows: np.ndarray | slice) -> FixedPointVectors:
        """Some of the rows (an index array or a slice)."""
        return FixedPointVectors(self.mantissas[rows], self.scales[rows])


def mantissa_bits(dim: int) -> int:
    """The most bits per component for which a dot product of ``dim`` components stays exact."""
    bits = (EXACT_BITS - math.log2(max(dim, 1))) // 2
    if bits < 8:
        raise ValueError(f"vectors of dimension {dim} are too long for exact fixed-point cosines")
    return int(bits)


def to_fixed_point(vectors: np.ndarray) -> FixedPointVectors:
    """Each row rounded to ``mantissa_bits(dim)`` bits below its largest component."""
    values = np.asarray(vectors, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"expected a matrix of vectors, got shape {values.shape}")
    bits = mantissa_bits(values.shape[1])
    largest = np.abs(values).max(axis=1) if values.shape[1] else np.zeros(len(values))
    # frexp: largest = f * 2**e with 0.5 <= f < 1, so largest * 2**(bits - e) < 2**bits (powers of two: exact).
    _, exponent = np.frexp(np.where(largest > 0, largest, 1.0))
    shift = (bits - exponent).astype(np.float64)
    mantissas = np.rint(np.ldexp(values, shift.astype(np.int64)[:, None]))
    return FixedPointVectors(mantissas, np.exp2(-shift))


def exact_cosines(queries: FixedPointVectors, units: FixedPointVectors) -> np.ndarray:
    """Dot products of every query with every unit (float64), the same bits however they are grouped."""
    return (queries.mantissas @ units.mantissas.T) * queries.scales[:, None] * units.scales[None, :]
