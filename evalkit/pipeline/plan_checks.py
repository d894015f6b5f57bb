"""Settings only a whole plan can check, checked before the first chunk: one line, exit 2, nothing computed.

A setting read only after the retrieval sweep (the margins file the decision reads, the generator the answer
check calls, the config ids it is asked to answer) would otherwise cost a whole sweep before saying it is
wrong. Each check reads the setting with the same code that uses it later, so the two cannot disagree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit.answers.generation.settings import endpoint_problem
from evalkit.settings import ConfigError

if TYPE_CHECKING:
    from evalkit.pipeline.config import SweepConfig
    from evalkit.pipeline.plan import SweepPlan


def check_before_work(config: SweepConfig, plan: SweepPlan) -> None:
    """Raise :class:`ConfigError` (one line) for a margins file, generator or answer-check id that cannot work."""
    _check_margins(plan.objective.margins)
    answering = plan.position is not None or plan.answer_check.enabled
    if answering and plan.generator is not None:
        problem = endpoint_problem(plan.generator, need_key=not config.dry_run)  # a dry run sends nothing
        if problem is not None:
            raise ConfigError(problem)
    if plan.answer_check.enabled and plan.answer_check.configs:
        _check_answer_configs(plan)


def _check_margins(name_or_path: str) -> None:
    from evalkit.pipeline.margins import load_gate_config

    try:
        load_gate_config(name_or_path)
    except (ValueError, OSError) as exc:  # GateError is a ValueError; a folder or unreadable file an OSError
        line = " ".join(str(exc).split())
        raise ConfigError(f"objective.margins: {line}") from None


def _check_answer_configs(plan: SweepPlan) -> None:
    """Every id in ``answer_check.configs`` is a grid point this plan sweeps (any threshold when it is ``auto``)."""
    from evalkit.pipeline.score import config_id  # the one spelling of a grid point's id

    ks = plan.top_ks
    grid = {
        config_id(spec.key, plan.retriever.name, plan.reranker.name, k, t)
        for spec in plan.chunkings
        for k in ks
        for t in plan.thresholds
    }
    prefixes = {config_id(spec.key, plan.retriever.name, plan.reranker.name, k, 0.0).rsplit("|", 1)[0]
                for spec in plan.chunkings for k in ks}  # fmt: skip
    for asked in plan.answer_check.configs:
        known = asked in grid or (plan.thresholds_auto and asked.rsplit("|", 1)[0] in prefixes)
        if not known:
            example = min(grid) if grid else next(iter(prefixes), "")
            raise ConfigError(
                f"answer_check.configs: {asked!r} is not a config this sweep runs "
                f"({len(grid) or len(prefixes)} grid points, e.g. {example!r})"
            )
