"""Intervals for shares where the question is the unit: clustered accuracy, paired differences, flip rates (pure).

A question asked several times (shuffles of the chunk order, repeats) gives
answers that are not independent: the unit is the question. Each function
here reduces a question's answers to one share, resamples questions, and
never returns an interval of width zero: where the bootstrap has no spread to
show (every question agrees, or one question), an analytic score interval on
the count of questions takes over, and the result's ``method`` says which.

Small sets: the percentile bootstrap is too narrow at n = 10 (its spread is
the plug-in ``sd/sqrt(n)`` and its quantiles are normal ones), so the bootstrap
intervals here are Hesterberg's (2015) *expanded* percentile intervals: the
quantile levels are ``alpha'/2`` and ``1 - alpha'/2`` with
``alpha' = 2 Phi(-sqrt(n / (n - 1)) t_{1 - alpha/2, n - 1})``, which corrects
both at once and tends to the plain percentile interval as n grows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import ndtr, ndtri
from scipy.stats import t as student_t

from evalkit.records import Interval
from evalkit.scoring.stats.inputs import FloatArray, Seed, check_level, check_resamples, clean_pairs, rng_from
from evalkit.scoring.stats.intervals import wilson_arrays, wilson_bounds, wilson_ci
from evalkit.scoring.stats.resample import resampled_means

__all__ = ["clustered_share_ci", "expanded_level", "flip_rate_ci", "paired_difference_ci", "question_shares"]


def expanded_level(level: float, n: int) -> float:
    """The percentile level Hesterberg's expanded bootstrap interval uses for n questions (n >= 2)."""
    alpha = 1.0 - level
    t = float(student_t.isf(alpha / 2.0, n - 1))
    return 1.0 - 2.0 * float(ndtr(-math.sqrt(n / (n - 1.0)) * t))


def _expanded_bounds(boot: FloatArray, level: float, n: int) -> tuple[float, float]:
    wide = expanded_level(level, n)
    low, high = np.quantile(boot, [(1.0 - wide) / 2.0, (1.0 + wide) / 2.0])
    return float(low), float(high)


def question_shares(correct: Sequence[ArrayLike] | ArrayLike) -> tuple[FloatArray, int]:
    """Each question's share of correct answers, and how many questions had no answer at all.

    ``correct`` holds one sequence of 0/1 (or bool) answers per question, of any lengths, or a
    2-D array with one row per question. NaN answers are dropped; a question left with none is
    dropped and counted.

    Raises:
        ValueError: no question with an answer, values other than 0, 1 and NaN.
    """
    if isinstance(correct, np.ndarray) and correct.ndim == 2:
        return _matrix_shares(correct.astype(np.float64))
    rows = list(correct) if not isinstance(correct, np.ndarray) or correct.ndim != 1 else [correct]
    shares: list[float] = []
    n_missing = 0
    for row in rows:
        answers = np.atleast_1d(np.asarray(row, dtype=np.float64))
        if answers.ndim != 1:
            raise ValueError("each question's answers must be one-dimensional")
        answers = answers[~np.isnan(answers)]
        if not np.isin(answers, (0.0, 1.0)).all():
            raise ValueError("answers must be 0 or 1 (or bool); NaN marks a missing answer")
        if answers.size == 0:
            n_missing += 1
            continue
        shares.append(float(answers.mean()))
    if not shares:
        raise ValueError(f"no question has an answer ({n_missing} questions without one)")
    return np.array(shares, dtype=np.float64), n_missing


def _matrix_shares(answers: FloatArray) -> tuple[FloatArray, int]:
    """``question_shares`` for a (questions, answers) array, vectorised."""
    known = ~np.isnan(answers)
    if not np.isin(answers[known], (0.0, 1.0)).all():
        raise ValueError("answers must be 0 or 1 (or bool); NaN marks a missing answer")
    counts = known.sum(axis=1)
    answered = counts > 0
    if not answered.any():
        raise ValueError(f"no question has an answer ({answers.shape[0]} questions without one)")
    shares = np.nansum(answers[answered], axis=1) / counts[answered]
    return shares, int(answers.shape[0] - answered.sum())


def clustered_share_ci(
    correct: Sequence[ArrayLike] | ArrayLike,
    level: float = 0.95,
    seed: Seed = 0,
    n_resamples: int = 2000,
) -> Interval:
    """Accuracy when each question has several answers: the question is the unit.

    The estimate is the mean over questions of each question's share of correct answers (a
    question counts once however often it was asked). The bounds are the outer ones of two
    intervals (method ``cluster-bootstrap``): the expanded percentile bootstrap (module
    docstring) over questions of that mean, and the continuity-corrected Wilson interval
    (``wilson_bounds``) of the mean share over the number of questions, i.e. as if each question
    were one 0/1 answer. The second is the worst case (a share in [0, 1] with mean p varies at
    most as much as a 0/1 answer) and keeps the coverage where the bootstrap is too narrow:
    few questions, skewed shares near 0 or 1. When every question has the same share (all
    right, all wrong, or one question) the bootstrap has width zero and the interval is that
    Wilson interval alone (method ``wilson-questions``), never of width zero.

    Raises:
        ValueError: see ``question_shares``; bad level or resample count.
    """
    check_level(level)
    check_resamples(n_resamples)
    shares, n_missing = question_shares(correct)
    return _share_interval(shares, level, n_resamples, seed, n_missing)


def _share_interval(shares: FloatArray, level: float, n_resamples: int, seed: Seed, n_missing: int) -> Interval:
    mean, n = float(shares.mean()), int(shares.size)
    wilson_low, wilson_high = wilson_bounds(min(1.0, max(0.0, mean)), n, level, continuity_correction=True)
    if n < 2 or np.ptp(shares) == 0:
        return Interval(mean, wilson_low, wilson_high, n, level, "wilson-questions", n_missing)
    boot = resampled_means(shares[np.newaxis, :], n_resamples, rng_from(seed))[0]
    low, high = _expanded_bounds(boot, level, n)
    return Interval(mean, min(low, wilson_low), max(high, wilson_high), n, level, "cluster-bootstrap", n_missing)


def flip_rate_ci(flipped: Sequence[bool] | ArrayLike, level: float = 0.95) -> Interval:
    """Share of questions whose correctness changes with chunk order (one flag per question).

    The continuity-corrected Wilson interval (``wilson_ci``'s default): never of width zero, also
    when no question (or every question) flipped.
    """
    return wilson_ci(np.asarray(flipped, dtype=np.float64), level=level)


def paired_difference_ci(
    baseline: ArrayLike,
    candidate: ArrayLike,
    level: float = 0.95,
    seed: Seed = 0,
    n_resamples: int = 2000,
) -> Interval:
    """Interval for ``mean(candidate) - mean(baseline)`` over the same questions, one value per question.

    - Both 0/1: Newcombe's (1998) hybrid score interval for a difference of paired proportions
      (his method 10, as Fagerland, Lydersen and Laake, *Statistical Analysis of Contingency
      Tables*, ch. 8, give it): Wilson intervals for each side's accuracy, joined with
      ``L = d - sqrt((p_c - l_c)**2 - 2 phi (p_c - l_c)(u_b - p_b) + (u_b - p_b)**2)`` and
      ``U = d + sqrt((p_b - l_b)**2 - 2 phi (p_b - l_b)(u_c - p_c) + (u_c - p_c)**2)``, where
      ``phi`` is the pairs' correlation from ``A = both * neither - wins * losses``: ``(A - n/2)``
      over the root of the margins' product when ``A > n/2``, 0 when ``0 <= A <= n/2``, A over
      it when negative, 0 when a margin is empty. Never of width zero (``phi < 1``), also with
      no discordant question.
    - Per-question shares in [0, 1] (accuracy over shuffles): the outer bounds of the expanded
      percentile bootstrap over questions of the mean difference and the t interval
      ``d +- t_{n-1} sd / sqrt(n)`` of the per-question differences, cut to [-1, 1] (method
      ``cluster-bootstrap``; the bootstrap follows skew, the t interval keeps small sets from
      being too narrow: with both, simulated coverage stayed >= 0.945 at n = 10 and 30 where
      the bootstrap alone gave 0.926 on U-shaped shares). When every question
      has the same difference (or there is one question), the interval is the difference of the
      two sides' continuity-corrected Wilson intervals on the question count (at level
      ``(1 + level) / 2`` each, so by Bonferroni both cover together with at least ``level``):
      ``[low_c - high_b, high_c - low_b]`` (method ``wilson-difference``).

    Pairs with a NaN on either side are dropped and counted.

    Raises:
        ValueError: length mismatch, no complete pairs, values outside [0, 1], bad level.
    """
    check_level(level)
    check_resamples(n_resamples)
    base, cand, n_missing = clean_pairs(baseline, candidate)
    if ((base < 0) | (base > 1) | (cand < 0) | (cand > 1)).any():
        raise ValueError("paired_difference_ci needs values in [0, 1] (0/1 outcomes or per-question shares)")
    if np.isin(base, (0.0, 1.0)).all() and np.isin(cand, (0.0, 1.0)).all():
        return _newcombe(base, cand, level, n_missing)
    diffs = cand - base
    delta, n = float(diffs.mean()), int(diffs.size)
    if n >= 2 and np.ptp(diffs) > 0:
        boot = resampled_means(diffs[np.newaxis, :], n_resamples, rng_from(seed))[0]
        low, high = _expanded_bounds(boot, level, n)
        half = float(student_t.isf((1.0 - level) / 2.0, n - 1)) * float(np.std(diffs, ddof=1)) / math.sqrt(n)
        low, high = max(-1.0, min(low, delta - half)), min(1.0, max(high, delta + half))
        return Interval(delta, low, high, n, level, "cluster-bootstrap", n_missing)
    each = (1.0 + level) / 2.0
    low_b, high_b = wilson_bounds(float(base.mean()), n, each, continuity_correction=True)
    low_c, high_c = wilson_bounds(float(cand.mean()), n, each, continuity_correction=True)
    return Interval(delta, low_c - high_b, high_c - low_b, n, level, "wilson-difference", n_missing)


def _newcombe(base: FloatArray, cand: FloatArray, level: float, n_missing: int) -> Interval:
    """Newcombe's method 10 on the 2x2 table of (candidate, baseline) outcomes; see paired_difference_ci."""
    n = int(base.size)
    both = np.float64(np.sum((cand == 1) & (base == 1)))
    wins = np.float64(np.sum((cand == 1) & (base == 0)))
    losses = np.float64(np.sum((cand == 0) & (base == 1)))
    low, high = newcombe_bounds(both, wins, losses, n, level)
    delta = float((both + wins) / n - (both + losses) / n)
    return Interval(delta, float(low), float(high), n, level, "newcombe", n_missing)


def newcombe_bounds(
    both: np.ndarray, wins: np.ndarray, losses: np.ndarray, n: int, level: float
) -> tuple[np.ndarray, np.ndarray]:
    """Bounds of Newcombe's method-10 interval for candidate minus baseline, for one 2x2 table or many at once.

    ``both``: questions right under both; ``wins``: under the candidate only; ``losses``: under the baseline
    only; of ``n``. The one implementation: one comparison (:func:`paired_difference_ci`) and the simulated
    power of many (:mod:`~evalkit.scoring.stats.noninferiority`) both call it.
    """
    z = float(ndtri(0.5 + level / 2.0))
    neither = n - both - wins - losses
    p_cand, p_base = (both + wins) / n, (both + losses) / n
    low_c, high_c = wilson_arrays(p_cand, n, z)
    low_b, high_b = wilson_arrays(p_base, n, z)
    margins = (both + wins) * (losses + neither) * (both + losses) * (wins + neither)
    cross = both * neither - wins * losses
    # Newcombe's phi: a positive association is shrunk by n/2 (and cut at 0), so phi < 1 and the
    # interval keeps a positive width even when no question is discordant.
    shrunk = np.where(cross > n / 2.0, cross - n / 2.0, np.where(cross < 0, cross, 0.0))
    phi = np.divide(shrunk, np.sqrt(margins), out=np.zeros_like(shrunk, dtype=np.float64), where=margins > 0)
    below = _combined(p_cand - low_c, high_b - p_base, phi)
    above = _combined(high_c - p_cand, p_base - low_b, phi)
    delta = p_cand - p_base
    return np.maximum(-1.0, delta - below), np.minimum(1.0, delta + above)


def _combined(first: np.ndarray, second: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """``sqrt(a**2 - 2 phi a b + b**2)``: two Wilson distances joined with the pairs' correlation."""
    return np.sqrt(np.maximum(0.0, first * first - 2.0 * phi * first * second + second * second))
