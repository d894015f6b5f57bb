"""The metric registry: every registered name has both forms, the forms agree, and one name table serves all.

Hand-worked values (written out in comments) for every metric, through the
per-question form and through the vectorised form over a questions x rank
matrix; a property test over every name in ``FORMS``; and the name table
that result columns, aggregation, the report and the gate share.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from evalkit.run import files
from evalkit.scoring import registry
from evalkit.scoring.aggregate import METRIC_COLUMNS
from evalkit.scoring.ir import FORMS, JudgedRanking, Returned
from evalkit.scoring.ir.coverage import answer_recall_at_k
from evalkit.scoring.ir.returned import SpanCoverage
from evalkit.scoring.slicing import PoolJudgement, answer_recall, slice_metrics
from tests.conftest import REPO

# 1 / log2(rank + 1) for ranks 1..5
D1, D2, D3, D4, D5 = (1 / math.log2(r + 1) for r in range(1, 6))
K = 5

# (returned relevance flags best first, relevant units in the chunking) -> hand-worked value per metric at k = 5.
CASES: list[tuple[list[bool], int, dict[str, float]]] = [
    (
        [False, True, False, True, True],  # relevant at ranks 2, 4, 5; one relevant unit never retrieved
        4,
        {
            "recall": 1.0,  # mode any: hit@5
            "hit": 1.0,
            "precision": 3 / 5,
            "recall_trec": 3 / 4,
            "context_precision": (1 / 2 + 2 / 4 + 3 / 5) / 3,  # precision@2, @4, @5 averaged
            "mrr": 1 / 2,
            "ndcg": (D2 + D4 + D5) / (D1 + D2 + D3 + D4),  # ideal: 4 relevant first
            "zero_hit": 0.0,
            "span_recall": 0.0,  # no spans given
        },
    ),
    (
        [],  # nothing reached the threshold
        2,
        dict.fromkeys(("recall", "hit", "precision", "recall_trec", "context_precision", "mrr", "ndcg"), 0.0)
        | {"zero_hit": 1.0, "span_recall": 0.0},
    ),
    (
        [True],  # one hit returned, and it is the only relevant unit
        1,
        {
            "recall": 1.0,
            "hit": 1.0,
            "precision": 1 / 5,  # a short list is not rewarded
            "recall_trec": 1.0,
            "context_precision": 1.0,
            "mrr": 1.0,
            "ndcg": 1.0,
            "zero_hit": 0.0,
            "span_recall": 0.0,
        },
    ),
    (
        [False, False],  # the chunking holds no relevant unit at all
        0,
        dict.fromkeys(("recall", "hit", "precision", "recall_trec", "context_precision", "mrr", "ndcg"), 0.0)
        | {"zero_hit": 0.0, "span_recall": 0.0},
    ),
]


def test_every_ir_column_has_both_forms() -> None:
    ir_columns = [c for c in registry.COLUMNS.values() if registry.forms(c.name) is not None]
    assert {c.name for c in ir_columns} == {*registry.RANKING_COLUMNS, "zero_hit"}
    for c in ir_columns:
        declared = registry.forms(c.name)
        assert declared is not None and declared.name == c.name and declared.column == c
        assert callable(declared.per_question) and callable(declared.vectorised)
    # Every registered form is a column, except multi-hop coverage alone (a part of recall, not written).
    assert set(FORMS) - set(registry.COLUMNS) == {"span_recall"}


def test_hand_worked_cases_cover_every_registered_name() -> None:
    for _, _, expected in CASES:
        assert set(expected) == set(FORMS)


@pytest.mark.parametrize("name", sorted(FORMS))
def test_both_forms_give_the_hand_worked_values(name: str) -> None:
    forms = FORMS[name]
    returned = Returned.from_lists([rel for rel, _, _ in CASES], [n for _, n, _ in CASES], K)
    vectorised = forms.vectorised(returned)
    assert vectorised.shape == (len(CASES),)
    for row, (rel, n_relevant, expected) in enumerate(CASES):
        per_question = forms.per_question(JudgedRanking(tuple(rel), n_relevant), K)
        assert per_question == pytest.approx(expected[name], abs=1e-12), (name, row)
        assert float(vectorised[row]) == pytest.approx(expected[name], abs=1e-12), (name, row)


def test_multi_hop_recall_in_both_forms() -> None:
    # A two-hop question: rank 1 covers hop 1, ranks 2 and 3 together cover hop 0.
    coverage = (frozenset({1}), frozenset({1}), frozenset({0, 1}))
    rel = (True, False, False)
    assert answer_recall_at_k("all", rel, 2, coverage, 2) == 0.5  # 1 of 2 hops in the top 2
    assert answer_recall_at_k("all", rel, 3, coverage, 2) == 1.0
    # Vectorised: row 0 is that question cut at k = 2 (one span covered); row 1 is a mode-any question.
    spans = SpanCoverage(np.array([True, False]), np.array([1, 0]), np.array([2, 1]))
    returned = Returned.from_lists([list(rel), [False, True]], [2, 1], 2, spans)
    assert FORMS["recall"].vectorised(returned).tolist() == [0.5, 1.0]
    assert FORMS["span_recall"].vectorised(returned).tolist() == [0.5, 0.0]
    assert answer_recall(np.array([1.0, 1.0]), spans).tolist() == [0.5, 1.0]
    assert answer_recall(np.array([1.0, 0.0]), None).tolist() == [1.0, 0.0]


@st.composite
def lists(draw: st.DrawFn) -> tuple[list[list[bool]], list[int], int]:
    n_q = draw(st.integers(1, 6))
    rels = [draw(st.lists(st.booleans(), max_size=12)) for _ in range(n_q)]
    k = draw(st.integers(1, 14))
    n_relevant = [sum(rel[:k]) + draw(st.integers(0, 3)) for rel in rels]
    return rels, n_relevant, k


@settings(max_examples=200, deadline=None)
@given(lists())
def test_every_registered_form_pair_agrees(case: tuple[list[list[bool]], list[int], int]) -> None:
    rels, n_relevant, k = case
    returned = Returned.from_lists(rels, n_relevant, k)
    for name, forms in FORMS.items():
        vectorised = forms.vectorised(returned)
        for row, rel in enumerate(rels):
            expected = forms.per_question(JudgedRanking(tuple(rel[:k]), n_relevant[row]), k)
            assert abs(float(vectorised[row]) - expected) < 1e-12, (name, row)


def test_slicing_composes_the_registered_forms() -> None:
    scores = np.array([[0.9, 0.8, 0.1, np.nan], [0.2, 0.1, np.nan, np.nan]])
    relevant = np.array([[False, True, True, False], [True, False, False, False]])
    judgement = PoolJudgement(relevant, scores, np.array([2, 1]))
    sliced = slice_metrics(judgement, 2, 0.5)  # row 0 returns ranks 1-2, row 1 returns nothing
    returned = Returned.slice(relevant, scores, judgement.n_relevant, 2, 0.5)
    assert list(sliced.values) == [m.name for m in FORMS.values() if m.column is not None]
    for name, values in sliced.values.items():
        assert values.tobytes() == FORMS[name].vectorised(returned).tobytes()
    assert sliced.values["hit"].tolist() == [1.0, 0.0] and sliced.values["zero_hit"].tolist() == [False, True]


# The name table ---------------------------------------------------------------------


def test_measures_take_meaning_from_columns() -> None:
    for m in registry.MEASURES.values():
        summary_column = registry.COLUMNS.get(m.name) or registry.COLUMNS[m.column]
        assert m.column in registry.COLUMNS
        assert m.label == summary_column.label
        assert m.higher_is_better == summary_column.higher_is_better
        assert m.proportion == summary_column.proportion
    zero_hit = registry.MEASURES["zero_hit_answerable"], registry.MEASURES["zero_hit_unanswerable"]
    assert [m.column for m in zero_hit] == ["zero_hit", "zero_hit"]
    assert [m.subset for m in zero_hit] == ["answerable", "unanswerable"]
    assert [m.higher_is_better for m in zero_hit] == [False, True]  # a miss versus a correct abstention


def test_one_name_table_for_columns_aggregation_report_and_gate() -> None:
    assert (*registry.RANKING_COLUMNS, *registry.CHAR_COLUMNS) == METRIC_COLUMNS
    assert registry.COST_COLUMNS == files.COST_COLUMNS  # the run folder's names and the registry's agree
    assert set(registry.HEADLINE) <= set(registry.MEASURES)
    margins = yaml.safe_load((REPO / "conf" / "gate" / "default.yaml").read_text(encoding="utf-8"))["checks"]
    assert set(margins) <= set(registry.MEASURES)
    for c in registry.COLUMNS.values():
        assert (
            c.label and c.definition and c.unit in ("proportion", "usd", "count", "chars", "tokens", "score", "seconds")
        )
    with pytest.raises(ValueError, match="unknown metric"):
        registry.measure("recal")
    with pytest.raises(ValueError, match="unknown column"):
        registry.column("recal")


def test_report_and_gate_hold_no_measure_literals() -> None:
    from evalkit import gate
    from evalkit.scoring import gatecheck

    assert gatecheck.MEASURES is registry.MEASURES
    for module in (gate, gatecheck):
        assert Path(module.__file__).read_text(encoding="utf-8").count('"recall"') == 0
