"""The second signal of item analysis (evalkit/scoring/gold_doubt.py), on texts worked out by hand.

The planted-gold checks on a real set are in tests/test_items.py (squad2-en) and benchmarks/item_kinds.py.
"""

from __future__ import annotations

import math

import pytest

from evalkit.scoring.gold_doubt import CONTEXT, FLOOR, RATIO, doubt_gold, lexicon, terms

FILLER = "Nothing of note happened on that quiet day in the valley. " * 12  # > 2 x CONTEXT characters, no question term


def test_terms_are_words_numbers_and_cjk_bigrams() -> None:
    assert terms("Tesla joined in 1884.") == [(0, "tesla"), (6, "join"), (13, "in"), (16, "1884")]
    assert [t for _, t in terms("joins joining was is")] == ["join", "join", "was", "is"]  # short words stay
    assert terms("特斯拉A") == [(0, "特斯"), (1, "斯拉"), (3, "a")]
    assert terms("中") == [(0, "中")]  # a one-character run is its own term


def test_idf_is_bm25s_and_unseen_terms_weigh_most() -> None:
    lex = lexicon(["tesla rome", "tesla london", "edison"])
    # n = 3; "tesla" in 2 documents: log(1 + 1.5 / 2.5); "rome" in 1: log(1 + 2.5 / 1.5); unseen: log(1 + 3.5 / 0.5)
    assert lex.weight("tesla") == pytest.approx(math.log(1.6))
    assert lex.weight("rome") == pytest.approx(math.log(1 + 2.5 / 1.5))
    assert lex.weight("zzz") == pytest.approx(math.log(8.0))
    assert lex.weight("zzz") > lex.weight("rome") > lex.weight("tesla")


def _set() -> dict[str, str]:
    passage = "In 1884 Tesla sailed to New York and joined the company Edison Machine Works as an engineer. "
    return {
        "a": FILLER + passage + FILLER + "The firm built dynamos for the city. " + FILLER,
        "b": FILLER + "Lighthouses guard the rocky northern coast. " + FILLER,
    }


QUESTION = "Which company did Tesla join in New York in 1884?"


def _where(texts: dict[str, str], needle: str) -> tuple[str, int, int]:
    for doc_id, text in texts.items():
        if needle in text:
            start = text.index(needle)
            return doc_id, start, start + len(needle)
    raise AssertionError(needle)


def test_right_gold_reads_best_and_gold_elsewhere_is_told_by_kind() -> None:
    texts = _set()
    lex = lexicon(texts.values())
    right = doubt_gold(QUESTION, [_where(texts, "Edison Machine Works")], texts, ["a"], lex)
    assert right.kind == "hard" and right.gold_doc_retrieved
    # The gold window holds every question term but "which" and "did" ("joined" stems to "join").
    weights = {t: lex.weight(t) for _, t in terms(QUESTION)}
    held = {"tesla", "join", "in", "new", "york", "1884", "company"}
    assert right.gold_overlap == pytest.approx(sum(weights[t] for t in held) / sum(weights.values()))
    # Gold moved to the far sentence of the same document: its own document's passage matches better.
    same = doubt_gold(QUESTION, [_where(texts, "dynamos")], texts, ["a"], lex)
    assert same.kind == "wrong_span" and same.elsewhere_doc_id == "a"
    assert same.elsewhere_overlap >= FLOOR and same.elsewhere_overlap >= RATIO * same.gold_overlap
    # Gold moved to another document the configs never return; they return "a", where the question's passage is.
    other = doubt_gold(QUESTION, [_where(texts, "Lighthouses")], texts, ["a"], lex)
    assert other.kind == "wrong_document" and other.elsewhere_doc_id == "a" and not other.gold_doc_retrieved
    # The same, when nothing is retrieved: nothing elsewhere to compare with, so no doubt about the label.
    assert doubt_gold(QUESTION, [_where(texts, "Lighthouses")], texts, [], lex).kind == "hard"


def test_a_window_overlapping_the_gold_window_is_not_elsewhere() -> None:
    texts = _set()
    lex = lexicon(texts.values())
    doc_id, start, end = _where(texts, "engineer")  # inside the question's passage, a few words from its terms
    found = doubt_gold(QUESTION, [(doc_id, start, end)], texts, ["a"], lex)
    assert found.kind == "hard", "the passage is within the gold window (CONTEXT characters either side)"
    assert end - start + 2 * CONTEXT > len("In 1884 Tesla sailed to New York and joined Edison Machine Works")


def test_a_misspelt_question_is_hard_not_wrong() -> None:
    texts = _set()
    lex = lexicon(texts.values())
    found = doubt_gold("Wich compny did Tesls joyn?", [_where(texts, "Edison Machine Works")], texts, ["a", "b"], lex)
    assert found.kind == "hard" and found.elsewhere_overlap < FLOOR
