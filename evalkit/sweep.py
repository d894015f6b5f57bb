"""``python -m evalkit.sweep``: the Hydra entry point of a sweep.

This module only reads the config, validates it into a plan, opens the cache
and hands over to :mod:`evalkit.pipeline.sweep`. Errors a user can fix (bad config,
broken labelled set) print one line each and exit with code 2, no traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf

from evalkit.answering.generation import GenerationError
from evalkit.cache import Cache
from evalkit.chunking.chunkers import CHUNKERS, ChunkingError, validate_spec
from evalkit.cost.budget import BudgetExceeded, SpendGuard
from evalkit.labels.read import LabelsetError, load_labelset
from evalkit.pipeline.dryrun import describe_plan
from evalkit.pipeline.plan import ConfigError, build_plan, resolve_path
from evalkit.pipeline.sweep import RunStats, run_sweep
from evalkit.retrieval.embedding.base import EmbeddingError
from evalkit.retrieval.embedding.local import EMBEDDERS
from evalkit.retrieval.rerank.base import RerankError
from evalkit.retrieval.rerank.factory import RERANKER_NAMES, make_reranker

CONF_DIR = str(Path(__file__).resolve().parents[1] / "conf")


def fail(lines: list[str]) -> None:
    for line in lines:
        print(f"evalkit: error: {line}", file=sys.stderr)
    sys.exit(2)


def sweep(cfg: DictConfig) -> Path:
    """Validate, then run or resume the sweep; returns the run folder."""
    try:
        plain: dict[str, Any] = OmegaConf.to_container(cfg, resolve=True)  # type: ignore[assignment]
    except Exception as exc:  # omegaconf raises many types for a bad interpolation
        fail([f"config: {exc}".splitlines()[0]])
    try:
        plan = build_plan(plain, tuple(CHUNKERS), tuple(EMBEDDERS), RERANKER_NAMES)
        for spec in plan.chunkings:
            validate_spec(spec)
        if plain.get("position") is not None:  # +experiment=position: a typo fails before any work
            from evalkit.answering.position.settings import PositionSettings

            PositionSettings.from_config(plain["position"], seed=plan.seed)
        labelset = load_labelset(plan.labelset_path)
    except (ConfigError, ChunkingError) as exc:
        fail([str(exc)])
    except LabelsetError as exc:
        fail(exc.problems)
    for warning in labelset.warnings:
        print(f"evalkit: warning: {warning}", file=sys.stderr)
    run_id = plain.get("run_id") or f"{labelset.name}-{plan.fingerprint(labelset.fingerprint)}"
    run_dir = resolve_path(str(plain["reports_dir"])) / str(run_id)
    cache_path = Path(str(plain["cache_path"]))
    if not cache_path.is_absolute():
        cache_path = resolve_path(str(plain["reports_dir"])).parent / cache_path
    embedder = EMBEDDERS[plan.embedder]()
    points = len(plan.chunkings) * len(plan.top_ks) * len(plan.thresholds)
    print(
        f"evalkit: run {run_id}: {len(labelset.questions)} questions, {len(labelset.documents)} documents, "
        f"{len(plan.chunkings)} chunkings x {len(plan.top_ks)} top_k x {len(plan.thresholds)} thresholds "
        f"= {points} grid points -> {run_dir}",
        file=sys.stderr,
    )
    try:
        with Cache(cache_path) as cache:
            reranker = make_reranker(
                plan.reranker, cache, str((plain.get("cost") or {}).get("pricing_dir", "conf/pricing"))
            )
            if plain.get("dry_run"):
                print(describe_plan(plan, labelset, embedder, reranker, cache))
                if plain.get("position") is not None:
                    plan_position_dry_run(plan, plain, labelset, embedder, reranker, cache, run_dir)
                return run_dir
            budget = plain.get("budget_usd")
            stats = RunStats(spend=SpendGuard(float(budget) if budget is not None else None))
            summary = run_sweep(
                plan,
                labelset,
                embedder,
                cache,
                run_dir,
                plain,
                progress=bool(plain.get("progress")),
                stats=stats,
                reranker=reranker,
            )
            if plain.get("position") is not None:
                from evalkit.pipeline.position import position_experiment

                position_dir = position_experiment(
                    run_dir, labelset, plain, cache, progress=bool(plain.get("progress")), spend=stats.spend
                )
                print(f"evalkit: position experiment -> {position_dir}", file=sys.stderr)
    except BudgetExceeded as exc:
        print(f"evalkit: stopped: {exc}", file=sys.stderr)
        sys.exit(3)
    except ConfigError as exc:  # e.g. position.chunking names a chunking the sweep did not run
        fail([str(exc)])
    except (EmbeddingError, RerankError, GenerationError) as exc:
        # What finished is on disk and every paid-for score is cached: the same command resumes.
        fail([f"{exc} (finished chunkings are kept; run the same command again to resume)"])
    print(f"evalkit: wrote {len(summary)} configs to {run_dir}/summary.csv", file=sys.stderr)
    if plain.get("report", True):
        from evalkit.report import write_report

        compare = plain.get("compare")
        html = write_report(run_dir, compare=resolve_path(str(compare)) if compare else None)
        print(f"evalkit: report {html}", file=sys.stderr)
    return run_dir


def plan_position_dry_run(
    plan: Any, plain: dict[str, Any], labelset: Any, embedder: Any, reranker: Any, cache: Cache, run_dir: Path
) -> None:
    """Print the position experiment's plan (answers, prompt tokens, dollars) without generating anything.

    The plan needs each question's ranked chunks, so the retrieval sweep runs first when it is free
    (local models only); a paid reranker would be a spend, so then only the retrieval plan is printed.
    Without an API key no request is sent at all (token counts are estimates); with a key and
    ``position.count_with_model`` on, only count_tokens requests are (they are free).
    """
    import os

    from evalkit.answering.generation import make_generator
    from evalkit.answering.generation.anthropic import API_KEY_ENV
    from evalkit.pipeline.position import position_experiment

    if reranker is not None and reranker.request_cost_usd(plan.pool_size) > 0:
        print("evalkit dry run: the position plan needs the reranked pools; run without dry_run to build them")
        return
    run_sweep(plan, labelset, embedder, cache, run_dir, plain, progress=bool(plain.get("progress")))
    generator_cfg = dict(plain.get("generator") or {})
    position_cfg = dict(plain["position"]) | {"dry_run": True}
    overrides: dict[str, Any] = {}
    if generator_cfg.get("name") == "anthropic" and not os.environ.get(API_KEY_ENV):
        # No key: the client is built for its model and window only and is never called.
        overrides["api_key"] = "dry-run-without-a-key"
        position_cfg["count_with_model"] = False
    generator = make_generator(generator_cfg, **overrides)
    position_experiment(run_dir, labelset, plain | {"position": position_cfg}, cache, generator=generator)


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
def main(cfg: DictConfig) -> None:
    sweep(cfg)


if __name__ == "__main__":
    main()
