"""Character-level measures (Chroma's chunking evaluation): hand-worked values, both forms equal, Omega's units.

Every case is worked out by hand in its comments: E is the union of the
evidence spans, R the union of the returned units, per document. Each case
goes through the per-question form and, all cases in one batch, through the
vectorised form the pipeline calls; hypothesis then checks both forms against
each other and against a brute-force set of characters on random spans.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalkit.chunking.relevance import covered_evidence
from evalkit.records import Question, Span
from evalkit.scoring import registry
from evalkit.scoring.ir.char_spans import CharSpan, union_lengths
from evalkit.scoring.ir.chars import (
    CharScores,
    char_measures,
    char_measures_one,
    evidence_char_coverage,
    overlapping_units,
)

NAN = math.nan
CHINESE = "合同法第一条：为了保护合同当事人的合法权益，制定本法。"  # 27 code points, 81 UTF-8 bytes
CHINESE_EVIDENCE = "保护合同当事人的合法权益"  # code points [9, 21): 12 characters, 36 bytes

# name -> (returned spans, evidence spans, omega spans, expected (recall, precision, iou, precision_omega))
CASES: dict[str, tuple[list[CharSpan], list[CharSpan], list[CharSpan] | None, tuple[float, float, float, float]]] = {
    # E = [10, 30) (20); chunks [0, 20) and [15, 35) overlap on [15, 20): R = [0, 35) counts 35, not 40
    # (Chroma's precision would divide by 20 + 20 = 40). E & R = 20, E | R = 35. Omega = the same two units.
    "overlapping chunks": (
        [("d", 0, 20), ("d", 15, 35)],
        [("d", 10, 30)],
        [("d", 0, 20), ("d", 15, 35)],
        (1.0, 20 / 35, 20 / 35, 20 / 35),
    ),
    # E = [15, 25) cut by the boundary at 20 of chunks [0, 20), [20, 40); only [0, 20) returned:
    # E & R = [15, 20) = 5 -> recall 5/10, precision 5/20, IoU 5 / (10 + 20 - 5). Omega = both chunks: 10/40.
    "span cut by a boundary, one side returned": (
        [("d", 0, 20)],
        [("d", 15, 25)],
        [("d", 0, 20), ("d", 20, 40)],
        (0.5, 0.25, 5 / 25, 10 / 40),
    ),
    # Both sides returned: the union covers E = 10 of R = 40.
    "span cut by a boundary, both sides returned": (
        [("d", 20, 40), ("d", 0, 20)],
        [("d", 15, 25)],
        [("d", 0, 20), ("d", 20, 40)],
        (1.0, 10 / 40, 10 / 40, 10 / 40),
    ),
    # Two spans [2, 5) and [8, 12) (3 + 4 = 7) inside one chunk [0, 20).
    "several spans in one chunk": (
        [("d", 0, 20)],
        [("d", 2, 5), ("d", 8, 12)],
        [("d", 0, 20)],
        (1.0, 7 / 20, 7 / 20, 7 / 20),
    ),
    # Strict multi-hop recall: E = [0, 100), the returned chunk [40, 60) lies inside it and covers 20 of
    # 100 characters (the old rule counted the span covered). Omega: the five 20-character chunks of [0, 100).
    "span longer than a chunk": (
        [("d", 40, 60)],
        [("d", 0, 100)],
        [("d", s, s + 20) for s in range(0, 100, 20)],
        (0.2, 1.0, 0.2, 1.0),
    ),
    # Chinese: offsets are code points. Chunks of 8 characters [8, 16), [16, 24) returned; E = [9, 21):
    # E & R = 12, R = 16 (in bytes E would be 36 and R 48: other numbers).
    "Chinese text": (
        [("zh", 8, 16), ("zh", 16, 24)],
        [("zh", 9, 21)],
        [("zh", 8, 16), ("zh", 16, 24)],
        (1.0, 12 / 16, 12 / 16, 12 / 16),
    ),
    # Chinese, only [8, 16) returned: E & R = [9, 16) = 7 -> 7/12, 7/8, 7 / (12 + 8 - 7).
    "Chinese text, one chunk": (
        [("zh", 8, 16)],
        [("zh", 9, 21)],
        None,
        (7 / 12, 7 / 8, 7 / 13, NAN),
    ),
    # Spans in two documents: E = a[0, 10) + b[0, 10) = 20. R = a[0, 10) + b[5, 25) + c[0, 5) = 35;
    # same offsets in other documents never merge. E & R = 10 + 5 = 15, E | R = 20 + 35 - 15 = 40.
    "spans in two documents": (
        [("a", 0, 10), ("b", 5, 25), ("c", 0, 5)],
        [("a", 0, 10), ("b", 0, 10)],
        [("a", 0, 10), ("b", 0, 25)],
        (15 / 20, 15 / 35, 15 / 40, 20 / 35),
    ),
    # Nothing returned (zero-hit): recall, precision and IoU 0; Omega still [0, 20) against E = [0, 10).
    "empty returned list": ([], [("d", 0, 10)], [("d", 0, 20)], (0.0, 0.0, 0.0, 0.5)),
    # Unanswerable: no evidence, every measure NaN whatever was returned.
    "unanswerable": ([("d", 0, 10)], [], [], (NAN, NAN, NAN, NAN)),
    # The chunking skips [10, 12) (a dropped separator): E = [5, 15), Omega = [0, 10) + [12, 20).
    # Chroma's precision-Omega: |E & Omega| / |E | Omega| = (5 + 3) / 20 (precision against Omega alone: 8/18).
    "evidence outside every unit": (
        [("d", 0, 10)],
        [("d", 5, 15)],
        [("d", 0, 10), ("d", 12, 20)],
        (0.5, 0.5, 5 / 15, 8 / 20),
    ),
}


def scores(s: CharScores) -> tuple[float, float, float, float]:
    return s.recall, s.precision, s.iou, s.precision_omega


def pool_arrays(
    returned_lists: list[list[CharSpan]], width: int, unreturned_tail: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(n_q, width) pool arrays: each question's returned units first, then unreturned units, then padding."""
    n_q = len(returned_lists)
    doc_ids = np.full((n_q, width), None, dtype=object)
    starts = np.zeros((n_q, width), dtype=np.int64)
    ends = np.zeros((n_q, width), dtype=np.int64)
    returned = np.zeros((n_q, width), dtype=bool)
    for q, spans in enumerate(returned_lists):
        for j, (doc_id, start, end) in enumerate(spans):
            doc_ids[q, j], starts[q, j], ends[q, j], returned[q, j] = doc_id, start, end, True
        for j in range(len(spans), min(width, len(spans) + unreturned_tail)):
            # A pool entry not returned at this grid point: it must change nothing.
            doc_ids[q, j], starts[q, j], ends[q, j] = "d", 0, 1000
    return doc_ids, starts, ends, returned


def assert_scores(actual: tuple[float, ...], expected: tuple[float, ...], name: str) -> None:
    for a, e in zip(actual, expected, strict=True):
        assert (math.isnan(a) and math.isnan(e)) or a == pytest.approx(e, abs=1e-12), (name, actual, expected)


@pytest.mark.parametrize("name", list(CASES))
def test_per_question_form_gives_the_hand_worked_values(name: str) -> None:
    returned, evidence, omega, expected = CASES[name]
    assert_scores(scores(char_measures_one(returned, evidence, omega)), expected, name)


def test_vectorised_form_gives_the_hand_worked_values_in_one_batch() -> None:
    names = list(CASES)
    returned_lists = [CASES[n][0] for n in names]
    evidence = [CASES[n][1] for n in names]
    doc_ids, starts, ends, returned = pool_arrays(returned_lists, 6, unreturned_tail=2)
    # Omega is all-or-nothing per call: questions without a hand-worked Omega get their own units here.
    omega = [CASES[n][2] if CASES[n][2] is not None else [("zh", 8, 16), ("zh", 16, 24)] for n in names]
    got = char_measures(doc_ids, starts, ends, returned, evidence, omega)
    for q, name in enumerate(names):
        expected = CASES[name][3]
        if CASES[name][2] is None:
            expected = (*expected[:3], 12 / 16)
        row = (got.recall[q], got.precision[q], got.iou[q], got.precision_omega[q])
        assert_scores(tuple(float(v) for v in row), expected, name)
    coverage = evidence_char_coverage(doc_ids, starts, ends, returned, evidence)
    assert np.array_equal(coverage, got.recall, equal_nan=True)
    without_omega = char_measures(doc_ids, starts, ends, returned, evidence)
    assert np.isnan(without_omega.precision_omega).all()
    assert np.array_equal(without_omega.iou, got.iou, equal_nan=True)


def test_chinese_offsets_are_code_points() -> None:
    start = CHINESE.index(CHINESE_EVIDENCE)
    assert (start, start + len(CHINESE_EVIDENCE)) == (9, 21)
    assert len(CHINESE) == 27 and len(CHINESE.encode("utf-8")) == 81
    chunks = [("zh", s, min(s + 8, len(CHINESE))) for s in range(0, len(CHINESE), 8)]
    assert [CHINESE[s:e] for _, s, e in chunks[1:3]] == ["了保护合同当事人", "的合法权益，制定"]
    omega = overlapping_units([d for d, _, _ in chunks], [s for _, s, _ in chunks], [e for _, _, e in chunks],
                              [[("zh", 9, 21)]])  # fmt: skip
    assert omega == ((("zh", 8, 16), ("zh", 16, 24)),)


def test_strict_recall_of_a_span_longer_than_a_chunk_against_the_old_rule() -> None:
    long_span = Span("d", 0, 100)
    question = Question("q", "?", ("a",), True, (long_span,), "all")
    inside = Span("d", 40, 60)
    assert covered_evidence([inside], question) == frozenset({0})  # old rule: the span counts as covered
    assert char_measures_one([("d", 40, 60)], [("d", 0, 100)]).recall == 0.2  # strict: 20 of 100 characters
    assert char_measures_one([("d", 0, 50), ("d", 40, 100)], [("d", 0, 100)]).recall == 1.0


def test_overlapping_units_takes_every_unit_sharing_a_character() -> None:
    # Units of d: [0, 20), [15, 35), [35, 50), [50, 70); of e: [0, 30). Evidence d[18, 36):
    # [0, 20) shares [18, 20), [15, 35) shares [18, 35), [35, 50) shares [35, 36); [50, 70) none.
    # Evidence d[20, 35) is only touched by [0, 20) at 20 (no shared character; Chroma would take it).
    units = [("d", 50, 70), ("d", 0, 20), ("e", 0, 30), ("d", 15, 35), ("d", 35, 50), ("d", 3, 3)]
    doc_ids, starts, ends = ([u[i] for u in units] for i in range(3))
    evidence = [[("d", 18, 36)], [("d", 20, 35)], [], [("d", 18, 36), ("e", 29, 31), ("f", 0, 5)], [("d", 4, 4)]]
    got = overlapping_units(doc_ids, starts, ends, evidence)
    assert got == (
        (("d", 0, 20), ("d", 15, 35), ("d", 35, 50)),
        (("d", 15, 35),),
        (),
        (("d", 0, 20), ("d", 15, 35), ("d", 35, 50), ("e", 0, 30)),  # each unit once; no units in f
        (),  # an empty span shares no character
    )
    # Precision-Omega of the first question: E = 18, Omega = [0, 50) = 50.
    assert char_measures_one([], [("d", 18, 36)], got[0]).precision_omega == 18 / 50


def test_bad_inputs_are_rejected() -> None:
    doc_ids, starts, ends, returned = pool_arrays([[("d", 0, 5)]], 2)
    with pytest.raises(ValueError, match="questions"):
        char_measures(doc_ids, starts, ends, returned, [[("d", 0, 1)], []])
    with pytest.raises(ValueError, match="shape"):
        char_measures(doc_ids, starts[:, :1], ends, returned, [[("d", 0, 1)]])
    with pytest.raises(ValueError, match="start <= end"):
        char_measures(doc_ids, starts, ends, returned, [[("d", 5, 1)]])
    with pytest.raises(ValueError, match="start <= end"):
        char_measures_one([("d", -1, 3)], [("d", 0, 1)])
    assert union_lengths(np.array([], dtype=np.int64), np.array([]), np.array([]), np.array([]), 3).tolist() == [0] * 3


def test_the_columns_are_registered() -> None:
    for name in registry.CHAR_COLUMNS:
        c = registry.column(name)
        assert c.higher_is_better and c.proportion and c.definition and registry.forms(name) is None


# Random inputs: vectorised == per question == brute-force characters -------------------------------

DOCS = ("a", "b", "c")


@st.composite
def spans(draw: st.DrawFn, max_size: int) -> list[CharSpan]:
    out = []
    for _ in range(draw(st.integers(0, max_size))):
        start = draw(st.integers(0, 40))
        out.append((draw(st.sampled_from(DOCS)), start, start + draw(st.integers(0, 15))))
    return out


def brute_force(returned: list[CharSpan], evidence: list[CharSpan], omega: list[CharSpan]) -> tuple[float, ...]:
    def chars(ss: list[CharSpan]) -> set[tuple[str, int]]:
        return {(d, i) for d, s, e in ss for i in range(s, e)}

    e, r, o = chars(evidence), chars(returned), chars(omega)
    if not e:
        return (NAN,) * 4
    return len(e & r) / len(e), len(e & r) / len(r) if r else 0.0, len(e & r) / len(e | r), len(e & o) / len(e | o)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(spans(6), spans(3), spans(5)), min_size=1, max_size=6), st.integers(0, 3))
def test_vectorised_equals_per_question_equals_brute_force(
    questions: list[tuple[list[CharSpan], list[CharSpan], list[CharSpan]]], tail: int
) -> None:
    returned_lists = [q[0] for q in questions]
    evidence = [q[1] for q in questions]
    omega = [q[2] for q in questions]
    width = max(len(r) for r in returned_lists) + tail
    doc_ids, starts, ends, returned = pool_arrays(returned_lists, width, unreturned_tail=tail)
    got = char_measures(doc_ids, starts, ends, returned, evidence, omega)
    for q, (r, e, o) in enumerate(questions):
        one = scores(char_measures_one(r, e, o))
        row = tuple(float(v[q]) for v in (got.recall, got.precision, got.iou, got.precision_omega))
        # Both forms divide the same exact integers, so they agree bit for bit.
        assert np.array_equal(np.array(row), np.array(one), equal_nan=True), (q, row, one)
        assert_scores(one, brute_force(r, e, o), f"brute force {q}")


@settings(max_examples=200, deadline=None)
@given(spans(12), st.lists(spans(3), min_size=1, max_size=4))
def test_overlapping_units_equals_brute_force(units: list[CharSpan], evidence: list[list[CharSpan]]) -> None:
    got = overlapping_units([u[0] for u in units], [u[1] for u in units], [u[2] for u in units], evidence)
    for q, question in enumerate(evidence):
        expected = {u for u in units for d, s, e in question if u[0] == d and min(u[2], e) - max(u[1], s) > 0}
        assert got[q] == tuple(sorted(expected))
