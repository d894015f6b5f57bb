"""The results stage: every chunking's rows into results.parquet, the summary and the decision's inputs, in blocks.

The rows of a sweep are questions x grid points (4.7 million at squad2-en grown 8x); built as one
table they peaked at 6 GB. Here they are read back from each chunking's rows file in blocks of whole
configs (``executor.results_block_rows``, :func:`evalkit.run.blocks.config_blocks`), and each block is
priced, appended to results.parquet, summarised and reduced to the few numeric columns the decision
reads (:class:`~evalkit.scoring.per_config.PerConfig`). Every per-config number is computed from
that config's own rows, all in one block, with the same functions as on the whole table, so the
files are the same as when the table was built whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from evalkit.cost.apply import config_costs, price_configs, question_costs, rerank_cost_per_query
from evalkit.cost.prices import price_table
from evalkit.pipeline.margins import load_gate_config
from evalkit.pipeline.plan import SweepPlan
from evalkit.records import COST_PER_QUERY
from evalkit.run import files
from evalkit.run.blocks import FrameSink, config_blocks
from evalkit.run.folder import RunFolder
from evalkit.scoring.aggregate import summarise, with_twins
from evalkit.scoring.moves import EVIDENCE
from evalkit.scoring.per_config import PerConfig, PerConfigBuilder
from evalkit.scoring.registry import MEASURES

BUDGET_MEASURE = "recall"
"""The measure recall_at_budget.parquet compares chunkings on (:func:`evalkit.scoring.at_budget.recall_at_budget`)."""


def decision_columns(plan: SweepPlan) -> tuple[str, ...]:
    """Result columns the decision reads: its objective's measures, the gate's margins, the evidence, tokens."""
    gate = load_gate_config(plan.objective.margins)
    names = (plan.objective.primary, "zero_hit_answerable", "zero_hit_unanswerable", *EVIDENCE)
    names += tuple(m.metric for m in gate.margins)
    measured = tuple(MEASURES[n].column for n in names)
    return tuple(dict.fromkeys((*measured, BUDGET_MEASURE, "returned_tokens", "question_tokens")))


@dataclass
class Totals:
    """Sums over every row that need no whole table: the mean tokens of a returned chunk."""

    returned_tokens: int = 0
    n_returned: int = 0
    summaries: list[pd.DataFrame] = field(default_factory=list)
    costs: list[pd.Series] = field(default_factory=list)

    @property
    def chunk_tokens(self) -> float:
        return float(self.returned_tokens / max(self.n_returned, 1))


def write_results(
    plan: SweepPlan, keys: Sequence[str], infos: pd.DataFrame, run_dir: Path
) -> tuple[PerConfig, pd.DataFrame, float]:
    """results.parquet (and .csv when asked) and summary.parquet|csv; returns the decision's per-config values,
    the summary and the mean tokens of a returned chunk."""
    settings, prices = plan.cost, price_table(plan.pricing_dir)
    rerank_model = plan.reranker.priced_model
    rerank_cost = rerank_cost_per_query(prices, rerank_model, plan.pool_size)
    paid_embedder = plan.embedder_config.priced and plan.uses_embedder  # each question's embedding is billed
    query_embed = prices.embedder(plan.embedder_config.model) if paid_embedder else None
    if plan.embedder_config.priced_if_listed and plan.uses_embedder:
        # An OpenAI-compatible endpoint is billed when conf/pricing has its model; a self-hosted one is not.
        query_embed = prices.embedders.get(plan.embedder_config.model)
    folder = RunFolder(run_dir)
    paths = [folder.rows_path(key) for key in keys]
    values, totals = PerConfigBuilder(decision_columns(plan)), Totals()
    # Per-question rows are for tools (parquet); a CSV of them is opt-in: at 6,000 questions x 100
    # configs it is 600k lines no person reads, and writing it costs more than a warm re-run's scoring.
    with FrameSink(run_dir / files.RESULTS, csv=plan.options.results_csv) as results:
        for block in config_blocks(paths, plan.options.executor.results_block_rows):
            block[COST_PER_QUERY] = question_costs(block, settings, prices, rerank_cost, query_embed)
            results.write(block)
            # The same group means as over the whole table: pandas takes a sorted-groups fast path unless a
            # column holds NaN, and a metric is NaN on unanswerable questions only, which every config shares.
            totals.summaries.append(summarise(block, infos))
            totals.costs.append(config_costs(block))
            totals.returned_tokens += int(block["returned_tokens"].sum())
            totals.n_returned += int(block["n_returned"].sum())
            values.add(block)
    summary = price_configs(pd.concat(totals.summaries, ignore_index=True), pd.concat(totals.costs), settings)
    summary = with_twins(summary)  # twins across chunkings too: one config, however many grid points
    return values.build(), summary, totals.chunk_tokens
