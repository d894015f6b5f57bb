"""The sweep plan: the typed config expanded into the grid, with every path resolved once.

``build_plan`` turns a :class:`~evalkit.pipeline.config.SweepConfig` into a
frozen :class:`SweepPlan`; everything after it (units of work, executors, the
position experiment, the dry run) reads the plan only.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from evalkit.answers.check.experiment import AnswerCheckJob
from evalkit.answers.check.settings import AnswerCheckSettings
from evalkit.answers.generation.settings import GeneratorSettings
from evalkit.answers.judge.llm import JudgeConfig
from evalkit.answers.position.experiment import PositionJob
from evalkit.answers.position.settings import PositionSettings
from evalkit.chunking.chunkers import CHUNKERS, validate_spec
from evalkit.cost.apply import CostSettings
from evalkit.cost.prices import PricingError, price_table
from evalkit.pipeline.config import PROJECT_ROOT, BaselineSettings, StatsSettings, SweepConfig
from evalkit.pipeline.executor_settings import ExecutorSettings
from evalkit.pipeline.plan_checks import check_before_work
from evalkit.records import EXTERNAL_CHUNKING, ChunkingSpec
from evalkit.retrieval.embedding.settings import EMBEDDERS, EmbedderSettings
from evalkit.retrieval.external.calls import ExternalCallError, load_target, where_of
from evalkit.retrieval.filters import FilterSettings
from evalkit.retrieval.settings import RerankerSettings, RetrieverSettings, threshold_warnings
from evalkit.retrieval.vectorstore import StoreUnavailableError, check_installed
from evalkit.scoring.gatecheck import GateConfig
from evalkit.scoring.objective import ObjectiveSettings
from evalkit.settings import ConfigError
from evalkit.usercode import UserCodeError

ANSWER_MARGIN_DEFAULT = 0.05
"""Answer accuracy and F1 margin when the margins file has no answer check (points as a share)."""

__all__ = ["PROJECT_ROOT", "ConfigError", "RunOptions", "SweepPlan", "build_plan", "resolve_path"]


@dataclass(frozen=True)
class RunOptions:
    """How a run is carried out and where it goes; none of it changes a number."""

    run_id: str | None
    reports_dir: Path
    cache_path: Path
    dry_run: bool
    budget_usd: float | None
    results_csv: bool
    report: bool
    compare: Path | None
    progress: bool
    executor: ExecutorSettings = field(default_factory=ExecutorSettings)
    production_log: Path | None = None
    """``production_log=``: production's logged retrievals, scored beside the grid (no number of the grid changes)."""


@dataclass(frozen=True)
class SweepPlan:
    """Everything that determines a sweep's results, and how to carry it out."""

    labelset_path: str
    labelset_limit: int | None
    chunkings: tuple[ChunkingSpec, ...]
    """Outermost loop: one unit of work (and one candidate pool) per chunking."""
    embedder: str
    """The embedder's name (``embedder=...``); its model and version are in every unit's id."""
    retriever: RetrieverSettings
    reranker: RerankerSettings
    pool_size: int
    top_ks: tuple[int, ...]
    thresholds: tuple[float, ...]
    relevance_tau: float
    seed: int
    filters: FilterSettings
    cost: CostSettings
    pricing_dir: Path
    """``cost.pricing_dir`` resolved: the one place price files are read from."""
    calibration_tag: str
    baseline: BaselineSettings
    options: RunOptions
    thresholds_auto: bool = False
    """``threshold=auto``: the grid is built from the first chunking's scores before the sweep runs."""
    objective: ObjectiveSettings = field(default_factory=ObjectiveSettings)
    stats: StatsSettings = field(default_factory=StatsSettings)
    """How the decision and the gate resample (``stats.cluster_by``); not part of the run's identity."""
    position: PositionSettings | None = None
    answer_check: AnswerCheckSettings = field(default_factory=AnswerCheckSettings)
    """The answer check after the decision (``answer_check=smoke`` by default; ``off``: retrieval proxies only)."""
    generator: GeneratorSettings | None = None
    """The generator's typed settings (read once, with the config) when the position experiment runs."""
    judge: JudgeConfig | None = None
    """The advisory judge's settings (``+judge=claude``)."""
    embedder_settings: EmbedderSettings | None = None
    """The embedder group as read (model, path, transport); None: ``embedder`` with its defaults."""

    @property
    def embedder_config(self) -> EmbedderSettings:
        return self.embedder_settings or EmbedderSettings(name=self.embedder)

    def position_job(self) -> PositionJob:
        """What the position experiment needs of this sweep (it never reads the plan itself)."""
        if self.position is None or self.generator is None:
            raise ConfigError(
                "generator: not set; add +experiment=position with generator=local or generator=anthropic"
            )
        first = self.chunkings[0]
        production = self.baseline
        production_chunking = None
        if production.chunk_size is not None:
            spec = ChunkingSpec(first.chunker, production.chunk_size, production.chunk_overlap or 0, first.child_size)
            production_chunking = spec.key
        return PositionJob(
            settings=self.position,
            generator=self.generator,
            pricing_dir=self.pricing_dir,
            labelset_limit=self.labelset_limit,
            progress=self.options.progress,
            judge=self.judge,
            production_chunking=production_chunking,
            cluster_by=self.stats.cluster_by,
        )

    def answer_check_job(self, gate: GateConfig, token_family: str) -> AnswerCheckJob:
        """What the answer check needs of this sweep; its margins are the gate's own (``gate``)."""
        if self.generator is None:
            raise ConfigError("generator: not set; the answer check needs generator=local (or another backend)")
        margins = {m.metric: m for m in gate.margins}

        def amount(metric: str, default: float | None) -> float | None:
            return margins[metric].amount if metric in margins else default

        return AnswerCheckJob(
            settings=self.answer_check,
            generator=self.generator,
            pricing_dir=self.pricing_dir,
            labelset_limit=self.labelset_limit,
            progress=self.options.progress,
            level=gate.confidence,
            accuracy_margin=float(amount("answer_accuracy", ANSWER_MARGIN_DEFAULT) or ANSWER_MARGIN_DEFAULT),
            f1_margin=float(amount("answer_f1", ANSWER_MARGIN_DEFAULT) or ANSWER_MARGIN_DEFAULT),
            cost_max_rise_pct=amount("cost_per_query", None),
            latency_max_rise_pct=amount("first_token_s", None),
            cost_model=self.cost.model,
            queries_per_day=self.cost.queries_per_day,
            output_tokens=self.cost.output_tokens,
            token_family=token_family,
            clusters=gate.clusters,
        )

    @property
    def uses_embedder(self) -> bool:
        return self.retriever.backend.embeds

    @property
    def grid_points(self) -> int:
        return len(self.chunkings) * len(self.top_ks) * len(self.thresholds)

    def warnings(self) -> list[str]:
        """What runs but is probably not meant: thresholds outside the score's range (one line each)."""
        lines = threshold_warnings(self.thresholds, self.retriever, self.reranker.name)
        if self.retriever.external:
            lines.append(
                f"retriever=external: chunk_size and chunk_overlap do not apply ({where_of(self.retriever)} "
                "chunks its own); the grid is top_k x threshold" + (" x reranker" if self.reranker.enabled else "")
            )
        return lines

    def fingerprint(self, labelset_fingerprint: str) -> str:
        """Hash of what the results depend on: the same plan gets the same run id, so it resumes.

        The labelled set enters by content, not by path, so a fresh clone in
        another folder computes the same id; run options never enter.
        """
        payload = {
            "labelset": labelset_fingerprint,
            "limit": self.labelset_limit,
            "chunkings": [asdict(c) for c in self.chunkings],
            "embedder": self.embedder if self.uses_embedder else None,
            "retriever": self.retriever.identity(),
            "reranker": self.reranker.identity(),
            "pool_size": self.pool_size,
            "top_ks": self.top_ks,
            "thresholds": self.thresholds,
            "relevance_tau": self.relevance_tau,
            "seed": self.seed,
            "filters": asdict(self.filters),
            "cost": asdict(self.cost) | {"pricing_dir": None},
            "calibration_tag": self.calibration_tag,
            "baseline": asdict(self.baseline),
        }
        text = json.dumps(payload, sort_keys=True, default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]


def resolve_path(path: str | Path) -> Path:
    """A path as the user typed it (from the working directory), else from the project root."""
    candidate = Path(path).expanduser()
    if candidate.is_absolute() or candidate.exists():
        return candidate
    bundled = PROJECT_ROOT / candidate
    return bundled if bundled.exists() else candidate


def build_plan(
    config: SweepConfig,
    known_chunkers: Sequence[str] = tuple(CHUNKERS),
    known_embedders: Sequence[str] = tuple(EMBEDDERS),
) -> SweepPlan:
    """Check what the types alone cannot (names, pairs, paths, chunk sizes) and expand the grid."""
    resolved = resolve_path(config.labelset.path)
    if not resolved.is_dir():
        raise ConfigError(f"labelset.path: {config.labelset.path!r} is not a folder")
    if config.chunker.name not in known_chunkers:
        raise ConfigError(f"chunker.name: unknown chunker {config.chunker.name!r}; known: {', '.join(known_chunkers)}")
    if config.embedder.name not in known_embedders:
        known = ", ".join(known_embedders)
        raise ConfigError(f"embedder.name: unknown embedder {config.embedder.name!r}; known: {known}")
    chunkings = _chunkings(config)
    top_ks = tuple(sorted(_unique(config.top_k)))
    if config.pool_size < max(top_ks):
        raise ConfigError(f"pool_size: {config.pool_size} is smaller than the largest top_k {max(top_ks)}")
    # Thresholds apply to the last stage's score: the reranker's when there is one.
    stage = config.reranker.thresholds if config.reranker.enabled else config.retriever.thresholds
    auto = isinstance(config.threshold, str)
    if auto and config.threshold != "auto":
        raise ConfigError(f"threshold: {config.threshold!r} is not a number, a list or auto")
    # An empty stage grid (dense and hybrid's default): the grid on the scale of the set's own scores, as
    # threshold=auto builds it; a fixed cosine grid ([0, 0.2, 0.3, 0.4]) filtered nothing where cosines are >= 0.64.
    auto = auto or (config.threshold is None and stage is not None and len(stage) == 0)
    thresholds = () if auto else config.threshold if config.threshold is not None else stage
    if thresholds is None:
        name = config.reranker.name
        raise ConfigError(f"reranker.thresholds: reranker {name!r} has no threshold grid; set threshold=")
    _check_prices(config)
    _check_target(config.retriever)
    _check_plugins(config)
    if config.retriever.index == "lancedb":
        try:
            check_installed()  # before any work: a missing extra is one line, not a traceback mid-sweep
        except StoreUnavailableError as exc:
            raise ConfigError(str(exc)) from None
    if config.compare and not (resolve_path(config.compare) / "summary.parquet").is_file():
        raise ConfigError(f"compare: {config.compare!r} is not a finished run folder (no summary.parquet)")
    if config.production_log and not resolve_path(config.production_log).is_file():
        raise ConfigError(f"production_log: {config.production_log!r} is not a file (a query log or trace export)")
    if (config.position is not None or config.answer_check.enabled) and config.generator is None:
        raise ConfigError("generator: not set; add generator=local or generator=anthropic")
    plan = SweepPlan(
        labelset_path=str(resolved),
        labelset_limit=config.labelset.limit,
        chunkings=chunkings,
        embedder=config.embedder.name,
        embedder_settings=config.embedder,
        retriever=config.retriever,
        reranker=config.reranker,
        pool_size=config.pool_size,
        top_ks=top_ks,
        thresholds=tuple(sorted(set(thresholds))),
        thresholds_auto=auto,
        relevance_tau=config.relevance_tau,
        seed=config.seed,
        filters=config.filters,
        cost=config.cost,
        pricing_dir=resolve_path(config.cost.pricing_dir),
        calibration_tag=config.calibration.class_tag,
        baseline=config.baseline,
        options=_options(config),
        objective=config.objective,
        stats=config.stats,
        position=config.position,
        answer_check=config.answer_check,
        generator=config.generator,
        judge=config.judge,
    )
    check_before_work(config, plan)
    return plan


def _chunkings(config: SweepConfig) -> tuple[ChunkingSpec, ...]:
    """The chunk_size x chunk_overlap grid; with retriever=external, production's own chunking alone."""
    if config.retriever.external:
        if not config.executor.in_process:
            raise ConfigError("executor.name: retriever=external runs on executor=local (it calls production)")
        return (ChunkingSpec(EXTERNAL_CHUNKING, 0, 0),)
    sizes, overlaps = _unique(config.chunk_size), _unique(config.chunk_overlap)
    bad = [(s, o) for s, o in itertools.product(sizes, overlaps) if o >= s]
    if bad:
        pairs = ", ".join(f"{s}/{o}" for s, o in bad)
        raise ConfigError(f"chunk_overlap: must be smaller than chunk_size; offending size/overlap pairs: {pairs}")
    chunkings = tuple(
        ChunkingSpec(config.chunker.name, size, overlap, config.chunker.child_size)
        for size, overlap in itertools.product(sizes, overlaps)
    )
    for spec in chunkings:
        validate_spec(spec)
    return chunkings


SAFE_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def _check_target(retriever: RetrieverSettings) -> None:
    """A Python retriever (``retriever.target`` or a plugin's) imports before any run folder is made."""
    if retriever.target is None:
        return
    try:
        load_target(retriever.target, where=where_of(retriever))
    except (ExternalCallError, UserCodeError) as exc:
        raise ConfigError(str(exc)) from None


def _check_plugins(config: SweepConfig) -> None:
    """Every installed plugin the config names imports (trackers too), before any run folder is made."""
    from evalkit.answers.generation import GENERATORS
    from evalkit.pipeline.executor_settings import EXECUTORS
    from evalkit.plugins import Registry
    from evalkit.retrieval.settings import RERANKER_BACKENDS
    from evalkit.tracking.settings import TRACKERS

    named: list[tuple[Mapping[str, object], str]] = [
        (CHUNKERS, config.chunker.name), (EMBEDDERS, config.embedder.name),
        (RERANKER_BACKENDS, config.reranker.name), (EXECUTORS, config.executor.name),
    ]  # fmt: skip
    if config.generator is not None:
        named.append((GENERATORS, config.generator.name))
    if config.tracker is not None:
        named.append((TRACKERS, config.tracker.name))
    for registry, name in named:
        if isinstance(registry, Registry) and registry.where(name) is not None:
            _ = registry[name]  # the import itself is the check (PluginError: one line naming it)


def _check_prices(config: SweepConfig) -> None:
    """The price files exist and price the target model: a cost stage must not fail after the sweep ran."""
    pricing_dir = resolve_path(config.cost.pricing_dir)
    if not pricing_dir.is_dir():
        raise ConfigError(f"cost.pricing_dir: {config.cost.pricing_dir!r} is not a folder of price files")
    try:
        price_table(pricing_dir).model(config.cost.model)
    except PricingError as exc:
        raise ConfigError(f"cost.model: {str(exc).splitlines()[0]}") from None
    if config.embedder.priced:  # a paid embedder is charged to the budget request by request
        try:
            price_table(pricing_dir).embedder(config.embedder.model)
        except PricingError as exc:
            raise ConfigError(f"embedder.model: {str(exc).splitlines()[0]}") from None


def _options(config: SweepConfig) -> RunOptions:
    run_id = config.run_id
    if run_id is not None and (not SAFE_RUN_ID.fullmatch(run_id) or ".." in run_id):
        # The run folder must stay inside reports_dir: no separators, no '..', no absolute names.
        raise ConfigError(f"run_id: {run_id!r} is not a safe folder name (letters, digits, '.', '_', '-')")
    # An output folder is the user's, from the working directory: never the checkout's own reports/
    # (resolve_path falls back to the project root, which is right only for inputs).
    reports_dir = Path(config.reports_dir).expanduser().absolute()
    cache_path = Path(config.cache_path).expanduser()
    if not cache_path.is_absolute():
        cache_path = reports_dir.parent / cache_path
    return RunOptions(
        run_id=config.run_id,
        reports_dir=reports_dir,
        cache_path=cache_path,
        dry_run=config.dry_run,
        budget_usd=config.budget_usd,
        results_csv=config.results_csv,
        report=config.report,
        compare=resolve_path(config.compare) if config.compare else None,
        progress=config.progress,
        executor=config.executor,
        production_log=resolve_path(config.production_log) if config.production_log else None,
    )


def _unique(values: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(dict.fromkeys(values))
