"""Span-anchored relevance: hand-worked examples and scalar/vectorised agreement."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalkit.chunking.relevance import (
    build_unit_index,
    covered_evidence,
    cumulative_coverage,
    evidence_matrix,
    index_evidence_matrix,
    index_relevance_matrix,
    index_relevant_rows,
    is_relevant,
    n_relevant_units,
    overlap,
    relevance_matrix,
    relevant_evidence,
    span_relevance,
    unit_index_from_spans,
    unit_span,
)
from evalkit.records import Chunk, EvidenceMode, Question, Span


def make_question(mode: EvidenceMode, *evidence: Span) -> Question:
    return Question(
        id="q",
        question="?",
        answers=("x",) if mode != "none" else (),
        answerable=mode != "none",
        evidence=evidence,
        evidence_mode=mode,
    )


# Chunks of a 600-character document "d" cut at 200 characters.
C0, C1, C2 = Span("d", 0, 200), Span("d", 200, 400), Span("d", 400, 600)


# span_relevance ---------------------------------------------------------------


def test_answer_inside_chunk_is_relevant() -> None:
    # overlap 7, min(200, 7) = 7, 7/7 = 1 >= 1
    assert span_relevance(C0, Span("d", 10, 17))


def test_answer_at_chunk_edges_is_relevant() -> None:
    # [190, 200) ends exactly where C0 ends: overlap 10 / 10
    assert span_relevance(C0, Span("d", 190, 200))
    assert not span_relevance(C1, Span("d", 190, 200))  # touches C1 at 200, shares nothing


def test_answer_straddling_two_chunks_is_relevant_to_neither_at_tau_1() -> None:
    answer = Span("d", 195, 205)
    # C0: overlap [195, 200) = 5, min(200, 10) = 10, 5/10 = 0.5 < 1
    assert not span_relevance(C0, answer)
    assert not span_relevance(C1, answer)


def test_tau_half_accepts_half_an_answer() -> None:
    answer = Span("d", 195, 205)
    # 5/10 = 0.5 >= 0.5 (exactly on the boundary) for both chunks
    assert span_relevance(C0, answer, tau=0.5)
    assert span_relevance(C1, answer, tau=0.5)
    # 5/10 = 0.5 < 0.6
    assert not span_relevance(C0, answer, tau=0.6)
    # [193, 205): C0 holds 7 of 12 = 0.583 >= 0.5, C1 holds 5/12 = 0.417 < 0.5
    assert span_relevance(C0, Span("d", 193, 205), tau=0.5)
    assert not span_relevance(C1, Span("d", 193, 205), tau=0.5)


def test_boundary_ratio_is_not_lost_to_rounding() -> None:
    # overlap [93, 100) = 7, shorter 50: 7/50 = 0.14 >= 0.14, but 0.14 * 50 rounds up
    assert 0.14 * 50 > 7
    assert span_relevance(Span("d", 0, 100), Span("d", 93, 143), tau=0.14)
    assert not span_relevance(Span("d", 0, 100), Span("d", 94, 144), tau=0.14)  # 6/50


def test_answer_outside_chunk_or_in_other_document_is_not_relevant() -> None:
    assert not span_relevance(C0, Span("d", 300, 310))
    assert not span_relevance(C0, Span("e", 10, 17))
    assert overlap(C0, Span("e", 10, 17)) == 0


def test_chunk_inside_long_evidence_span_is_relevant() -> None:
    evidence = Span("d", 150, 700)  # 550 characters, longer than a chunk
    # C1 [200, 400): overlap 200, min(200, 550) = 200, 200/200 = 1
    assert span_relevance(C1, evidence)
    # C0 [0, 200): overlap [150, 200) = 50, 50/200 = 0.25
    assert not span_relevance(C0, evidence)
    assert span_relevance(C0, evidence, tau=0.25)
    # [100, 300): overlap 150 / 200 = 0.75: no at tau 1, yes at 0.75
    assert not span_relevance(Span("d", 100, 300), evidence)
    assert span_relevance(Span("d", 100, 300), evidence, tau=0.75)


def test_zero_length_spans_are_never_relevant() -> None:
    assert not span_relevance(C0, Span("d", 5, 5))
    assert not span_relevance(Span("d", 5, 5), Span("d", 0, 10))
    assert not span_relevance(Span("d", 5, 5), Span("d", 5, 5), tau=0.01)


def test_tau_outside_unit_interval_is_rejected() -> None:
    for tau in (0.0, -0.1, 1.5, math.nan):
        with pytest.raises(ValueError, match="tau"):
            span_relevance(C0, Span("d", 10, 17), tau=tau)


# per question -------------------------------------------------------------------


def test_relevant_evidence_and_is_relevant_mode_any() -> None:
    # two annotators marked the same answer at 10 and (a longer form) at 250
    question = make_question("any", Span("d", 10, 17), Span("d", 250, 262))
    assert relevant_evidence(C0, question) == frozenset({0})
    assert relevant_evidence(C1, question) == frozenset({1})
    assert relevant_evidence(C2, question) == frozenset()
    assert is_relevant(C0, question) and is_relevant(C1, question)
    assert not is_relevant(C2, question)
    assert n_relevant_units([C0, C1, C2], question) == 2


def test_mode_none_is_never_relevant_even_with_spans() -> None:
    question = make_question("none", Span("d", 10, 17))
    assert not is_relevant(C0, question)
    assert relevant_evidence(C0, question) == frozenset()
    assert covered_evidence([C0, C1], question) == frozenset()
    assert n_relevant_units([C0, C1, C2], question) == 0
    assert evidence_matrix(question, [0], [200], ["d"]).shape == (1, 0)
    assert not relevance_matrix(question, [0], [200], ["d"]).any()


def test_mode_all_union_of_adjacent_chunks_covers_a_straddling_span() -> None:
    # hop A [190, 210) straddles C0|C1; hop B [500, 510) lies in C2
    question = make_question("all", Span("d", 190, 210), Span("d", 500, 510))
    assert covered_evidence([C0], question) == frozenset()  # 10/20 of A
    assert covered_evidence([C0, C1], question) == frozenset({0})  # 10 + 10 = 20/20 of A
    assert covered_evidence([C2], question) == frozenset({1})
    assert covered_evidence([C1, C2, C0], question) == frozenset({0, 1})
    # neither chunk alone is relevant to A, so only C2 counts in the qrels
    assert n_relevant_units([C0, C1, C2], question) == 1
    # at tau 0.5 C0 alone holds half of A
    assert covered_evidence([C0], question, tau=0.5) == frozenset({0})


def test_mode_all_union_with_a_gap() -> None:
    question = make_question("all", Span("d", 190, 210))
    units = [Span("d", 0, 195), Span("d", 200, 400)]  # [195, 200) is missing
    # union inside A: [190, 195) + [200, 210) = 5 + 10 = 15 of 20 = 0.75
    assert covered_evidence(units, question) == frozenset()
    assert covered_evidence(units, question, tau=0.75) == frozenset({0})
    assert covered_evidence(units, question, tau=0.8) == frozenset()


def test_union_counts_overlapping_units_once() -> None:
    question = make_question("all", Span("d", 100, 160))  # 60 characters
    # alone: [70, 120) holds 20 / min(50, 60) = 0.4; [90, 130) holds 30 / 40 = 0.75
    units = [Span("d", 70, 120), Span("d", 90, 130), Span("other", 100, 160)]
    # together: [100, 120) U [100, 130) = [100, 130): 30 of 60 = 0.5 (not 20 + 30 = 50);
    # the span in the other document adds nothing
    assert covered_evidence(units, question, tau=0.5) == frozenset({0})
    assert covered_evidence(units, question, tau=0.8) == frozenset()


def test_cumulative_coverage_of_a_ranking() -> None:
    question = make_question("all", Span("d", 190, 210), Span("d", 500, 510))
    ranked = [C2, Span("e", 0, 200), C0, C1]
    assert cumulative_coverage(ranked, question) == (
        frozenset({1}),
        frozenset({1}),
        frozenset({1}),
        frozenset({0, 1}),
    )
    assert cumulative_coverage([], question) == ()


def test_unit_span_uses_the_parent() -> None:
    child = Chunk("d#210-250", "d", 210, 250, "x" * 40, parent=Span("d", 200, 400))
    plain = Chunk("d#0-200", "d", 0, 200, "x" * 200)
    assert unit_span(child) == Span("d", 200, 400)
    assert unit_span(plain) == Span("d", 0, 200)
    # a chunk is span-shaped, so it can be judged directly too
    assert span_relevance(plain, Span("d", 10, 17))


def test_matrices_on_a_small_chunking() -> None:
    question = make_question("any", Span("d", 195, 205), Span("d", 250, 262), Span("e", 0, 5))
    starts, ends, docs = [0, 200, 400, 0], [200, 400, 600, 100], ["d", "d", "d", "e"]
    expected = np.array(
        [
            [False, False, False],
            [False, True, False],
            [False, False, False],
            [False, False, True],
        ]
    )
    np.testing.assert_array_equal(evidence_matrix(question, starts, ends, docs), expected)
    np.testing.assert_array_equal(
        relevance_matrix(question, np.array(starts), np.array(ends), np.array(docs)),
        [False, True, False, True],
    )
    index = build_unit_index(starts, ends, docs)
    np.testing.assert_array_equal(index_evidence_matrix(question, index), expected)
    assert not index.starts.flags.writeable
    with pytest.raises(ValueError, match="equal length"):
        evidence_matrix(question, starts, ends[:2], docs)


def test_inputs_are_not_mutated() -> None:
    starts = np.array([0, 200])
    ends = np.array([200, 400])
    docs = np.array(["d", "d"])
    question = make_question("any", Span("d", 10, 17))
    evidence_matrix(question, starts, ends, docs)
    build_unit_index(starts, ends, docs)
    assert starts.flags.writeable and starts.tolist() == [0, 200]
    assert ends.tolist() == [200, 400] and docs.tolist() == ["d", "d"]


# scalar and vectorised paths agree (property) ------------------------------------

DOCS = ("a", "b", "c")


@st.composite
def spans(draw: st.DrawFn, max_len: int = 60) -> Span:
    start = draw(st.integers(0, 120))
    return Span(draw(st.sampled_from(DOCS)), start, start + draw(st.integers(0, max_len)))


TAUS = st.one_of(
    st.sampled_from([1.0, 0.75, 0.7, 0.5, 0.3, 0.1]),
    st.floats(min_value=0.01, max_value=1.0, allow_nan=False),
)


@settings(max_examples=200, deadline=None)
@given(
    units=st.lists(spans(), max_size=25),
    evidence=st.lists(spans(max_len=30), max_size=4),
    mode=st.sampled_from(["any", "all", "none"]),
    tau=TAUS,
)
def test_vectorised_matrices_equal_scalar_functions(
    units: list[Span], evidence: list[Span], mode: EvidenceMode, tau: float
) -> None:
    question = make_question(mode, *evidence)
    starts = np.array([u.start for u in units], dtype=np.int64)
    ends = np.array([u.end for u in units], dtype=np.int64)
    docs = np.array([u.doc_id for u in units], dtype=str)

    by_unit = evidence_matrix(question, starts, ends, docs, tau)
    index = unit_index_from_spans(units)
    n_spans = 0 if mode == "none" else len(evidence)
    assert by_unit.shape == (len(units), n_spans)
    np.testing.assert_array_equal(by_unit, index_evidence_matrix(question, index, tau))
    for i, unit in enumerate(units):
        assert frozenset(np.flatnonzero(by_unit[i]).tolist()) == relevant_evidence(unit, question, tau)

    expected = [is_relevant(unit, question, tau) for unit in units]
    np.testing.assert_array_equal(relevance_matrix(question, starts, ends, docs, tau), np.array(expected, dtype=bool))
    np.testing.assert_array_equal(index_relevance_matrix(question, index, tau), np.array(expected, dtype=bool))
    # The rows form scores each question over its evidence documents only: the same units, ascending.
    np.testing.assert_array_equal(index_relevant_rows(question, index, tau), np.flatnonzero(expected))
    assert n_relevant_units(units, question, tau) == sum(expected)


@settings(max_examples=200, deadline=None)
@given(
    units=st.lists(spans(), max_size=12),
    evidence=st.lists(spans(max_len=30), min_size=1, max_size=3),
    tau=TAUS,
)
def test_coverage_properties(units: list[Span], evidence: list[Span], tau: float) -> None:
    question = make_question("all", *evidence)
    covered = covered_evidence(units, question, tau)
    # one relevant unit is enough to cover a span
    for unit in units:
        assert relevant_evidence(unit, question, tau) <= covered
    # adding units never uncovers a span, and prefixes agree with the direct computation
    prefixes = cumulative_coverage(units, question, tau)
    assert len(prefixes) == len(units)
    for i, prefix in enumerate(prefixes):
        assert prefix == covered_evidence(units[: i + 1], question, tau)
        assert i == 0 or prefixes[i - 1] <= prefix
    assert not prefixes or prefixes[-1] == covered
    # a span covered by the union, one code point at a time, is covered at tau=1
    for j, span in enumerate(evidence):
        points = set(range(span.start, span.end))
        held = {p for u in units if u.doc_id == span.doc_id for p in range(u.start, u.end)}
        if points and points <= held:
            assert j in covered_evidence(units, question, 1.0)
