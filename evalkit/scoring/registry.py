"""One name table: every result column the sweep writes, and every measure the report and the gate compare.

A :class:`Column` is what a column *means*: its display label, whether higher
is better, its unit and a one-line definition; an IR column also names its two
metric forms in :mod:`evalkit.scoring.ir` (``Column.forms``). A :class:`Measure`
is a comparable quantity with one value per question: a column restricted to
the questions it is defined on (zero-hit is a miss on answerable questions and
a correct abstention on unanswerable ones, so it yields two measures).

Result columns, aggregation (:mod:`evalkit.scoring.aggregate`), the report
(``evalkit/report``) and the gate (``evalkit/gate.py``) read names, labels and
directions from here; none keeps its own literals. Pure data: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from evalkit.records import COST_COLUMNS, COST_PER_DAY, COST_PER_QUERY
from evalkit.scoring.ir.forms import FORMS, MetricForms

__all__ = [
    "CHAR_COLUMNS",
    "COLUMNS",
    "COST_COLUMNS",
    "COST_PER_DAY",
    "COST_PER_QUERY",
    "HEADLINE",
    "MEASURES",
    "RANKING_COLUMNS",
    "Column",
    "Measure",
    "Subset",
    "Unit",
    "column",
    "measure",
]

Unit = Literal["proportion", "usd", "count", "chars", "tokens", "score"]
"""How a value is read: a share in [0, 1] (shown as a percentage, differences in points), US dollars,
a count, characters, tokens, or a raw retriever/reranker score."""
Subset = Literal["all", "answerable", "unanswerable"]


@dataclass(frozen=True)
class Column:
    """What one column of results.parquet / summary.parquet / the chunkings table means."""

    name: str
    """The column name as written."""
    label: str
    """Display label; ``@k`` is replaced by the config's top_k where one is shown."""
    higher_is_better: bool
    """Direction: False for misses, cost and size (cheaper and smaller is better)."""
    unit: Unit
    definition: str
    """One line: what the value is, per question (results) or per config (summary)."""

    @property
    def proportion(self) -> bool:
        """Values in [0, 1], shown as percentages and deltas in points."""
        return self.unit == "proportion"

    @property
    def forms(self) -> MetricForms | None:
        """The per-question and vectorised forms of an IR metric column, else None."""
        return FORMS.get(self.name)


def _table(*columns: Column) -> dict[str, Column]:
    return {c.name: c for c in columns}


COLUMNS: dict[str, Column] = _table(
    # Ranking metrics, per question (NaN on unanswerable questions); averaged over answerable ones.
    Column(
        "recall", "recall@k", True, "proportion",
        "Did the top k bring the evidence: hit@k for mode any; for mode all the share of evidence characters covered.",
    ),
    Column("hit", "hit@k", True, "proportion", "1 if any of the top k returned units is relevant, else 0."),
    Column(
        "precision", "precision@k", True, "proportion",
        "Relevant units in the top k divided by k (a short list is not rewarded).",
    ),
    Column(
        "recall_trec", "recall_trec@k", True, "proportion",
        "trec_eval recall: relevant units in the top k divided by every relevant unit of the chunking.",
    ),
    Column(
        "context_precision", "context precision@k", True, "proportion",
        "Average precision over the top k as ragas defines it (mean precision@i at the relevant ranks).",
    ),
    Column("mrr", "MRR", True, "proportion", "1 / rank of the first relevant unit within the top k, else 0."),
    Column("ndcg", "nDCG@k", True, "proportion", "nDCG@k with binary gains and a log2 discount."),
    # Character-level measures (Chroma's chunking evaluation; evalkit.scoring.ir.chars), NaN on unanswerable questions.
    Column(
        "char_recall", "char recall@k", True, "proportion",
        "Share of the evidence characters covered by the union of the top k returned units.",
    ),
    Column(
        "char_precision", "char precision@k", True, "proportion",
        "Share of the characters of the top k returned units (their union) that are evidence; 0 if none returned.",
    ),
    Column(
        "char_iou", "char IoU@k", True, "proportion",
        "Evidence characters and returned characters: size of the intersection over size of the union.",
    ),
    Column(
        "char_precision_omega", "char precision-Omega", True, "proportion",
        "Chroma's precision-Omega: the best char precision this chunking can reach (all units touching the evidence).",
    ),
    # Abstention.
    Column(
        "zero_hit", "zero-hit", False, "proportion",
        "1 when nothing reaches the model: no pool score at or above the threshold.",
    ),
    Column(
        "zero_hit_answerable", "zero-hit (answerable: misses)", False, "proportion",
        "Summary: share of answerable questions with a zero-hit (a miss).",
    ),
    Column(
        "zero_hit_unanswerable", "zero-hit (unanswerable: abstentions)", True, "proportion",
        "Summary: share of unanswerable questions with a zero-hit (a correct abstention).",
    ),
    # Cost and size.
    Column(COST_PER_QUERY, "$ per query", False, "usd", "US dollars per query (per question; mean per config)."),
    Column(COST_PER_DAY, "$ per day", False, "usd", "Summary: US dollars per day at the configured query volume."),
    Column("n_returned", "chunks returned", False, "count", "Units returned for the question at this grid point."),
    Column("mean_returned", "chunks returned per question", False, "count", "Summary: mean of n_returned."),
    Column("returned_tokens", "context tokens", False, "tokens", "Tokens of the returned units (prompt context)."),
    Column("mean_returned_tokens", "context tokens per question", False, "tokens", "Summary: mean of returned_tokens."),
    Column("question_tokens", "question tokens", False, "tokens", "Tokens of the question itself."),
    Column("mean_question_tokens", "question tokens (mean)", False, "tokens", "Summary: mean of question_tokens."),
    Column("n_chunks", "chunks", False, "count", "Chunkings table: chunks in the index of this chunking."),
    Column("stored_chars", "stored characters", False, "chars", "Chunkings table: characters stored (with overlap)."),
    Column("indexed_chars", "indexed characters", False, "chars", "Chunkings table: characters embedded or indexed."),
    Column(
        "gold_cut_share", "gold cut by a boundary", False, "proportion",
        "Chunkings table: answerable questions whose evidence span no single unit holds whole.",
    ),
    # Leakage.
    Column("leaked_units", "leaked units", False, "count", "Returned units the question's role may not see."),
    Column(
        "leaked_questions", "questions with a leak", False, "proportion",
        "Summary: share of questions with at least one leaked unit.",
    ),
    Column(
        "outdated_units", "outdated units", False, "count",
        "Returned units from a document version not in effect at the question's date.",
    ),
    Column(
        "outdated_questions", "questions with an outdated unit", False, "proportion",
        "Summary: share of questions with at least one outdated unit.",
    ),
)  # fmt: skip
"""Column name -> meaning, for the columns the sweep writes and the report shows."""

RANKING_COLUMNS = ("recall", "hit", "precision", "recall_trec", "context_precision", "mrr", "ndcg")
"""IR metric columns averaged over answerable questions (NaN elsewhere), in the summary's column order."""

CHAR_COLUMNS = ("char_recall", "char_precision", "char_iou", "char_precision_omega")
"""Character-level columns (:mod:`evalkit.scoring.ir.chars`), averaged over answerable questions (NaN elsewhere)."""


def column(name: str) -> Column:
    """Look a column up by name; ValueError naming the known ones otherwise."""
    try:
        return COLUMNS[name]
    except KeyError:
        raise ValueError(f"unknown column {name!r}; known: {', '.join(COLUMNS)}") from None


@dataclass(frozen=True)
class Measure:
    """One comparable quantity with one value per question."""

    name: str
    """Key used in configs, gate.json and on the command line."""
    label: str
    """Human label, e.g. ``recall@k``."""
    column: str
    """Column of results.parquet."""
    subset: Subset = "answerable"
    """Questions the measure is defined on; the others get NaN."""
    higher_is_better: bool = True
    proportion: bool = True
    """Values in [0, 1], shown as percentages and deltas in points."""


def _measure(name: str, source: str, subset: Subset) -> Measure:
    """A measure named like its summary column ``name``, taking per-question values from column ``source``."""
    meaning = COLUMNS[name]
    return Measure(name, meaning.label, source, subset, meaning.higher_is_better, meaning.proportion)


MEASURES: dict[str, Measure] = {
    m.name: m
    for m in (
        _measure("recall", "recall", "answerable"),
        _measure("hit", "hit", "answerable"),
        _measure("context_precision", "context_precision", "answerable"),
        _measure("precision", "precision", "answerable"),
        _measure("ndcg", "ndcg", "answerable"),
        _measure("mrr", "mrr", "answerable"),
        _measure("recall_trec", "recall_trec", "answerable"),
        _measure("zero_hit_answerable", "zero_hit", "answerable"),
        _measure("zero_hit_unanswerable", "zero_hit", "unanswerable"),
        Measure("cost_per_query", COLUMNS[COST_PER_QUERY].label, COST_PER_QUERY, "all", False, False),
        Measure("cost_per_day", COLUMNS[COST_PER_DAY].label, COST_PER_DAY, "all", False, False),
    )
}
"""Measure name -> measure, in the order the report and the gate list them."""

HEADLINE = ("recall", "hit", "context_precision", "ndcg", "mrr", "zero_hit_answerable", "zero_hit_unanswerable")
"""Measures the recommendation-versus-baseline table shows, in order."""


def measure(name: str) -> Measure:
    """Look a measure up by name; ValueError naming the known ones otherwise."""
    try:
        return MEASURES[name]
    except KeyError:
        raise ValueError(f"unknown metric {name!r}; known: {', '.join(MEASURES)}") from None
