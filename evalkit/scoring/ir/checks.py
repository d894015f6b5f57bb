"""Argument checks shared by the per-question metric definitions (pure)."""

from __future__ import annotations

import operator
from collections.abc import Sequence

__all__ = ["check_k", "check_n_relevant", "top"]


def check_k(k: int) -> int:
    """Return ``k`` as an int: TypeError unless an integer, ValueError unless >= 1."""
    if isinstance(k, bool):
        raise TypeError(f"k must be an integer, got {k!r}")
    k = operator.index(k)  # TypeError for floats and strings
    if k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k}")
    return k


def top(rel: Sequence[bool], k: int) -> list[bool]:
    """The first ``k`` relevance flags as bools (``k`` checked)."""
    return [bool(flag) for flag in rel[: check_k(k)]]


def check_n_relevant(rel: Sequence[bool], n_relevant: int) -> int:
    """Raise when ``n_relevant`` cannot be the qrels size behind ``rel``.

    More relevant hits than relevant units means duplicated units in the
    ranking (e.g. children of one parent returned twice): a caller bug that
    would push recall above 1.
    """
    n_relevant = operator.index(n_relevant)
    if n_relevant < 0:
        raise ValueError(f"n_relevant must be >= 0, got {n_relevant}")
    found = sum(bool(flag) for flag in rel)
    if found > n_relevant:
        raise ValueError(f"{found} relevant hits but only {n_relevant} relevant units: is a unit ranked twice?")
    return n_relevant
