"""A small ridge-penalised logistic regression, and its cross-fitted predictions (pure numpy).

The answer check's predictor of answer correctness from retrieval features
(:mod:`evalkit.scoring.answer_design`): a few features, a few hundred rows, fitted by iteratively reweighted
least squares. The ridge keeps separable small pilots finite. Cross-fitting (folds of whole clusters) means
no answered question both trains the predictor and is corrected by it, which the prediction-powered estimate
(:mod:`.two_phase`) needs to stay unbiased.
"""

from __future__ import annotations

import numpy as np

RIDGE = 1.0
"""Penalty on the coefficients (not the intercept): a pilot where every answer agrees fits a flat model."""
MIN_ROWS = 20
"""Fewer training rows than this fit no model: the prediction is the training mean."""
FOLDS = 5


def fit_logistic(x: np.ndarray, y: np.ndarray, ridge: float = RIDGE, iterations: int = 25) -> np.ndarray:
    """Coefficients (intercept first) of ``P(y = 1 | x)``; ``x``: rows x features, ``y`` in {0, 1}."""
    design = np.column_stack([np.ones(len(x)), x])
    beta = np.zeros(design.shape[1])
    penalty = np.full(design.shape[1], ridge)
    penalty[0] = 1e-6
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(design @ beta, -30, 30)))
        w = np.maximum(p * (1 - p), 1e-6)
        hessian = design.T @ (design * w[:, None]) + np.diag(penalty)
        step = np.linalg.solve(hessian, design.T @ (y - p) - penalty * beta)
        beta = beta + step
        if float(np.max(np.abs(step))) < 1e-8:
            break
    return beta


def predict_logistic(beta: np.ndarray, x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(beta[0] + x @ beta[1:], -30, 30)))


def cross_fitted(
    x: np.ndarray, y: np.ndarray, train: np.ndarray, clusters: np.ndarray, folds: int = FOLDS
) -> np.ndarray:
    """A prediction for every row; rows in ``train`` are predicted by a model that never saw their cluster.

    ``train``: rows whose ``y`` is known. Rows outside it get the mean of the fold models' predictions.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    train = np.asarray(train, dtype=bool)
    labels = np.asarray(clusters).astype(str)
    if train.sum() < MIN_ROWS:
        base = float(np.mean(y[train])) if train.any() else 0.5
        return np.full(len(x), base)
    unique = np.unique(labels[train])
    # A fold per cluster, by a hash of its label: the same cluster lands in the same fold on every call.
    fold_of = {c: sum(c.encode()) % folds for c in unique}
    fold = np.array([fold_of.get(c, -1) for c in labels])
    out = np.zeros(len(x))
    unseen = np.zeros(len(x))
    used = 0
    for k in range(folds):
        learn = train & (fold != k)
        if learn.sum() < MIN_ROWS or len(np.unique(y[learn])) < 2:
            beta = np.array([_logit(float(np.mean(y[learn])) if learn.any() else 0.5)] + [0.0] * x.shape[1])
        else:
            beta = fit_logistic(x[learn], y[learn])
        held = train & (fold == k)
        out[held] = predict_logistic(beta, x[held])
        unseen += predict_logistic(beta, x)
        used += 1
    out[~train] = unseen[~train] / used
    return out


def _logit(p: float) -> float:
    p = min(max(p, 1e-3), 1 - 1e-3)
    return float(np.log(p / (1 - p)))
