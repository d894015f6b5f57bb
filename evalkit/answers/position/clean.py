"""Clean placements: the gold holds the evidence and no other chunk does (pure).

A placement measures position only when the gold is the one place the answer
can be read. Measured on the demo set, 15.5% of questions had a second relevant
chunk among retrieve-5's other four and 31.1% an answer string in another chunk,
and 9.6% of placements put a "gold" chunk holding no answer string: all of it
pulls a position effect toward zero. So a controlled arm's context is built
here rather than cut from the top of the pool:

- **the gold**: the best-ranked pool unit that is relevant (the pool's
  ``relevant`` column, the projection the retrieval metrics use) and, for an
  answerable question, whose text contains a gold answer string as answer
  scoring matches it (:func:`evalkit.scoring.answers.contains_match`, called directly);
- **the distractors**: the best-ranked units that are not relevant, overlap no
  evidence span and contain no gold answer string, walking deeper into the
  pool past the ones that do, so they still look relevant to the retriever.

A question that cannot be placed cleanly is skipped with a reason, counted in
the plan and shown in the report; it is never placed dirty.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from evalkit.answers.blocks import ContextItem
from evalkit.chunking.relevance import overlap
from evalkit.records import Question
from evalkit.scoring.answers import contains_match

SkipReason = Literal["", "no gold in the pool", "no gold holding an answer string", "too few clean distractors"]
SKIP_REASONS: tuple[SkipReason, ...] = (
    "no gold in the pool",
    "no gold holding an answer string",
    "too few clean distractors",
)
"""Why a question has no clean placement, in the order the report lists them."""


@dataclass(frozen=True)
class CleanContext:
    """The items of one clean controlled context, or why there is none."""

    items: tuple[ContextItem, ...]
    """The gold first (when the question has one), then the distractors in pool order; empty when skipped."""
    reason: SkipReason = ""
    """Empty when clean, else why the question is skipped on this arm."""
    deepest_rank: int = 0
    """1-based pool rank of the deepest unit used: how far past the contaminated ones the search went."""


def holds_answer(item: ContextItem, question: Question) -> bool:
    """The unit's text contains a gold answer string, normalised and tokenised as answer scoring does."""
    return bool(question.answers) and contains_match(item.text, question.answers, question.lang)


def touches_evidence(item: ContextItem, question: Question) -> bool:
    """Relevant by the pool's projection, or sharing even one character with an evidence span."""
    return item.is_gold or any(overlap(item, span) > 0 for span in question.evidence)


def is_clean_distractor(item: ContextItem, question: Question) -> bool:
    """Holds no relevant span and no gold answer string."""
    return not touches_evidence(item, question) and not holds_answer(item, question)


def is_placeable_gold(item: ContextItem, question: Question) -> bool:
    """Relevant, and for an answerable question it contains a gold answer string (the evidence is really there)."""
    return item.is_gold and (not question.answerable or holds_answer(item, question))


def clean_context(question: Question, ranked: Sequence[ContextItem], k: int) -> CleanContext:
    """``k`` items for a controlled arm: one placeable gold and ``k - 1`` clean distractors from the pool.

    An unanswerable question has no gold: its ``k`` items are all clean
    distractors (it still measures refusals). ``ranked`` is the question's pool,
    best first.
    """
    gold: tuple[ContextItem, ...] = ()
    deepest = 0
    if question.answerable:
        golds = [(rank, item) for rank, item in enumerate(ranked, 1) if item.is_gold]
        if not golds:
            return CleanContext((), "no gold in the pool")
        placeable = [(rank, item) for rank, item in golds if is_placeable_gold(item, question)]
        if not placeable:
            return CleanContext((), "no gold holding an answer string")
        deepest, first = placeable[0]
        gold = (first,)
    wanted = k - len(gold)
    distractors: list[ContextItem] = []
    for rank, item in enumerate(ranked, 1):
        if len(distractors) == wanted:
            break
        if is_clean_distractor(item, question):
            distractors.append(item)
            deepest = max(deepest, rank)
    if len(distractors) < wanted:
        return CleanContext((), "too few clean distractors")
    return CleanContext((*gold, *distractors), "", deepest)


def is_clean(items: Sequence[ContextItem], question: Question) -> bool:
    """At most one relevant item, it holds an answer string, and no other item holds one or touches the evidence."""
    golds = [item for item in items if touches_evidence(item, question)]
    if len(golds) > 1 or (question.answerable and len(golds) != 1):
        return False
    if golds and not is_placeable_gold(golds[0], question):
        return False
    return all(is_clean_distractor(item, question) for item in items if item not in golds)
