"""Item analysis of a labelled set across a sweep's configs: which questions never discriminate, which gold to doubt.

Classical test theory with the roles turned: the configs are the examinees and the questions the items. For
each question, over the configs that scored it on the primary measure (its subset: answerable questions for
recall and hit):

- **facility**: the question's mean score over the configs;
- **item-rest correlation** ``r``: Pearson's correlation, across configs, between the question's score and the
  config's mean score on the *other* questions (for 0/1 scores such as hit it is the point-biserial); the rest
  score leaves the question out, so it does not correlate with itself;
- **Kelley's upper and lower groups**: the 27% of configs best and worst on the rest of the set; ``p_upper``
  and ``p_lower`` are the question's mean score in each, and ``D = p_upper - p_lower`` the discrimination index.

A question **never discriminates** when every config gives it the same score: every config right (it cannot
tell configs apart) or every config wrong (no config finds its gold at all). It is **suspect gold** when

1. it discriminates *negatively*: ``D < 0`` and ``r < 0`` (the configs that are worse on the rest of the set
   score better on it; in test theory a negative point-biserial is the sign of a miskeyed item, Ebel 1965), or
2. the upper group misses it: ``p_upper <= UPPER_FLOOR`` (0.1: at most one upper config in ten finds it) while
   the upper group's mean on the rest of the set is at least :data:`UPPER_REST_FLOOR` (0.5).

Why the second rule: within one chunking a question's hit can only grow with top_k and shrink with the
threshold, as the set's does, so those axes push every question's ``r`` up; a wrong label rarely scores
*better* under bad configs, it scores under none, or under almost none. The configs that find most of the set
are the test: when they miss a question, its gold is the first thing to check. The floors were measured on the
bundled demo set with planted labels (tests/test_items.py, and exploratory plantings beside it): gold moved to
random text of another document or to an 800-character stretch of the wrong section of the right document; 0.1
flagged none of the unplanted questions in eight planted sweeps of 48 configs (the hardest true question had
``p_upper`` 0.15, a multi-hop question half covered), and caught 19 of 20 random-text and 17 of 28 wrong-section
plants. Gold moved to a passage that retrieval *does* rank for the question (a
plausible but wrong passage) behaves like true gold and is not caught by any of these statistics.

Fewer than :data:`MIN_CONFIGS` configs (groups of fewer than 2 configs) give no analysis. Pure: frames in,
records out.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd

from evalkit.records import ItemAnalysis, ItemStats
from evalkit.scoring.registry import Measure
from evalkit.scoring.values import matrix

__all__ = [
    "GROUP_SHARE",
    "MIN_CONFIGS",
    "UPPER_FLOOR",
    "UPPER_REST_FLOOR",
    "ItemAnalysis",
    "ItemStats",
    "item_analysis",
]

MIN_CONFIGS = 8
"""Configs needed for an analysis: 27% of 8 rounds to 2, the smallest upper and lower groups that are groups."""
GROUP_SHARE = 0.27
"""Kelley's upper and lower groups: the 27% of configs best and worst on the rest of the set."""
UPPER_FLOOR = 0.1
"""Suspect gold when the upper group's mean score on the question is at most this."""
UPPER_REST_FLOOR = 0.5
"""... and the upper group's mean on the rest of the set at least this (the upper configs find most questions)."""
EPS = 1e-9


def _corr(x: np.ndarray, y: np.ndarray) -> float:
    dx, dy = x - x.mean(), y - y.mean()
    den = math.sqrt(float((dx * dx).sum()) * float((dy * dy).sum()))
    return float((dx * dy).sum() / den) if den > EPS else math.nan


def _constant_kind(value: float, m: Measure) -> str:
    if m.proportion and value >= 1 - EPS:
        return "always" if m.higher_is_better else "never"
    if m.proportion and value <= EPS:
        return "never" if m.higher_is_better else "always"
    return "constant"


def item_analysis(results: pd.DataFrame, m: Measure) -> ItemAnalysis:
    """Item statistics of every question on measure ``m``'s per-question values across the grid's configs.

    A threshold the calibration advised off the grid (rows ``off_grid``) is left out: it was fitted on these
    questions' own gold, so it would add a config chosen by the labels being judged, and a number of configs
    that moves with the advice.
    """
    if "off_grid" in results.columns:
        results = results[~results["off_grid"].fillna(False).astype(bool)]
    wide = matrix(results, m).dropna(axis=0, how="all")
    wide = wide.loc[:, wide.notna().all(axis=0)] if len(wide) else wide  # configs that scored every question
    n_configs, n_questions = int(wide.shape[1]), int(wide.shape[0])
    group = max(1, round(GROUP_SHARE * n_configs))
    if n_configs < MIN_CONFIGS or n_questions < 3:
        why = (
            f"{n_configs} configs and {n_questions} questions scored on {m.name}; item analysis needs at least "
            f"{MIN_CONFIGS} configs and 3 questions"
        )
        return ItemAnalysis(m.name, n_configs, n_questions, group, math.nan, (), (), why)
    sign = 1.0 if m.higher_is_better else -1.0  # groups and rules on scores where higher is better
    scores = sign * wide.to_numpy(dtype=np.float64)
    totals = scores.sum(axis=0)
    suspect: list[tuple[tuple[float, ...], ItemStats]] = []
    never: list[ItemStats] = []
    upper_rest: list[float] = []
    for i, qid in enumerate(wide.index):
        x = scores[i]
        rest = (totals - x) / (n_questions - 1)
        order = np.argsort(rest, kind="stable")
        upper, lower = float(x[order[-group:]].mean()), float(x[order[:group]].mean())
        upper_rest.append(float(rest[order[-group:]].mean()))
        r = _corr(x, rest)  # the same for scores of either sign: the correlation of (-x, -rest) is that of (x, rest)
        stats = ItemStats(str(qid), sign * float(x.mean()), r, sign * upper, sign * lower, n_configs, "")
        if float(x.max() - x.min()) <= EPS:
            never.append(replace(stats, r=math.nan, reason=_constant_kind(stats.facility, m)))
        if upper - lower < -EPS and r < 0:
            suspect.append(((0.0, upper - lower, upper), replace(stats, reason="negative")))
        elif m.proportion and m.higher_is_better and upper <= UPPER_FLOOR and upper_rest[-1] >= UPPER_REST_FLOOR:
            suspect.append(((1.0, upper - lower, upper), replace(stats, reason="upper_miss")))
    suspect.sort(key=lambda pair: (*pair[0], pair[1].question_id))
    never.sort(key=lambda s: (s.reason, s.question_id))
    ranked = tuple(stats for _, stats in suspect)
    return ItemAnalysis(m.name, n_configs, n_questions, group, sign * float(np.mean(upper_rest)), ranked, tuple(never))
