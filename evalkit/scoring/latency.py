"""First-token latency (pure): a per-generator model of a request's latency against prompt tokens, and each
config's per-request p50/p95.

Measured first-token times (one per *fresh* request: a cached answer brings back the timing of the run that
made it, under another load) are fitted by least squares as ``seconds = intercept + slope * prompt_tokens``
(prompt tokens: the local estimate every config's prompt is counted with, so the model applies to configs
that were never answered). A request is the line plus its own scatter: the residuals are kept, and a
config's p50 and p95 are quantiles of ``line(x_i) + residual_j`` over its questions' prompt tokens ``x_i``
and every measured residual ``r_j`` (the line alone, the fitted mean, understates a request's p95 by the
residual spread). The slope's standard error is kept for the gate's interval.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

MIN_POINTS = 3
"""Fewer measured requests than this (or a single prompt length) fit no slope: the mean is the model."""
MAX_GRID = 2000
"""Prompt lengths and residuals kept per side when forming the request distribution (evenly spaced in sorted
order: the quantiles move by well under 1% and memory stays bounded on 6,000-question sets)."""


@dataclass(frozen=True)
class LatencyModel:
    """``seconds = intercept + slope * prompt_tokens + residual``, fitted on ``n`` fresh measured requests."""

    intercept: float
    slope: float
    """Seconds per prompt token (prompt processing)."""
    residual_sd: float
    """Standard deviation of measured minus fitted seconds (NaN with fewer than 3 points)."""
    n: int
    r_squared: float
    slope_se: float = math.nan
    """Standard error of the slope (NaN without a slope): the gate widens a latency difference by it."""
    residuals: tuple[float, ...] = ()
    """Measured minus fitted seconds of every fitted request: a request's scatter around the line."""

    @classmethod
    def from_record(cls, record: Mapping[str, Any] | None) -> LatencyModel | None:
        """The model as check.json keeps it (None: no request was timed)."""
        if not record:
            return None
        base = [record[k] for k in ("intercept", "slope", "residual_sd", "n", "r_squared")]
        slope_se = record.get("slope_se")
        return cls(*base, math.nan if slope_se is None else float(slope_se), tuple(record.get("residuals") or ()))

    def record(self) -> dict[str, Any]:
        return {
            "intercept": self.intercept, "slope": self.slope, "residual_sd": self.residual_sd, "n": self.n,
            "r_squared": self.r_squared, "slope_se": None if math.isnan(self.slope_se) else self.slope_se,
            "residuals": [round(r, 6) for r in self.residuals],
        }  # fmt: skip

    def predict(self, prompt_tokens: np.ndarray) -> np.ndarray:
        """The line: a request's expected first-token seconds at each prompt length."""
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
        return LatencyModel(float(y.mean()), 0.0, sd, int(y.size), 0.0, math.nan, tuple(map(float, y - y.mean())))
    slope, intercept = np.polyfit(x, y, 1)
    residual = y - (intercept + slope * x)
    total = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - float(np.sum(residual**2)) / total if total > 0 else 0.0
    sd = float(np.std(residual, ddof=2))
    slope_se = sd / math.sqrt(float(np.sum((x - x.mean()) ** 2)))
    return LatencyModel(float(intercept), float(slope), sd, int(y.size), r2, slope_se, tuple(map(float, residual)))


def _thin(values: np.ndarray) -> np.ndarray:
    if values.size <= MAX_GRID:
        return values
    ordered = np.sort(values)
    return ordered[np.linspace(0, ordered.size - 1, MAX_GRID).round().astype(int)]


def request_seconds(model: LatencyModel, prompt_tokens: Sequence[float]) -> np.ndarray:
    """The first-token seconds of a request at one of these prompt lengths: line plus a measured residual
    (every pair, each equally likely), never below 0."""
    x = np.asarray(prompt_tokens, dtype=float)
    x = _thin(x[np.isfinite(x)])
    line = model.predict(x)
    residuals = _thin(np.asarray(model.residuals, dtype=float))
    if residuals.size == 0:
        return line
    return np.maximum(0.0, (line[:, None] + residuals[None, :]).ravel())


def latency_percentiles(model: LatencyModel, prompt_tokens: Sequence[float]) -> dict[str, float]:
    """p50 and p95 of one config's per-request first-token seconds (:func:`request_seconds`)."""
    seconds = request_seconds(model, prompt_tokens)
    if seconds.size == 0:
        return {"p50": math.nan, "p95": math.nan}
    return {"p50": float(np.percentile(seconds, 50)), "p95": float(np.percentile(seconds, 95))}


def stage_percentiles(seconds: Sequence[float]) -> dict[str, float | int]:
    """p50 and p95 of one retrieval stage's measured per-query seconds, and how many were timed."""
    x = np.asarray(seconds, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return {"p50": math.nan, "p95": math.nan, "n": 0}
    return {"p50": float(np.percentile(x, 50)), "p95": float(np.percentile(x, 95)), "n": int(x.size)}
