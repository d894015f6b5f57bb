"""Threshold calibration from score distributions (pure).

A threshold cannot be guessed: a fixed 0.5 filters every candidate for some
questions and none for others. Per question class, compare the best score of
a relevant candidate with the best score of an irrelevant one. Where the two
distributions overlap, no threshold separates them; the recommended initial
threshold is the upper edge of that overlap, so almost no question whose best
candidate is irrelevant gets context, and its price (the relevant questions
whose best score lies below it) is reported as the zero-hit rate it implies.
Edges are quantiles, not extremes, so one outlier does not decide them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

DEFAULT_QUANTILE = 0.05
"""Edges of the overlap interval: the 5th percentile of relevant-best and the 95th of irrelevant-best."""


@dataclass(frozen=True)
class Calibration:
    """Score distributions and the recommended threshold for one class of questions."""

    chunking: str
    stage: str
    """Which score: the reranker's, or the retriever's when there is no reranker."""
    question_class: str
    """Value of the class tag (e.g. lang=zh-Hans), or 'all'."""
    n_relevant_best: int
    """Questions with a relevant candidate in the pool."""
    n_irrelevant_best: int
    """Questions with an irrelevant candidate in the pool."""
    relevant_quantiles: tuple[float, ...]
    """Best relevant score at the 5/25/50/75/95th percentiles."""
    irrelevant_quantiles: tuple[float, ...]
    overlap_low: float
    """Low edge of the overlap interval (5th percentile of relevant-best)."""
    overlap_high: float
    """High edge (95th percentile of irrelevant-best)."""
    separable: bool
    """True when the edges do not overlap: any threshold between them separates the classes."""
    recommended_threshold: float
    """Upper edge of the overlap interval (or its midpoint when separable)."""
    zero_hit_answerable_at_recommended: float
    """Share of answerable questions of this class whose best score falls below the recommended threshold."""
    zero_hit_unanswerable_at_recommended: float
    """Share of unanswerable questions of this class that would correctly get no context."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_LEVELS = (0.05, 0.25, 0.5, 0.75, 0.95)


def best_scores(scores: np.ndarray, relevant: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per question: best score among relevant and among irrelevant pool entries (NaN when none)."""
    filled = np.nan_to_num(scores, nan=-np.inf)
    valid = ~np.isnan(scores)
    best_rel = np.where(relevant & valid, filled, -np.inf).max(axis=1, initial=-np.inf)
    best_irr = np.where(~relevant & valid, filled, -np.inf).max(axis=1, initial=-np.inf)
    return np.where(np.isfinite(best_rel), best_rel, np.nan), np.where(np.isfinite(best_irr), best_irr, np.nan)


def calibrate(
    chunking: str,
    stage: str,
    question_class: str,
    best_relevant: np.ndarray,
    best_irrelevant: np.ndarray,
    best_any: np.ndarray,
    answerable: np.ndarray,
    quantile: float = DEFAULT_QUANTILE,
) -> Calibration | None:
    """Calibration for one class; None when either distribution is empty."""
    rel = best_relevant[~np.isnan(best_relevant)]
    irr = best_irrelevant[~np.isnan(best_irrelevant)]
    if rel.size == 0 or irr.size == 0:
        return None
    low = float(np.quantile(rel, quantile))
    high = float(np.quantile(irr, 1.0 - quantile))
    separable = low > high
    threshold = (low + high) / 2 if separable else high
    best = np.nan_to_num(best_any, nan=-np.inf)
    below = best < threshold
    return Calibration(
        chunking=chunking,
        stage=stage,
        question_class=question_class,
        n_relevant_best=int(rel.size),
        n_irrelevant_best=int(irr.size),
        relevant_quantiles=tuple(float(v) for v in np.quantile(rel, _LEVELS)),
        irrelevant_quantiles=tuple(float(v) for v in np.quantile(irr, _LEVELS)),
        overlap_low=low,
        overlap_high=high,
        separable=separable,
        recommended_threshold=threshold,
        zero_hit_answerable_at_recommended=_share(below[answerable]),
        zero_hit_unanswerable_at_recommended=_share(below[~answerable]),
    )


def _share(values: np.ndarray) -> float:
    return float(values.mean()) if values.size else float("nan")


def calibrate_by_class(
    chunking: str,
    stage: str,
    classes: Sequence[str],
    scores: np.ndarray,
    relevant: np.ndarray,
    answerable: np.ndarray,
    quantile: float = DEFAULT_QUANTILE,
) -> list[Calibration]:
    """One calibration for all questions, then one per class value."""
    best_rel, best_irr = best_scores(scores, relevant)
    best_any = np.fmax(best_rel, best_irr)
    labels = np.array(classes, dtype=object)
    results = []
    for name in ["all", *sorted(set(classes))]:
        mask = np.ones(len(labels), dtype=bool) if name == "all" else labels == name
        found = calibrate(
            chunking, stage, name, best_rel[mask], best_irr[mask], best_any[mask], answerable[mask], quantile
        )
        if found is not None:
            results.append(found)
    return results
