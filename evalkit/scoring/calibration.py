"""Threshold calibration from score distributions (pure).

A threshold cannot be guessed: a fixed 0.5 filters every candidate for some
questions and none for others. Per (chunking, score, question class) this
module records two views of the best pool scores:

- the advice (:mod:`evalkit.scoring.thresholds`): the highest threshold whose
  zero-hit on answerable questions stays within a target, the abstention on
  unanswerable questions it buys, and whether the score separates the two
  groups well enough (ROC AUC) to be worth a threshold at all. This is the
  ``recommended_threshold``: the advised value, or no filtering when the
  advice is "no threshold".
- the overlap interval, kept for continuity: the best score of a relevant
  candidate against that of an irrelevant one, from the 5th percentile of the
  first to the 95th of the second. Its upper edge (``overlap_threshold``, the
  former recommendation) gives almost no question whose best candidate is
  irrelevant any context, at the price of many answerable questions with none
  (45-87% on real sets), so it is shown, not advised.
Edges are quantiles, not extremes, so one outlier does not decide them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from evalkit.scoring.thresholds import (
    DEFAULT_ZERO_HIT_TARGET,
    MIN_AUC,
    advise,
    no_filter_threshold,
    roc_auc,
    zero_hit_at,
)

DEFAULT_QUANTILE = 0.05
"""Edges of the overlap interval: the 5th percentile of relevant-best and the 95th of irrelevant-best."""


@dataclass(frozen=True)
class Calibration:
    """Score distributions, the threshold advice and the overlap interval for one class of questions."""

    chunking: str
    stage: str
    """Which score: the reranker's, or the retriever's when there is no reranker."""
    question_class: str
    """Value of the class tag (e.g. lang=zh-Hans), or 'all'."""
    n_answerable: int
    n_unanswerable: int
    n_relevant_best: int
    """Questions with a relevant candidate in the pool."""
    n_irrelevant_best: int
    """Questions with an irrelevant candidate in the pool."""
    zero_hit_target: float
    """Most answerable questions the advised threshold may leave without context."""
    advice: str
    """``threshold`` or ``no threshold``."""
    advice_reason: str
    """Why, in plain words."""
    advised_threshold: float
    """Highest threshold with zero-hit on answerable questions within the target; NaN when no threshold."""
    zero_hit_answerable_at_advised: float
    """Share of answerable questions whose best score falls below the advised threshold (<= the target)."""
    abstention_at_advised: float
    """Share of unanswerable questions that get no context at the advised threshold (a correct abstention)."""
    auc_answerable_vs_unanswerable: float
    """ROC AUC of the best score: answerable against unanswerable questions (NaN without both)."""
    auc_relevant_vs_irrelevant: float
    """ROC AUC of best-relevant against best-irrelevant score (NaN without both)."""
    recommended_threshold: float
    """What to set: the advised threshold, or the no-filtering value (0) when the advice is no threshold."""
    zero_hit_answerable_at_recommended: float
    """Share of answerable questions of this class whose best score falls below the recommended threshold."""
    zero_hit_unanswerable_at_recommended: float
    """Share of unanswerable questions of this class that would correctly get no context."""
    relevant_quantiles: tuple[float, ...]
    """Best relevant score at the 5/25/50/75/95th percentiles (NaN when no question has one)."""
    irrelevant_quantiles: tuple[float, ...]
    overlap_low: float
    """Low edge of the overlap interval (5th percentile of relevant-best)."""
    overlap_high: float
    """High edge (95th percentile of irrelevant-best)."""
    separable: bool
    """True when the edges do not overlap: any threshold between them separates the classes."""
    overlap_threshold: float
    """The former recommendation: the overlap's upper edge (its midpoint when separable)."""
    zero_hit_answerable_at_overlap: float
    zero_hit_unanswerable_at_overlap: float

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


def _quantiles(values: np.ndarray, levels: Sequence[float]) -> tuple[float, ...]:
    if values.size == 0:
        return tuple(float("nan") for _ in levels)
    return tuple(float(v) for v in np.quantile(values, levels))


def calibrate(
    chunking: str,
    stage: str,
    question_class: str,
    best_relevant: np.ndarray,
    best_irrelevant: np.ndarray,
    best_any: np.ndarray,
    answerable: np.ndarray,
    quantile: float = DEFAULT_QUANTILE,
    zero_hit_target: float = DEFAULT_ZERO_HIT_TARGET,
    floor: float = 0.0,
) -> Calibration | None:
    """Calibration for one class (``floor``: the threshold that filters nothing); None when it has no question."""
    if best_any.size == 0:
        return None
    rel = best_relevant[~np.isnan(best_relevant)]
    irr = best_irrelevant[~np.isnan(best_irrelevant)]
    nan = float("nan")
    low = float(np.quantile(rel, quantile)) if rel.size else nan
    high = float(np.quantile(irr, 1.0 - quantile)) if irr.size else nan
    separable = bool(low > high)
    overlap = (low + high) / 2 if separable else high
    ans, unans = best_any[answerable], best_any[~answerable]
    advice = advise(ans, unans, floor, zero_hit_target, MIN_AUC)
    recommended = advice.recommended_threshold
    return Calibration(
        chunking=chunking,
        stage=stage,
        question_class=question_class,
        n_answerable=int(ans.size),
        n_unanswerable=int(unans.size),
        n_relevant_best=int(rel.size),
        n_irrelevant_best=int(irr.size),
        zero_hit_target=float(zero_hit_target),
        advice=advice.advice,
        advice_reason=advice.reason,
        advised_threshold=advice.advised_threshold,
        zero_hit_answerable_at_advised=advice.zero_hit_answerable_at_advised,
        abstention_at_advised=advice.abstention_at_advised,
        auc_answerable_vs_unanswerable=advice.auc_answerable_vs_unanswerable,
        auc_relevant_vs_irrelevant=roc_auc(rel, irr),
        recommended_threshold=recommended,
        zero_hit_answerable_at_recommended=zero_hit_at(ans, recommended),
        zero_hit_unanswerable_at_recommended=zero_hit_at(unans, recommended),
        relevant_quantiles=_quantiles(rel, _LEVELS),
        irrelevant_quantiles=_quantiles(irr, _LEVELS),
        overlap_low=low,
        overlap_high=high,
        separable=separable,
        overlap_threshold=overlap,
        zero_hit_answerable_at_overlap=zero_hit_at(ans, overlap) if np.isfinite(overlap) else nan,
        zero_hit_unanswerable_at_overlap=zero_hit_at(unans, overlap) if np.isfinite(overlap) else nan,
    )


def calibrate_by_class(
    chunking: str,
    stage: str,
    classes: Sequence[str],
    scores: np.ndarray,
    relevant: np.ndarray,
    answerable: np.ndarray,
    quantile: float = DEFAULT_QUANTILE,
    zero_hit_target: float = DEFAULT_ZERO_HIT_TARGET,
) -> list[Calibration]:
    """One calibration for all questions, then one per class value (every class shares one no-filter value)."""
    best_rel, best_irr = best_scores(scores, relevant)
    best_any = np.fmax(best_rel, best_irr)
    floor = no_filter_threshold(scores)
    labels = np.array(classes, dtype=object)
    answerable = np.asarray(answerable, dtype=bool)
    results = []
    for name in ["all", *sorted(set(classes))]:
        mask = np.ones(len(labels), dtype=bool) if name == "all" else labels == name
        found = calibrate(
            chunking,
            stage,
            name,
            best_rel[mask],
            best_irr[mask],
            best_any[mask],
            answerable[mask],
            quantile,
            zero_hit_target,
            floor,
        )
        if found is not None:
            results.append(found)
    return results
