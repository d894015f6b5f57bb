"""One name table: every result column the sweep writes, and every measure the report and the gate compare.

A :class:`Column` is what a column *means*: its display label, whether higher
is better, its unit and a one-line definition. The IR metric columns are not
listed here: each is declared with its two forms in its own module of
:mod:`evalkit.scoring.ir` and read from :data:`evalkit.scoring.ir.FORMS`
(likewise the character columns, from :mod:`evalkit.scoring.ir.chars`). A :class:`Measure`
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
from evalkit.scoring.ir import chars
from evalkit.scoring.ir.forms import FORMS, WRITTEN, Metric
from evalkit.scoring.ir.metric import Column, Unit

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
    "forms",
    "measure",
]

Subset = Literal["all", "answerable", "unanswerable"]

ANSWER_CORRECT, ANSWER_F1, FIRST_TOKEN_S = "answer_correct", "answer_f1", "first_token_s"
"""Per-question columns the answer check adds to the results (NaN for configs and questions it did not answer)."""


def forms(name: str) -> Metric | None:
    """The declared per-question and vectorised forms of an IR metric column, else None."""
    return FORMS.get(name)


def _table(*columns: Column) -> dict[str, Column]:
    return {c.name: c for c in columns}


COLUMNS: dict[str, Column] = _table(
    *(m.column for m in WRITTEN if m.answerable_only),  # ranking metrics, NaN on unanswerable questions
    *chars.COLUMNS,
    # Abstention: zero_hit itself is declared with its forms (evalkit.scoring.ir.zero_hit).
    *(m.column for m in WRITTEN if not m.answerable_only),
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
    # Answers (the answer check: the configs a decision names, answered with their own contexts).
    Column(
        ANSWER_CORRECT, "answer accuracy", True, "proportion",
        "Answer check: the gold stated (answerable) or a refusal (unanswerable); NaN where not answered.",
    ),
    Column(ANSWER_F1, "answer F1", True, "proportion", "Answer check: SQuAD token F1 (answerable questions)."),
    Column(
        FIRST_TOKEN_S, "first-token seconds", False, "seconds",
        "Modelled seconds to the first answer token for the question's prompt (the generator's fitted latency).",
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

RANKING_COLUMNS = tuple(m.name for m in WRITTEN if m.answerable_only)
"""IR metric columns averaged over answerable questions (NaN elsewhere), in the summary's column order."""

CHAR_COLUMNS = tuple(c.name for c in chars.COLUMNS)
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
    binary: bool = False
    """Values are 0/1 outcomes: compared with Newcombe's interval and the exact McNemar test, not a bootstrap."""


def _measure(name: str, source: str, subset: Subset) -> Measure:
    """A measure named like its summary column ``name``, taking per-question values from column ``source``."""
    meaning = COLUMNS[name]
    return Measure(name, meaning.label, source, subset, meaning.higher_is_better, meaning.proportion)


MEASURES: dict[str, Measure] = {
    m.name: m
    for m in (
        *(_measure(m.name, m.name, "answerable") for m in WRITTEN if m.comparable),
        _measure("zero_hit_answerable", "zero_hit", "answerable"),
        _measure("zero_hit_unanswerable", "zero_hit", "unanswerable"),
        Measure("cost_per_query", COLUMNS[COST_PER_QUERY].label, COST_PER_QUERY, "all", False, False),
        Measure("answer_accuracy", COLUMNS[ANSWER_CORRECT].label, ANSWER_CORRECT, "all", True, True, binary=True),
        Measure("answer_f1", COLUMNS[ANSWER_F1].label, ANSWER_F1, "answerable", True, True),
        Measure(FIRST_TOKEN_S, COLUMNS[FIRST_TOKEN_S].label, FIRST_TOKEN_S, "all", False, False),
        Measure("cost_per_day", COLUMNS[COST_PER_DAY].label, COST_PER_DAY, "all", False, False),
    )
}
"""Measure name -> measure, in the order the report and the gate list them."""

REPORTED = (
    "recall",
    "hit",
    "context_precision",
    "ndcg",
    "mrr",
    "precision",
    "zero_hit_answerable",
    "zero_hit_unanswerable",
)
"""Measures the report's grid, run-over-run comparison and flags show, in order. A new metric is its module in
:mod:`evalkit.scoring.ir` (declared there once, with its forms and column) and its name here: two files."""

HEADLINE = ("recall", "hit", "context_precision", "ndcg", "mrr", "zero_hit_answerable", "zero_hit_unanswerable")
"""Measures the recommendation-versus-baseline table shows, in order."""


def measure(name: str) -> Measure:
    """Look a measure up by name; ValueError naming the known ones otherwise."""
    try:
        return MEASURES[name]
    except KeyError:
        raise ValueError(f"unknown metric {name!r}; known: {', '.join(MEASURES)}") from None
