"""First-token latency means a request's, on the generator that serves production.

- A simulated generator with a known per-request distribution (a line in prompt tokens plus a skewed,
  heavy-tailed scatter): the stated p95 over a config's prompts is within 10% of the true request p95 (the
  line alone, the fitted mean, is not).
- Cached rows never enter the fit: their timings are another run's.
- Requests sent while others were in flight are left out when enough ran alone.
- A stand-in's latency (the answering model is not the one ``cost:`` prices) never constrains; a profile of
  production's generator does.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalkit.answers.check.experiment import latency_source, timed_requests
from evalkit.answers.generation.latency_profile import profile_record, read_profile, write_profile
from evalkit.scoring.latency import fit_latency, latency_percentiles
from evalkit.settings import ConfigError


def _simulated(rng: np.random.Generator, tokens: np.ndarray) -> np.ndarray:
    """0.4 s + 1.5 ms per prompt token, times a lognormal scatter (sd ~25%), plus an occasional stall."""
    line = 0.4 + 0.0015 * tokens
    stall = rng.random(tokens.size) < 0.03
    return line * rng.lognormal(-0.03, 0.25, tokens.size) + stall * rng.exponential(2.0, tokens.size)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_stated_p95_is_a_requests_p95(seed: int) -> None:
    rng = np.random.default_rng(seed)
    measured_tokens = rng.uniform(300, 4000, 300)
    model = fit_latency(measured_tokens, _simulated(rng, measured_tokens))
    assert model is not None
    config_prompts = rng.uniform(800, 2500, 400)  # one config's questions
    truth = _simulated(rng, np.repeat(config_prompts, 500))
    true_p95 = float(np.percentile(truth, 95))
    stated = latency_percentiles(model, config_prompts)["p95"]
    assert abs(stated / true_p95 - 1) < 0.10, (stated, true_p95)
    line_only = float(np.percentile(model.predict(config_prompts), 95))
    assert line_only < 0.85 * true_p95, "the fitted mean understates a request's p95"


def _rows(cached: bool, first: float, tokens: float, in_flight: float = 1.0) -> dict:
    return {"sent": True, "cached": cached, "first_token_s": first, "planned_tokens": tokens, "in_flight": in_flight}


def test_cached_rows_never_enter_the_fit() -> None:
    fresh = [_rows(False, 0.5 + 0.001 * t, t) for t in (500, 1000, 1500, 2000, 2500)]
    stale = [_rows(True, 30.0, t) for t in (500, 600, 700)]  # another machine's timings, brought back by the cache
    x, y = timed_requests(pd.DataFrame(fresh + stale))
    assert len(x) == 5 and y.max() <= 3.0
    model = fit_latency(x, y)
    assert model is not None and model.slope == pytest.approx(0.001) and model.r_squared == pytest.approx(1.0)


def test_requests_timed_alone_are_preferred_to_queued_ones() -> None:
    alone = [_rows(False, 0.5 + 0.001 * t, t, 1) for t in (500, 1000, 1500, 2000)]
    queued = [_rows(False, 4 * (0.5 + 0.001 * t), t, 4) for t in (500, 1000, 1500, 2000)]  # waited behind 3 others
    x, y = timed_requests(pd.DataFrame(alone + queued))
    assert len(x) == 4 and float(y.max()) == pytest.approx(2.5)
    only_queued = timed_requests(pd.DataFrame(queued))  # nothing ran alone: the load is all there is
    assert len(only_queued[0]) == 4


class _Job:
    """The two fields :func:`latency_source` reads of an AnswerCheckJob."""

    def __init__(self, model: str, production: str, profile: str | None = None) -> None:
        self.generator = type("G", (), {"model": model})()
        self.cost_model = production
        self.settings = type("S", (), {"latency_profile": profile})()


def test_a_stand_ins_latency_never_constrains_and_a_profile_does(tmp_path: Path) -> None:
    model = fit_latency([500, 1000, 2000, 3000], [1.0, 1.5, 2.6, 3.4])
    _, stand_in = latency_source(model, _Job("qwen2.5-coder-0.5b-instruct-gguf", "claude-sonnet-5"))  # type: ignore[arg-type]
    assert stand_in["constrains"] is False and "stand-in" in stand_in["source"]
    _, own = latency_source(model, _Job("claude-sonnet-5", "claude-sonnet-5"))  # type: ignore[arg-type]
    assert own["constrains"] is True
    rng = np.random.default_rng(0)
    tokens = np.repeat([250.0, 1000.0, 4000.0], 20)
    seconds = 0.2 + 0.0004 * tokens + rng.normal(0, 0.02, tokens.size)
    path = tmp_path / "profile.json"
    write_profile(path, profile_record(tokens, seconds, {"base_url": "http://127.0.0.1:1/v1", "model": "m"}))
    profiled, source = latency_source(model, _Job("local", "claude-sonnet-5", str(path)))  # type: ignore[arg-type]
    assert source["constrains"] is True and profiled is not None
    assert profiled.slope == pytest.approx(0.0004, rel=0.1) and source["stand_in"]["n"] == 4
    assert not math.isnan(profiled.slope_se)


@pytest.mark.parametrize(
    ("text", "field"),
    [("{}", "model"), ('{"model": {"intercept": "x"}}', "model.intercept"), ("[1", "not a latency profile")],
)
def test_a_bad_profile_is_one_line_naming_the_field(tmp_path: Path, text: str, field: str) -> None:
    path = tmp_path / "p.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")) as err:
        read_profile(path)
    assert "\n" not in str(err.value) and str(path) in str(err.value)
