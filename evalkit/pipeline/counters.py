"""What a run counts about itself: calls made, stages run, seconds per stage (``run_stats.json``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from evalkit.cost.budget import SpendGuard
from evalkit.retrieval.embedding.base import EmbedCounter
from evalkit.retrieval.rerank.base import RerankCounter

STAGES = ("chunk", "index", "retrieve", "rerank", "score")
"""The stages of one chunking's unit of work, in order."""


@dataclass
class RunStats:
    """Counters of one invocation (embedding calls, rerank pairs, stages run, timings)."""

    embed: EmbedCounter = field(default_factory=EmbedCounter)
    rerank: RerankCounter = field(default_factory=RerankCounter)
    spend: SpendGuard = field(default_factory=SpendGuard)
    """Dollars spent on paid calls in this invocation, against ``budget_usd``."""
    seconds: dict[str, float] = field(default_factory=dict)
    stages_run: Counter[str] = field(default_factory=Counter)
    """Stages computed in this invocation (a stage found finished in the unit store is not counted)."""
    stages_reused: Counter[str] = field(default_factory=Counter)

    def add_time(self, stage: str, seconds: float) -> None:
        self.seconds[stage] = self.seconds.get(stage, 0.0) + seconds

    def to_dict(self) -> dict[str, Any]:
        return {
            "seconds": self.seconds,
            "texts_embedded": self.embed.texts_sent,
            "texts_embedded_total": self.embed.total_texts,
            "embed_tokens_billed": self.embed.tokens_billed,
            "rerank_pairs_scored": self.rerank.pairs_scored,
            "rerank_requests": self.rerank.requests,
            "rerank_search_units": self.rerank.search_units,
            "spent_usd": self.spend.spent_usd,
            "spent_this_invocation_usd": self.spend.spent_this_invocation_usd,
            "budget_usd": self.spend.limit_usd,
            "stages_run": {stage: self.stages_run.get(stage, 0) for stage in STAGES},
            "stages_reused": {stage: self.stages_reused.get(stage, 0) for stage in STAGES},
        }
