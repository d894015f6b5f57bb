"""What a metric declares, once, in its own module: its column, its per-question definition, its vectorised form.

Every ``evalkit/scoring/ir/<module>.py`` that defines a metric ends with a ``METRICS`` tuple of
:class:`Metric` records; :mod:`evalkit.scoring.ir.forms` collects them, and the name table
(:mod:`evalkit.scoring.registry`), the slicing (:mod:`evalkit.scoring.slicing`) and the rows the sweep
writes (``evalkit/pipeline/score.py``) read from there. Adding a metric is a new module plus its test.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from evalkit.records import EvidenceMode
from evalkit.scoring.ir.returned import Returned

__all__ = ["Column", "JudgedRanking", "Metric", "PerQuestion", "Unit", "Vectorised"]

Unit = Literal["proportion", "usd", "count", "chars", "tokens", "score", "seconds"]
"""How a value is read: a share in [0, 1] (shown as a percentage, differences in points), US dollars,
a count, characters, tokens, a raw retriever/reranker score, or seconds."""


@dataclass(frozen=True)
class Column:
    """What one column of results.parquet / summary.parquet / the chunkings table means."""

    name: str
    """The column name as written."""
    label: str
    """Display label; ``@k`` is replaced by the config's top_k where one is shown."""
    higher_is_better: bool
    """Direction: False for misses, cost and size (cheaper and smaller is better)."""
    unit: Unit
    definition: str
    """One line: what the value is, per question (results) or per config (summary)."""

    @property
    def proportion(self) -> bool:
        """Values in [0, 1], shown as percentages and deltas in points."""
        return self.unit == "proportion"


@dataclass(frozen=True)
class JudgedRanking:
    """One question's ranked list once judged: everything a per-question form needs."""

    rel: tuple[bool, ...]
    """Relevance of the hits returned, best first (after threshold filtering)."""
    n_relevant: int
    """Relevant units in the whole chunking (qrels size)."""
    mode: EvidenceMode = "any"
    """The question's evidence mode."""
    coverage: tuple[frozenset[int], ...] = ()
    """Mode ``all``: evidence indices covered by each prefix of the list."""
    n_spans: int = 0
    """Mode ``all``: number of evidence spans."""


PerQuestion = Callable[[JudgedRanking, int], float]
Vectorised = Callable[[Returned], np.ndarray]


@dataclass(frozen=True)
class Metric:
    """A metric's per-question definition and its vectorised form (which must agree), and its column."""

    name: str
    """Result column (and ``name@k`` prefix) of the metric."""
    per_question: PerQuestion
    """``fn(judged, k) -> float`` for one question: the definition."""
    vectorised: Vectorised
    """``fn(returned) -> array (n_q,)`` for every question of a grid point (k is ``returned.k``); the sweep runs it."""
    column: Column | None
    """The result column it is written as (label, direction, unit, definition); None for a form the sweep
    does not write on its own (multi-hop coverage alone is a part of recall)."""
    order: int
    """Its place among the metric columns (rows, summary, the report's tables): lower first."""
    answerable_only: bool = True
    """Undefined without gold: NaN on unanswerable questions, averaged over answerable ones."""
    comparable: bool = True
    """The objective and the gate's margins may name it (a measure on answerable questions)."""

    def __post_init__(self) -> None:
        if self.column is not None and self.column.name != self.name:
            raise ValueError(f"metric {self.name!r} declares column {self.column.name!r}")
