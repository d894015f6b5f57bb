"""The whole sweep configuration, read strictly into typed frozen sections.

This is the only reader of the Hydra config tree: :func:`read_config` takes the
resolved plain mapping the entry point got from Hydra and returns a
:class:`SweepConfig`, or raises a one-line :class:`~evalkit.settings.ConfigError`
for the first bad key (unknown keys get the nearest valid one, including keys
added with Hydra's ``+`` prefix). Nothing below the entry point sees the dict.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from evalkit.answers.check.settings import AnswerCheckSettings
from evalkit.answers.generation.settings import GeneratorSettings, read_generator_settings
from evalkit.answers.judge.llm import JudgeConfig
from evalkit.answers.position.settings import PositionSettings
from evalkit.confdir import conf_dir, data_root
from evalkit.cost.apply import CostSettings
from evalkit.pipeline.executor_settings import ExecutorSettings
from evalkit.retrieval.embedding.settings import EmbedderSettings, check_embedder_keys
from evalkit.retrieval.filters import FilterSettings
from evalkit.retrieval.settings import RerankerSettings, RetrieverSettings, check_reranker_keys
from evalkit.scoring.objective import ObjectiveSettings
from evalkit.settings import ConfigError, parse_settings
from evalkit.tracking.settings import TrackerSettings

# Bundled data: inside the installed package, or at a source checkout's root (evalkit.confdir decides).
PROJECT_ROOT = data_root()
CONF_DIR = conf_dir()
_GRID = {"scalar_ok": True}
POOL_SIZE_MAX = 1000
"""The largest candidate pool a config may ask for (``pool_size``); the replay's widening stops here."""


@dataclass(frozen=True)
class LabelsetSettings:
    path: str
    """The labelled set's folder (docs/, docs.jsonl, questions.jsonl)."""
    limit: int | None = field(default=None, metadata={"min": 1})
    """Score only the first N questions (quick looks); None: all."""


@dataclass(frozen=True)
class ChunkerSettings:
    name: str
    child_size: int = field(default=0, metadata={"min": 0})
    """parent_child only: child chunk size (0: chunk_size // 4)."""


@dataclass(frozen=True)
class GridSettings:
    """A sweep preset (``conf/sweep/*.yaml``): each key a number or a list."""

    chunk_size: tuple[int, ...] = field(default=(512,), metadata=_GRID | {"min": 1})
    chunk_overlap: tuple[int, ...] = field(default=(64,), metadata=_GRID | {"min": 0})
    top_k: tuple[int, ...] = field(default=(5,), metadata=_GRID | {"min": 1})
    threshold: tuple[float, ...] | None = field(default=None, metadata=_GRID)


@dataclass(frozen=True)
class CalibrationSettings:
    class_tag: str = "lang"
    """Thresholds are calibrated per value of this question tag."""


@dataclass(frozen=True)
class StatsSettings:
    cluster_by: str = "document"
    """The unit the statistics resample: ``document`` (the question's first evidence document), ``question``,
    or a question tag's name (evalkit/scoring/clusters.py)."""


@dataclass(frozen=True)
class BaselineSettings:
    """The production config's grid point: what the report and the gate compare against."""

    chunk_size: int | None = field(default=None, metadata={"min": 1})
    chunk_overlap: int | None = field(default=None, metadata={"min": 0})
    top_k: int | None = field(default=None, metadata={"min": 1})
    threshold: float | None = None
    """None: the lowest threshold of the grid."""


@dataclass(frozen=True)
class SweepConfig:
    """``conf/config.yaml`` and its groups, typed. Field names are the config's keys."""

    labelset: LabelsetSettings
    chunker: ChunkerSettings
    embedder: EmbedderSettings
    retriever: RetrieverSettings
    sweep: GridSettings
    chunk_size: tuple[int, ...] = field(metadata=_GRID | {"min": 1})
    chunk_overlap: tuple[int, ...] = field(metadata=_GRID | {"min": 0})
    top_k: tuple[int, ...] = field(metadata=_GRID | {"min": 1})
    threshold: tuple[float, ...] | str | None = field(default=None, metadata=_GRID)
    """A number, a list, ``auto`` (a grid from the first chunking's score quantiles) or None (the stage's grid)."""
    reranker: RerankerSettings = field(default_factory=RerankerSettings)
    filters: FilterSettings = field(default_factory=FilterSettings)
    pool_size: int = field(default=50, metadata={"min": 1, "max": POOL_SIZE_MAX})
    relevance_tau: float = field(default=1.0, metadata={"above": 0.0, "max": 1.0})
    calibration: CalibrationSettings = field(default_factory=CalibrationSettings)
    stats: StatsSettings = field(default_factory=StatsSettings)
    seed: int = field(default=0, metadata={"min": 0})
    baseline: BaselineSettings = field(default_factory=BaselineSettings)
    cost: CostSettings = field(default_factory=CostSettings)
    objective: ObjectiveSettings = field(default_factory=ObjectiveSettings)
    dry_run: bool = False
    budget_usd: float | None = field(default=None, metadata={"min": 0.0})
    results_csv: bool = False
    report: bool = True
    compare: str | None = None
    production_log: str | None = None
    """A query log (JSONL/CSV) or OTLP JSON trace export: production's logged retrievals scored against the gold."""
    run_id: str | None = None
    reports_dir: str = "reports"
    cache_path: str = "reports/.cache/evalkit.sqlite"
    progress: bool = True
    executor: ExecutorSettings = field(default_factory=ExecutorSettings)
    position: PositionSettings | None = None
    """Present with ``+experiment=position``."""
    answer_check: AnswerCheckSettings = field(default_factory=AnswerCheckSettings)
    """``conf/answer_check/<preset>.yaml``: production and the decision's configs answered (``off``: none)."""
    generator: GeneratorSettings | None = None
    """The generator group (``conf/generator/<name>.yaml``), typed by its backend (``name``)."""
    judge: JudgeConfig | None = None
    """The advisory judge group (``+judge=claude``), typed."""
    tracker: TrackerSettings | None = None
    """Present with ``+tracker=mlflow``: where the finished sweep is logged (evalkit/tracking)."""


def read_config(plain: Mapping[str, Any]) -> SweepConfig:
    """The typed config, or a one-line ConfigError naming the first bad key."""
    raw = dict(plain)
    check_reranker_keys(dict(raw.get("reranker") or {"name": "none"}))
    if isinstance(raw.get("embedder"), Mapping):
        check_embedder_keys(raw["embedder"])
    position = raw.pop("position", None)
    answer_check = raw.pop("answer_check", None)
    generator = raw.pop("generator", None)
    judge = raw.pop("judge", None)
    config = parse_settings(SweepConfig, raw, "")
    _check_dates(config)
    if position is not None and not isinstance(position, Mapping):
        raise ConfigError(f"position: expected a section of keys, got {position!r}")
    return replace(
        config,
        position=None if position is None else PositionSettings.from_config(position, seed=config.seed),
        answer_check=AnswerCheckSettings.from_config(answer_check or {"preset": "off"}, seed=config.seed),
        generator=None if generator is None else read_generator_settings(generator, "generator"),
        judge=None if judge is None else JudgeConfig.from_mapping(_section("judge", judge), "judge"),
    )


def _check_dates(config: SweepConfig) -> None:
    if config.filters.as_of is not None:
        try:
            dt.date.fromisoformat(str(config.filters.as_of))
        except ValueError:
            raise ConfigError(f"filters.as_of: {config.filters.as_of!r} is not a date (YYYY-MM-DD)") from None


def _section(where: str, raw: Any) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected a section of keys, got {raw!r}")
    return raw
