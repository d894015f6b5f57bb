"""First-token latency (pure): a per-generator model of latency against prompt tokens, and each config's p50/p95.

Measured first-token times (one per sent request) are fitted by least squares as
``seconds = intercept + slope * prompt_tokens`` (prompt tokens: the local estimate every config's prompt is
counted with, so the model applies to configs that were never answered). The residual standard deviation
is kept beside it: it is how far a single request strays from the line. A config's p50 and p95 are the
percentiles of the fitted latency over its own questions' prompt tokens.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

MIN_POINTS = 3
"""Fewer measured requests than this (or a single prompt length) fit no slope: the mean is the model."""


@dataclass(frozen=True)
class LatencyModel:
    """``seconds = intercept + slope * prompt_tokens``, fitted on ``n`` measured requests."""

    intercept: float
    slope: float
    """Seconds per prompt token (prompt processing)."""
    residual_sd: float
    """Standard deviation of measured minus fitted seconds (NaN with fewer than 3 points)."""
    n: int
    r_squared: float

    @classmethod
    def from_record(cls, record: Mapping[str, Any] | None) -> LatencyModel | None:
        """The model as check.json keeps it (None: no request was timed)."""
        if not record:
            return None
        return cls(*(record[k] for k in ("intercept", "slope", "residual_sd", "n", "r_squared")))

    def predict(self, prompt_tokens: np.ndarray) -> np.ndarray:
        return np.maximum(0.0, self.intercept + self.slope * np.asarray(prompt_tokens, dtype=float))


def fit_latency(prompt_tokens: Sequence[float], seconds: Sequence[float]) -> LatencyModel | None:
    """The least-squares line through the measured points (NaN pairs dropped); None with no measurement."""
    x, y = np.asarray(prompt_tokens, dtype=float), np.asarray(seconds, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if y.size == 0:
        return None
    if y.size < MIN_POINTS or np.ptp(x) == 0:
        sd = float(np.std(y, ddof=1)) if y.size > 1 else math.nan
        return LatencyModel(float(y.mean()), 0.0, sd, int(y.size), 0.0)
    slope, intercept = np.polyfit(x, y, 1)
    residual = y - (intercept + slope * x)
    total = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - float(np.sum(residual**2)) / total if total > 0 else 0.0
    return LatencyModel(float(intercept), float(slope), float(np.std(residual, ddof=2)), int(y.size), r2)


def latency_percentiles(model: LatencyModel, prompt_tokens: Sequence[float]) -> dict[str, float]:
    """p50 and p95 of the modelled first-token seconds over one config's questions."""
    x = np.asarray(prompt_tokens, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return {"p50": math.nan, "p95": math.nan}
    fitted = model.predict(x)
    return {"p50": float(np.percentile(fitted, 50)), "p95": float(np.percentile(fitted, 95))}


def stage_percentiles(seconds: Sequence[float]) -> dict[str, float | int]:
    """p50 and p95 of one retrieval stage's measured per-query seconds, and how many were timed."""
    x = np.asarray(seconds, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return {"p50": math.nan, "p95": math.nan, "n": 0}
    return {"p50": float(np.percentile(x, 50)), "p95": float(np.percentile(x, 95)), "n": int(x.size)}
