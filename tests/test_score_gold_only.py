"""Scoring reads the pool and the gold documents only: hand-worked values with distractor documents around."""

from __future__ import annotations

import numpy as np

from evalkit.pipeline.score import gold_cut_share, judge, pool_token_counts
from evalkit.pipeline.units import Units
from evalkit.records import Question, Span
from evalkit.retrieval.pools import CandidatePool


def question(qid: str, *evidence: Span) -> Question:
    mode = "any" if evidence else "none"
    return Question(qid, "?", ("x",) if evidence else (), bool(evidence), tuple(evidence), mode)


# Document "g" cut at 100 and 200; "d1" and "d2" are distractors with the same offsets.
DOCS = ["g", "g", "d1", "d1", "d2", "d2"]
UNITS = Units(
    ids=tuple(f"u{i}" for i in range(6)),
    doc_ids=np.array(DOCS, dtype=object),
    starts=np.array([0, 100] * 3, dtype=np.int64),
    ends=np.array([100, 200] * 3, dtype=np.int64),
    texts=("a" * 40, "b" * 8, "c" * 4, "d" * 4, "é" * 4, "f" * 400),
)
QUESTIONS = (
    question("inside", Span("g", 10, 20)),  # held whole by u0
    question("cut", Span("g", 95, 105)),  # straddles u0/u1: no unit holds it
    question("unanswerable"),
)


def test_judge_marks_only_gold_document_units_in_the_pool() -> None:
    pool = CandidatePool(np.array([[2, 0, -1], [0, 1, 3], [4, 5, -1]]), np.zeros((3, 3)), "bm25")
    judged = judge(QUESTIONS, pool, UNITS, 1.0)
    # d1's u2 has the same offsets as u0 but another document: never relevant.
    assert judged.relevant.tolist() == [[False, True, False], [False, False, False], [False, False, False]]
    assert judged.n_relevant.tolist() == [1, 0, 0]
    assert judge(QUESTIONS, pool, UNITS, 0.5).n_relevant.tolist() == [1, 2, 0]  # half of the cut span each side


def test_gold_cut_share_reads_the_gold_documents() -> None:
    assert gold_cut_share(QUESTIONS, UNITS) == 0.5  # of 2 answerable questions, "cut" has no unit holding it
    assert gold_cut_share((question("elsewhere", Span("nowhere", 0, 5)),), UNITS) == 1.0


def test_pool_token_counts_count_pooled_units_only() -> None:
    pool = CandidatePool(np.array([[0, 4, -1], [4, 1, -1]]), np.zeros((2, 3)), "bm25")
    # 40 and 8 ASCII characters: 10 and 2 tokens; 4 non-ASCII: 2 tokens; units 2, 3 and 5 are in no pool.
    assert pool_token_counts(pool, UNITS, "generic").tolist() == [10, 2, 0, 0, 2, 0]
