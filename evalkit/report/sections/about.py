"""About this run: the manifest's provenance (labelled set, models, grid, statistics, packages, font)."""

from __future__ import annotations

import json
from typing import Any

from evalkit.report import fmt
from evalkit.report.fonts import PACKAGE
from evalkit.report.html import Markup, join, section, tag
from evalkit.report.model import ReportModel


def about(model: ReportModel) -> Markup:
    manifest = model.run.manifest
    labelset = manifest.get("labelset") or {}
    config = manifest.get("config") or {}
    grid = manifest.get("grid") or {}
    statistics = model.statistics
    items: list[tuple[str, Any]] = [
        ("run id", model.run.run_id),
        ("folder", str(model.run.root)),
        (
            "labelled set",
            f"{labelset.get('name')} at {labelset.get('path')} ({labelset.get('documents')} documents, "
            f"{labelset.get('questions')} questions)",
        ),
        ("labelled set fingerprint", labelset.get("fingerprint")),
        ("retriever", json.dumps(config.get("retriever"), ensure_ascii=False, sort_keys=True)),
        ("embedder", json.dumps(manifest.get("embedder"), ensure_ascii=False, sort_keys=True)),
        (
            "grid",
            f"{len(grid.get('chunkings', []))} chunkings × top_k {grid.get('top_k')} × threshold "
            f"{grid.get('threshold')} = {grid.get('points')} points",
        ),
        ("pool size / relevance tau", f"{config.get('pool_size')} / {config.get('relevance_tau')}"),
        (
            "statistics",
            f"{statistics.level:.0%} percentile bootstrap, {statistics.n_resamples} resamples, seed "
            f"{statistics.seed}; paired, {fmt.resampled(statistics.cluster_by)} (stats.cluster_by; clusters.parquet)",
        ),
        ("packages", json.dumps(manifest.get("packages"), sort_keys=True)),
        ("font for Chinese", model.font.family or f"none: the package {PACKAGE} is not installed"),
    ]
    dl = join(join([tag("dt", k), tag("dd", v)]) for k, v in items)
    return section("run", "About this run", [Markup(f'<dl class="kv">{dl}</dl>')])
