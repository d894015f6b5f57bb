"""``threshold=auto``: the threshold grid from the first chunking's best-score quantiles.

Raw scores differ in scale per corpus and per retriever (a BM25 score of 10 is high on one set
and ordinary on another), so a fixed grid either filters nothing or everything. The first
chunking's pool is retrieved (and stored: the sweep reuses it), and the grid is built from its
answerable questions' best scores by :func:`evalkit.scoring.thresholds.auto_thresholds`.
"""

from __future__ import annotations

import sys
from dataclasses import replace

import numpy as np

from evalkit.pipeline.plan import SweepPlan
from evalkit.pipeline.units import units_of
from evalkit.pipeline.work import WorkContext, chunk_stage, plan_units, pool_stage
from evalkit.scoring.slicing import best_score


def resolve_auto_thresholds(plan: SweepPlan, ctx: WorkContext, embedder_identity: str) -> SweepPlan:
    if not plan.thresholds_auto:
        return plan
    from evalkit.scoring.thresholds import auto_thresholds

    unit = plan_units(plan, ctx.labelset, ctx.questions, embedder_identity, ctx.token_family)[0]
    chunks = chunk_stage(unit, ctx)
    units, child_to_parent = units_of(chunks, ctx.labelset)
    pool = pool_stage(unit, ctx, chunks, units, child_to_parent)
    answerable = np.array([q.evidence_mode != "none" for q in ctx.questions])
    grid = auto_thresholds(best_score(pool.scores)[answerable])
    print(f"evalkit: threshold=auto: {', '.join(f'{t:g}' for t in grid)} (from {unit.spec.key})", file=sys.stderr)
    return replace(plan, thresholds=tuple(grid), thresholds_auto=False)
