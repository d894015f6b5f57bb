"""Names of the files a run folder holds, and of the optional ones later stages add.

One place for every name the report and the gate read, so a stage that starts
writing a new file (rerank calibration, the position experiment, cost columns)
only has to agree with this module. Each optional source carries the command
that produces it, shown in the report when the data is absent.
"""

from __future__ import annotations

from dataclasses import dataclass

# Re-exported (the report reads every run-folder name from here); defined once, in evalkit.records.
from evalkit.records import COST_COLUMNS as COST_COLUMNS
from evalkit.records import COST_PER_DAY as COST_PER_DAY
from evalkit.records import COST_PER_QUERY as COST_PER_QUERY

# Written by every sweep (evalkit/results.py).
MANIFEST = "manifest.json"
RUNNING, COMPLETE = "running", "complete"
"""The manifest's ``state``: written ``running`` before the first result, ``complete`` after the last one, so a
folder a full disk or a kill left half-written is refused by every reader (runs before the field: complete)."""
RESULTS = "results.parquet"
SUMMARY = "summary.parquet"
DEFAULT_RESULTS_BLOCK_ROWS = 1 << 18
"""Rows held at once when results are written and aggregated (about 100 MB of result rows); here, not in
run/blocks.py, so that the executor's settings read it without loading pandas and pyarrow."""
SUMMARY_CSV = "summary.csv"
POOLS_DIR = "pools"
CHUNKINGS_DIR = "chunkings"
ROWS_DIR = "rows"

# Written by the report and the gate.
REPORT_HTML = "index.html"
GATE_JSON = "gate.json"
GATE_MD = "gate.md"
RECOMMENDATION_JSON = "recommendation.json"
"""The sweep's decision (evalkit/pipeline): the pick or "keep production", the objective, each constraint for the
pick and for production, in- and out-of-sample gains, near-misses and the gate verdict; absent from older runs."""
CLUSTERS = "clusters.parquet"
"""question_id, cluster, cluster_by: the questions that resample together (evalkit/scoring/clusters.py; by source
document unless ``stats.cluster_by`` says otherwise). The decision and ``python -m evalkit.gate`` read the same
file; absent from older runs (then questions are resampled)."""

REVIEW_JSON = "review.json"
"""Every interval, paired comparison, MDE and piece of advice the report shows (evalkit/run/review.py ``Review``):
computed once from the run folder by evalkit/review (the sweep, or ``python -m evalkit.report`` for a folder
without it), rendered by the report; the resampling it used is in its ``statistics``."""
COMPARE_DIR = "compare"
"""``compare/<earlier run folder>.json``: this run against an earlier one (evalkit/run/comparison.py ``RunDelta``),
written by ``python -m evalkit.report RUN --compare EARLIER`` (or the sweep's ``compare=``)."""

# Optional: written by later stages, or absent from runs made before them. Expected shapes:
CALIBRATION_TABLE = "calibration.parquet"
"""Threshold calibration and advice per chunking and question class (evalkit/scoring/calibration.py ``Calibration``):
chunking, stage, question_class (``all`` first), n_answerable, n_unanswerable, zero_hit_target, advice
(``threshold`` or ``no threshold``), advice_reason, advised_threshold (NaN with no advice),
zero_hit_answerable_at_advised, abstention_at_advised, auc_answerable_vs_unanswerable,
auc_relevant_vs_irrelevant, recommended_threshold (what to set: the advised value, else no filtering), the
zero-hit it implies on answerable and unanswerable questions, and the older overlap interval
(overlap_low, overlap_high, overlap_threshold) kept for continuity."""
PRODUCTION_LOG_DIR = "production_log"
PRODUCTION_LOG_ROWS = f"{PRODUCTION_LOG_DIR}/rows.parquet"
"""``production_log=``: production's logged top-k scored per labelled question found in the log, with the result
rows' columns (config_id ``production-log``, threshold the lowest finite number: what production returned is
taken as it is)."""
PRODUCTION_LOG_JSON = f"{PRODUCTION_LOG_DIR}/log.json"
"""What the log held: its path and format, entries, labelled questions found, hits placed and not placed."""
LOGGED_CONFIG = "production-log"
"""The config_id of production's logged retrievals in the rows above."""

POSITION_DIR = "position"
POSITION_ROWS = f"{POSITION_DIR}/rows.parquet"
"""Position experiment answers: question_id, arm, placement, repeat, gold_bucket (head/mid/tail/none),
correct (nullable bool; NA = not scored), ... (evalkit/position.py ``ROW_COLUMNS``)."""
POSITION_SUMMARY = f"{POSITION_DIR}/summary.parquet"
"""One row per (arm, placement, gold_bucket incl. ``all``): accuracy, accuracy_low, accuracy_high,
n_questions, flip_rate (on ``all`` rows)."""
ANSWER_CHECK_DIR = "answer_check"
ANSWER_CHECK_ROWS = f"{ANSWER_CHECK_DIR}/rows.parquet"
"""The answer check: one row per (config or arm, question): config_id (``stuff`` for the whole-document arm),
arm, question_id, answerable, doc_id, the context (n_returned, n_dropped, unit_ids, planned_tokens), the answer,
its tokens, first_token_s and cost, and its scores (correct, exact, contains, f1, refused; nullable: not scored)
(evalkit/answers/check/run.py ``ROW_COLUMNS``)."""
ANSWER_CHECK_JSON = f"{ANSWER_CHECK_DIR}/check.json"
"""What the check found: the configs and their roles, the sample and how it was sized, per candidate the paired
answer differences against production, the latency model and each config's first-token p50/p95, and the
stuff-or-retrieve table and routing rule (evalkit/scoring/answer_check.py)."""
ANSWER_CHECK_DESIGN = f"{ANSWER_CHECK_DIR}/design.parquet"
"""A stratified powered check's design: per (config, question of the set) the retrieval features and context key
the estimate stratifies and predicts with, and per question its seeded draw, inclusion probability and
document (evalkit/answers/check/stratified.py ``DESIGN_COLUMNS``): the gate recomputes the same intervals."""
RETRIEVAL_LATENCY_JSON = "retrieval_latency.json"
"""The retrieval stage's per-query seconds (query embedding, search, rerank), one query at a time on a sample."""
CHUNK_HEALTH_JSON = "chunk_health.json"
"""Chunk-health findings (evalkit/health.py ``ChunkHealth.findings``): ``{"findings": [{"chunking", "rule",
"count", "share", "message", "examples": [{"chunk_id", "doc_id", "start", "end", "detail"}]}]}``."""
COSTS_JSON = "costs.json"
"""Stuffing the corpus vs retrieving, per query and per day (evalkit/costing.py ``stuffing_decision``)."""


@dataclass(frozen=True)
class OptionalSource:
    """An optional part of a run folder and how a user produces it."""

    key: str
    """Short name used in the report's section ids."""
    title: str
    """Human title of the report section."""
    where: str
    """The file or column the report looks for."""
    how_to_get: str
    """The command that produces it."""


RERANK = OptionalSource(
    "calibration",
    "Threshold calibration",
    CALIBRATION_TABLE,
    "python -m evalkit.sweep reranker=local",
)
POSITION = OptionalSource(
    "position",
    "Accuracy by gold position",
    f"{POSITION_SUMMARY} / {POSITION_ROWS}",
    "python -m evalkit.sweep +experiment=position",
)
COST = OptionalSource(
    "cost",
    "Cost against quality",
    f"column {COST_PER_QUERY} in {SUMMARY}",
    "python -m evalkit.sweep   (the cost: block of conf/config.yaml prices every config)",
)
CHUNK_HEALTH = OptionalSource(
    "chunk-health",
    "Chunk health",
    CHUNK_HEALTH_JSON,
    "python -m evalkit.sweep   (a sweep that writes chunk_health.json)",
)
RECALL_AT_BUDGET = "recall_at_budget.parquet"
"""Each chunking at equal prompt-token budget (evalkit/scoring/at_budget.py): chunking, retriever, reranker,
threshold, recall_at_budget, mean_k_at_budget, share_nothing_fits, budget_tokens (CSV beside it)."""
SPEND_JSON = "spend.json"
"""Dollars this run has spent on paid calls across invocations (``budget_usd`` caps the total):
spent_usd, by_item, limit_usd; written before each paid request is sent."""
POSITION_SUMMARY_BLOCKS = f"{POSITION_DIR}/summary_blocks.parquet"
"""Accuracy by where the gold block sits in the list of blocks (first / middle / last third; ``only`` for one block)."""
POSITION_EFFECTS = f"{POSITION_DIR}/effects.json"
"""Paired position effects (head vs mid, tail vs mid: McNemar and paired bootstrap), their detectable effect,
flip rates, and per arm accuracy, tokens, does-not-fit counts, refusals and citation correctness."""
POSITION_STATUS = f"{POSITION_DIR}/status.json"
"""Whether the position experiment ran and, when not, why and the command that runs it."""
BATCHES_JSON = "batches.json"
"""In the position folder: every Message Batch submitted for the run (id, custom ids, request keys, state),
so a killed run resumes polling the same batches instead of resubmitting them."""
