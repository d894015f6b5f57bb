"""The objective a recommendation maximises, and the per-config values its constraints read (pure).

Maximise a primary measure subject to constraints. The defaults are the gate's
own margins against production (every check of the margins file must pass at
its confidence), plus caps: zero-hit on answerable questions at most 5%,
prompt tokens per query at most production's, and, when the set has
unanswerable questions, abstention no worse than production's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from evalkit.scoring.registry import MEASURES, Measure

if TYPE_CHECKING:  # a config reads ObjectiveSettings before any table exists: pandas loads with the first table
    import pandas as pd

    from evalkit.scoring.per_config import PerConfig, Results

PROMPT_TOKENS = "prompt_tokens"
"""Per-question prompt tokens of a config: question and returned chunks (the system prompt is the same for all)."""


@dataclass(frozen=True)
class OutOfSampleSettings:
    splits: int = field(default=20, metadata={"min": 1, "max": 1000})
    """Random halves: select on one, estimate the gain on the other."""
    seed: int = field(default=0, metadata={"min": 0})


@dataclass(frozen=True)
class ObjectiveSettings:
    """``conf/objective/*.yaml``: what the recommended config maximises, under which constraints."""

    primary: str = field(default="recall", metadata={"choices": tuple(MEASURES)})
    margins: str = "default"
    """The gate's margins file (a name in conf/gate/ or a path): each check is a constraint."""
    zero_hit_answerable_max: float = field(default=0.05, metadata={"min": 0.0, "max": 1.0})
    prompt_tokens_max: float | None = field(default=None, metadata={"min": 0.0})
    """Mean prompt tokens per query allowed; None: production's when answers are not checked, no cap when they
    are (then answers decide whether more context helps, and the gate's cost and latency margins bind)."""
    latency_p95_max: float | None = field(default=None, metadata={"above": 0.0})
    """Seconds: the pick's modelled first-token p95 at most this (answers checked only); None: no cap."""
    abstention_no_worse: bool = True
    """With unanswerable questions: the pick abstains on them at least as often as production."""
    max_candidates: int = field(default=40, metadata={"min": 1})
    """Configs, best primary first, checked with the gate's bootstrap before giving up."""
    out_of_sample: OutOfSampleSettings = field(default_factory=OutOfSampleSettings)


@dataclass(frozen=True)
class ConfigTable:
    """Per-question values of every config the objective reads (question x config frames)."""

    primary: pd.DataFrame
    zero_hit_answerable: pd.DataFrame
    abstention: pd.DataFrame
    prompt_tokens: pd.DataFrame
    margins: dict[str, pd.DataFrame]
    """Measure name -> its per-question values, for every margin of the gate."""

    @property
    def has_unanswerable(self) -> bool:
        return bool(self.abstention.notna().to_numpy().any())


def config_table(results: Results, primary: str, margin_measures: tuple[str, ...]) -> ConfigTable:
    from evalkit.scoring.per_config import PerConfig
    from evalkit.scoring.values import matrix

    if isinstance(results, PerConfig):
        return _config_table(results, primary, margin_measures)
    tokens = results.assign(**{PROMPT_TOKENS: results["returned_tokens"] + results["question_tokens"]})
    wide = tokens.pivot_table(index="question_id", columns="config_id", values=PROMPT_TOKENS, aggfunc="first")
    available = [n for n in margin_measures if MEASURES[n].column in results.columns]
    return ConfigTable(
        primary=matrix(results, MEASURES[primary]),
        zero_hit_answerable=matrix(results, MEASURES["zero_hit_answerable"]),
        abstention=matrix(results, MEASURES["zero_hit_unanswerable"]),
        prompt_tokens=wide.astype(np.float64),
        margins={n: matrix(results, MEASURES[n]) for n in available},
    )


def _config_table(values: PerConfig, primary: str, margin_measures: tuple[str, ...]) -> ConfigTable:
    """The same frames as from a results table, from the sweep's per-config arrays."""

    def matrix_of(m: Measure) -> pd.DataFrame:
        return values.wide([m.column], m.subset)

    available = [n for n in margin_measures if MEASURES[n].column in values.columns]
    return ConfigTable(
        primary=matrix_of(MEASURES[primary]),
        zero_hit_answerable=matrix_of(MEASURES["zero_hit_answerable"]),
        abstention=matrix_of(MEASURES["zero_hit_unanswerable"]),
        prompt_tokens=values.wide(["returned_tokens", "question_tokens"]),
        margins={n: matrix_of(MEASURES[n]) for n in available},
    )


def column_means(frame: pd.DataFrame, rows: np.ndarray | None = None) -> pd.Series:
    """Each config's mean over the given question rows (NaN values skipped)."""
    part = frame if rows is None else frame.iloc[rows]
    return part.mean(axis=0, skipna=True)
