"""Text similarity for label health: normalised equality, 3-gram Jaccard joins, verbatim copies.

All pure. :func:`similar_pairs` is an exact all-pairs similarity join with
prefix filtering (Bayardo et al., WWW 2007): shingles are ordered rarest
first, and two sets with Jaccard >= t must share a token among the first
``|x| - ceil(t * |x|) + 1`` of each, so only pairs sharing a rare prefix
token and of compatible size are ever compared. No pair is missed (unlike
MinHash) and 6,000 questions take well under a second.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Sequence

__all__ = ["jaccard", "longest_common_run", "normalise", "shingles", "similar_pairs"]

_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """NFKC, case-folded, punctuation dropped, whitespace collapsed: ``"What is X?"`` -> ``"what is x"``."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    kept = "".join(" " if unicodedata.category(c).startswith("P") else c for c in folded)
    return _SPACE.sub(" ", kept).strip()


def shingles(text: str, n: int = 3) -> frozenset[str]:
    """Character ``n``-grams of ``text``; the text itself when it is shorter (empty for empty text)."""
    if len(text) <= n:
        return frozenset([text]) if text else frozenset()
    return frozenset(text[i : i + n] for i in range(len(text) - n + 1))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b| (0.0 for two empty sets)."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def similar_pairs(texts: Sequence[str], threshold: float = 0.9, n: int = 3) -> list[tuple[int, int, float]]:
    """Every pair ``(i, j, jaccard)`` with ``i < j`` whose character ``n``-gram Jaccard is >= ``threshold``.

    Texts are compared as given (normalise them first). Exact: the prefix
    filter only skips pairs that cannot reach the threshold.
    """
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    sets = [shingles(text, n) for text in texts]
    frequency = Counter(token for s in sets for token in s)
    rank = {token: r for r, token in enumerate(sorted(frequency, key=lambda t: (frequency[t], t)))}
    ordered = [sorted(rank[t] for t in s) for s in sets]
    index: dict[int, list[int]] = defaultdict(list)
    pairs = []
    for x in sorted((i for i in range(len(sets)) if sets[i]), key=lambda i: (len(sets[i]), i)):
        size = len(sets[x])
        prefix = size - math.ceil(threshold * size - 1e-9) + 1
        candidates: set[int] = set()
        for token in ordered[x][:prefix]:
            for y in index[token]:
                if len(sets[y]) >= threshold * size - 1e-9:
                    candidates.add(y)
            index[token].append(x)
        for y in candidates:
            similarity = jaccard(sets[x], sets[y])
            if similarity >= threshold - 1e-12:
                pairs.append((min(x, y), max(x, y), similarity))
    return sorted(pairs)


def longest_common_run(needle: str, haystack: str, at_least: int) -> int:
    """Length of the longest substring of ``needle`` found in ``haystack``, or 0 when it is under ``at_least``.

    Bounded: one ``str.find`` per window of ``needle`` at each length tried,
    starting at ``at_least`` and growing only while a match exists.
    """
    if at_least <= 0 or at_least > len(needle):
        return 0

    def found(length: int) -> bool:
        return any(needle[i : i + length] in haystack for i in range(len(needle) - length + 1))

    if not found(at_least):
        return 0
    length = at_least
    while length < len(needle) and found(length + 1):
        length += 1
    return length
