"""The significance tier: configs not shown worse than the best (one-sided, Holm), the cheapest of them.

Worked on a made-up set where the answer is known: a config equal to the best but for two questions ties
with it, one that loses 40 points is shown worse, and the cheapest of the tie is named.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evalkit.scoring.compare import Resampling
from evalkit.scoring.tier import one_sided_worse, significance_tier


def _table() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    n = 120
    best = (rng.random(n) < 0.8).astype(float)
    tie = best.copy()
    tie[np.flatnonzero(best == 1.0)[:2]] = 0.0  # two questions lost: not separable from the best
    worse = best * (rng.random(n) < 0.5)  # loses about 40 points
    index = pd.Index([f"q{i}" for i in range(n)], name="question_id")
    return pd.DataFrame({"best": best, "tie": tie, "worse": worse}, index=index)


@pytest.mark.parametrize("clustered", [False, True])
def test_the_tier_holds_the_ties_and_names_the_cheapest(clustered: bool) -> None:
    table = _table()
    clusters = pd.Series([f"doc{i // 6}" for i in range(len(table))], index=table.index) if clustered else None
    settings = Resampling(level=0.95, n_resamples=2000, seed=0, clusters=clusters)
    costs = {"best": 3.0, "tie": 1.0, "worse": 0.5}
    tier = significance_tier(table, costs, settings, higher_is_better=True, metric="recall")
    entries = {e["config_id"]: e for e in tier["configs"]}
    assert tier["best"] == "best" and tier["size"] == 2
    assert entries["tie"]["in_tier"] and not entries["worse"]["in_tier"]
    assert entries["worse"]["p_holm"] < 0.025 <= entries["tie"]["p_holm"]
    assert entries["worse"]["high"] < 0 <= entries["tie"]["high"]
    assert tier["cheapest"] == "tie", "the cheapest config not shown worse, not the cheapest overall"
    assert [e["config_id"] for e in tier["configs"]][:2] == ["tie", "best"], "ties listed cheapest first"
    assert entries["best"]["delta"] is None and entries["best"]["in_tier"]


def test_lower_is_better_measures_and_the_one_sided_p() -> None:
    assert one_sided_worse(-0.1, 0.04, higher_is_better=True) == pytest.approx(0.02)
    assert one_sided_worse(0.1, 0.04, higher_is_better=True) == pytest.approx(0.98)
    assert one_sided_worse(0.1, 0.04, higher_is_better=False) == pytest.approx(0.02)
    assert one_sided_worse(0.0, 1.0, higher_is_better=True) == pytest.approx(0.5)
    table = 1.0 - _table()  # a miss rate: lower is better
    tier = significance_tier(table, {}, Resampling(n_resamples=1000), higher_is_better=False, metric="zero_hit")
    entries = {e["config_id"]: e for e in tier["configs"]}
    assert not entries["worse"]["in_tier"] and tier["cheapest"] is None, "no costs: no cheapest named"


def test_identical_configs_tie_exactly() -> None:
    table = _table().assign(copy=lambda t: t["worse"])
    tier = significance_tier(table, {"copy": 0.1, "worse": 0.2}, Resampling(n_resamples=1000))
    entries = {e["config_id"]: e for e in tier["configs"]}
    assert entries["copy"]["p_holm"] == entries["worse"]["p_holm"] and not entries["copy"]["in_tier"]
