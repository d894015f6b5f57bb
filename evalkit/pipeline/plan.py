"""The sweep plan: a validated, frozen reading of the configuration.

Hydra gives a nested, mutable config; everything after this module sees a
``SweepPlan`` only. Validation happens here, before any work, so a typo in an
override costs a second, not a half-finished sweep.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from evalkit.records import ChunkingSpec

RETRIEVERS = ("dense", "bm25", "hybrid")
FUSIONS = ("rrf", "max")
PROJECT_ROOT = Path(__file__).resolve().parents[2]
TRANSPORT_KEYS = frozenset({"base_url", "max_retries", "timeout_s", "retry_base_delay_s", "api_key_env"})
"""Backend settings that change how a call is made, never its result: kept out of the run id."""


class ConfigError(ValueError):
    """A configuration that cannot run; the message says which key and why."""


@dataclass(frozen=True)
class RetrieverSpec:
    """How the candidate pool is retrieved."""

    name: str
    """dense, bm25 or hybrid."""
    fusion: str = "rrf"
    """Hybrid fusion: rrf or max (never a sum of raw scores)."""
    rrf_k: int = 60
    bm25_k1: float = 1.5
    bm25_b: float = 0.75


@dataclass(frozen=True)
class RerankerSpec:
    """The rerank stage: ``none``, or a backend name and its parameters."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)
    """Everything else in the reranker config (model, batching, base_url, ...)."""


@dataclass(frozen=True)
class SweepPlan:
    """Everything that determines a sweep's results, and nothing that does not."""

    labelset_path: str
    labelset_limit: int | None
    chunkings: tuple[ChunkingSpec, ...]
    """Outermost loop: one candidate pool per chunking."""
    embedder: str
    retriever: RetrieverSpec
    reranker: RerankerSpec
    pool_size: int
    top_ks: tuple[int, ...]
    thresholds: tuple[float, ...]
    relevance_tau: float
    seed: int
    filters: Mapping[str, Any] = field(default_factory=dict)
    """Metadata filters before retrieval: see :class:`evalkit.retrieval.filters.FilterSettings`."""
    cost: Mapping[str, Any] = field(default_factory=dict)
    """The cost settings (target model, queries per day, ...): see :class:`evalkit.cost.apply.CostSettings`."""
    calibration_tag: str = "lang"
    """Question tag whose values are the classes thresholds are calibrated for."""
    baseline: Mapping[str, Any] = field(default_factory=dict)
    """The production config's grid point (chunk_size, chunk_overlap, top_k, threshold)."""

    def fingerprint(self, labelset_fingerprint: str) -> str:
        """Hash of the plan: the same plan always gets the same run id, so it resumes.

        The labelled set enters by content, not by path, so a fresh clone in
        another folder computes the same id.
        """
        plan = asdict(self) | {"labelset_path": labelset_fingerprint}
        plan["reranker"]["params"] = {k: v for k, v in self.reranker.params.items() if k not in TRANSPORT_KEYS}
        payload = json.dumps(plan, sort_keys=True, default=str)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:10]


def _as_list(value: Any, key: str) -> list[Any]:
    if value is None:
        raise ConfigError(f"{key}: no value (set it, e.g. {key}=512, or choose a sweep preset)")
    if isinstance(value, str | int | float):
        return [value]
    try:
        return list(value)
    except TypeError as exc:
        raise ConfigError(f"{key}: expected a number or a list, got {value!r}") from exc


def config_int(value: Any, key: str, minimum: int) -> int:
    """One whole number from a config value (an int, or a string of one), at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ConfigError(f"{key}: {value!r} is not a whole number")
    try:
        number = int(value)
    except ValueError as exc:
        raise ConfigError(f"{key}: {value!r} is not a whole number") from exc
    if number < minimum:
        raise ConfigError(f"{key}: {number} is below the minimum {minimum}")
    return number


def _ints(value: Any, key: str, minimum: int) -> tuple[int, ...]:
    out = [config_int(item, key, minimum) for item in _as_list(value, key)]
    if not out:
        raise ConfigError(f"{key}: empty list")
    return tuple(dict.fromkeys(out))


def _floats(value: Any, key: str) -> tuple[float, ...]:
    out = []
    for item in _as_list(value, key):
        try:
            out.append(float(item))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{key}: {item!r} is not a number") from exc
    if not out:
        raise ConfigError(f"{key}: empty list")
    return tuple(sorted(dict.fromkeys(out)))


def resolve_path(path: str) -> Path:
    """A path as the user typed it (from the working directory), else from the project root."""
    candidate = Path(path).expanduser()
    if candidate.is_absolute() or candidate.exists():
        return candidate
    bundled = PROJECT_ROOT / path
    return bundled if bundled.exists() else candidate


def build_plan(
    cfg: Mapping[str, Any],
    known_chunkers: Sequence[str],
    known_embedders: Sequence[str],
    known_rerankers: Sequence[str] = (),
) -> SweepPlan:
    """Validate a plain-dict config and expand its grid; raise ConfigError on the first bad key."""
    labelset = cfg.get("labelset") or {}
    path = labelset.get("path")
    if not path:
        raise ConfigError("labelset.path: not set (e.g. labelset.path=../shared/labelsets/squad2-en)")
    resolved = resolve_path(str(path))
    if not resolved.is_dir():
        raise ConfigError(f"labelset.path: {path!r} is not a folder")
    limit = labelset.get("limit")
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise ConfigError(f"labelset.limit: {limit!r} must be a positive whole number or null")

    chunker = cfg.get("chunker") or {}
    chunker_name = chunker.get("name")
    if chunker_name not in known_chunkers:
        raise ConfigError(f"chunker.name: unknown chunker {chunker_name!r}; known: {', '.join(known_chunkers)}")
    sizes = _ints(cfg.get("chunk_size"), "chunk_size", 1)
    overlaps = _ints(cfg.get("chunk_overlap"), "chunk_overlap", 0)
    bad = [(s, o) for s, o in itertools.product(sizes, overlaps) if o >= s]
    if bad:
        pairs = ", ".join(f"{s}/{o}" for s, o in bad)
        raise ConfigError(f"chunk_overlap: must be smaller than chunk_size; offending size/overlap pairs: {pairs}")
    child_size = int(chunker.get("child_size") or 0)
    grid = itertools.product(sizes, overlaps)
    chunkings = tuple(ChunkingSpec(str(chunker_name), size, overlap, child_size) for size, overlap in grid)

    embedder = (cfg.get("embedder") or {}).get("name")
    if embedder not in known_embedders:
        raise ConfigError(f"embedder.name: unknown embedder {embedder!r}; known: {', '.join(known_embedders)}")
    retriever_cfg = cfg.get("retriever") or {}
    retriever = RetrieverSpec(
        name=str(retriever_cfg.get("name")),
        fusion=str(retriever_cfg.get("fusion", "rrf")),
        rrf_k=int(retriever_cfg.get("rrf_k", 60)),
        bm25_k1=float(retriever_cfg.get("bm25_k1", 1.5)),
        bm25_b=float(retriever_cfg.get("bm25_b", 0.75)),
    )
    if retriever.name not in RETRIEVERS:
        raise ConfigError(f"retriever.name: unknown retriever {retriever.name!r}; known: {', '.join(RETRIEVERS)}")
    if retriever.fusion not in FUSIONS:
        raise ConfigError(f"retriever.fusion: {retriever.fusion!r} is not one of {', '.join(FUSIONS)}")

    reranker_cfg = dict(cfg.get("reranker") or {"name": "none"})
    reranker_name = str(reranker_cfg.pop("name", "none"))
    reranker_thresholds = reranker_cfg.pop("thresholds", None)
    if reranker_name != "none" and reranker_name not in known_rerankers:
        known = ", ".join(["none", *known_rerankers])
        raise ConfigError(f"reranker.name: unknown reranker {reranker_name!r}; known: {known}")
    reranker = RerankerSpec(reranker_name, reranker_cfg)

    top_ks = _ints(cfg.get("top_k"), "top_k", 1)
    pool_size = int(cfg.get("pool_size") or 50)
    if pool_size < max(top_ks):
        raise ConfigError(f"pool_size: {pool_size} is smaller than the largest top_k {max(top_ks)}")
    if not 1 <= pool_size <= 1000:
        raise ConfigError(f"pool_size: {pool_size} must be between 1 and 1000")
    # Thresholds apply to the last stage's score: the reranker's when there is one.
    stage_thresholds = reranker_thresholds if reranker.name != "none" else retriever_cfg.get("thresholds")
    threshold = cfg.get("threshold")
    thresholds = _floats(threshold if threshold is not None else stage_thresholds, "threshold")
    tau = float(cfg.get("relevance_tau", 1.0))
    if not 0.0 < tau <= 1.0:
        raise ConfigError(f"relevance_tau: {tau} must be in (0, 1]")
    return SweepPlan(
        labelset_path=str(resolved),
        labelset_limit=limit,
        chunkings=chunkings,
        embedder=str(embedder),
        retriever=retriever,
        reranker=reranker,
        pool_size=pool_size,
        top_ks=tuple(sorted(top_ks)),
        thresholds=thresholds,
        relevance_tau=tau,
        seed=int(cfg.get("seed", 0)),
        calibration_tag=str((cfg.get("calibration") or {}).get("class_tag", "lang")),
        cost=dict(cfg.get("cost") or {}),
        filters=dict(cfg.get("filters") or {}),
        baseline=dict(cfg.get("baseline") or {}),
    )
