"""Latency profiles: first-token seconds against prompt tokens, measured against the generator that serves
production, written by ``python -m evalkit.latency probe`` and read by ``answer_check.latency_profile``.

A profile is a JSON file: the fitted line (:class:`evalkit.scoring.latency.LatencyModel`'s record: intercept,
slope, its standard error, residuals) and, per probed prompt length, the measured quantiles. It is what lets
latency constrain a config when the answers come from a local stand-in.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evalkit.scoring.latency import LatencyModel, fit_latency
from evalkit.settings import ConfigError

VERSION = 1
REQUIRED = ("intercept", "slope", "residual_sd", "n", "r_squared")


def profile_record(
    tokens: Sequence[float], seconds: Sequence[float], meta: Mapping[str, Any], groups: Sequence[float] | None = None
) -> dict[str, Any]:
    """The profile of measured (prompt tokens, first-token seconds) pairs: the line and per-length quantiles
    (``groups``: the length each request was asked at; default its own token count)."""
    model = fit_latency(tokens, seconds)
    if model is None:
        raise ValueError("no request was timed")
    x = np.asarray(tokens if groups is None else groups, dtype=float)
    y = np.asarray(seconds, dtype=float)
    lengths = []
    for length in sorted(set(x.tolist())):
        at = y[x == length]
        lengths.append({"prompt_tokens": length, "n": int(at.size), "p50": float(np.percentile(at, 50)),
                        "p95": float(np.percentile(at, 95))})  # fmt: skip
    return {"version": VERSION, **dict(meta), "model": model.record(), "lengths": lengths}


def write_profile(path: Path, record: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


def read_profile(path: str | Path) -> LatencyModel:
    """The profile's line; a missing or malformed file is one ConfigError line naming the file and field."""
    where = f"answer_check.latency_profile: {path}"
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{where}: no such file (write one with python -m evalkit.latency probe)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{where}: not a latency profile ({exc})") from None
    model = data.get("model") if isinstance(data, dict) else None
    if not isinstance(model, dict):
        raise ConfigError(f"{where}: field 'model': missing (not a latency profile)")
    for key in REQUIRED:
        value = model.get(key)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
            if key == "residual_sd" and value is None:
                continue
            raise ConfigError(f"{where}: field 'model.{key}': expected a number, got {value!r}"[:200])
    residuals = model.get("residuals") or []
    if not isinstance(residuals, list) or not all(isinstance(r, (int, float)) for r in residuals):
        raise ConfigError(f"{where}: field 'model.residuals': expected a list of numbers")
    fixed = {**model, "residual_sd": math.nan if model.get("residual_sd") is None else model["residual_sd"]}
    found = LatencyModel.from_record(fixed)
    assert found is not None
    return found
