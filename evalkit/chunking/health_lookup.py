"""Lookups that keep chunk health linear on any document.

The checks ask, per chunk, questions a naive loop answers by scanning the
whole document or every definition: "the first line after this one that is
indented at most this much", "the smallest ``def`` around this position",
"where does this run of closing brackets begin". Each is answered here in
logarithmic (or amortised constant) time, so a 5 MB document costs seconds,
not hours. Pure. May import: nothing from evalkit.
"""

from __future__ import annotations

import heapq
import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence

INFINITY = float("inf")


class FirstAtMost:
    """First index ``>= lo`` whose value is at most ``t``: a min segment tree, O(log n) a query."""

    def __init__(self, values: Sequence[float]) -> None:
        size = 1
        while size < len(values):
            size *= 2
        tree: list[float] = [INFINITY] * (2 * size)
        tree[size : size + len(values)] = values
        for i in range(size - 1, 0, -1):
            tree[i] = min(tree[2 * i], tree[2 * i + 1])
        self._size, self._tree, self._n = size, tree, len(values)

    def find(self, lo: int, at_most: float) -> int:
        """The least ``i >= lo`` with ``values[i] <= at_most``, else ``len(values)``."""
        if lo >= self._n:
            return self._n
        tree, i = self._tree, lo + self._size
        # Climb to the first subtree, left to right from ``lo``, whose minimum qualifies.
        while tree[i] > at_most:
            while i & 1:
                i >>= 1
            if i == 0:
                return self._n
            i += 1
        while i < self._size:
            i = 2 * i if tree[2 * i] <= at_most else 2 * i + 1
        return i - self._size


def innermost(spans: Sequence[tuple[int, int]], positions: Iterable[int]) -> dict[int, int]:
    """For each position, the index of the shortest span with ``start < pos < end`` (ties: lowest index).

    Positions without such a span are left out. One sweep over the sorted
    positions with a heap of open spans: O((spans + positions) log spans).
    """
    order = sorted(range(len(spans)), key=lambda k: spans[k][0])
    found: dict[int, int] = {}
    heap: list[tuple[int, int, int]] = []  # (length, index, end)
    k = 0
    for pos in sorted(set(positions)):
        while k < len(order) and spans[order[k]][0] < pos:
            start, end = spans[order[k]]
            heapq.heappush(heap, (end - start, order[k], end))
            k += 1
        # Positions only grow, so a span that ended at or before this one never contains a later one.
        while heap and heap[0][2] <= pos:
            heapq.heappop(heap)
        if heap:
            found[pos] = heap[0][1]
    return found


class BackScan:
    """Walk back over a run of given characters; long runs are looked up, not walked again.

    A chunk-health check walks back from every chunk start over spaces or
    closing brackets; in a document that is one long run of them, every
    chunk would walk the whole run. Past :attr:`WALK` steps the run's start
    comes from the run list, found once per character set with a regex.
    """

    WALK = 64

    def __init__(self, text: str) -> None:
        self._text = text
        self._runs: dict[str, list[int]] = {}

    def before_run(self, i: int, chars: str) -> int:
        """The last index ``<= i`` whose character is not in ``chars`` (-1 if none)."""
        text, stop = self._text, max(-1, i - self.WALK)
        while i > stop and text[i] in chars:
            i -= 1
        if i < 0 or text[i] not in chars:
            return i
        if chars not in self._runs:
            self._runs[chars] = [m.start() for m in re.finditer(f"[{re.escape(chars)}]+", text)]
        starts = self._runs[chars]
        return starts[bisect_right(starts, i) - 1] - 1
