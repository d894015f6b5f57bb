"""Differential tests: evalkit's metrics against ranx and against ragas.

1. ranx (``hit_rate``, ``precision``, ``recall``, ``mrr``, ``ndcg`` at several
   cut-offs) on a realistic run over the real labelled set ``cmrc2018-zh``:
   fixed 200-character windows (also overlapping ones, so that a question has
   several relevant chunks), relevance from ``evalkit.chunking.relevance``, chunks
   ranked by a deterministic character-bigram scorer, optionally cut by a
   score threshold (lists of every length, empty ones included).
2. ragas' context precision (the average-precision step that turns
   per-context verdicts into the score) on random verdict lists.

Every value must agree to 1e-9.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType, SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalkit.chunking.relevance import build_unit_index, index_relevance_matrix
from evalkit.records import Question, Span
from evalkit.scoring.ir.context_precision import context_precision_at_k
from evalkit.scoring.ir.hit import hit_at_k
from evalkit.scoring.ir.ndcg import ndcg_at_k
from evalkit.scoring.ir.precision import precision_at_k, recall_at_k
from evalkit.scoring.ir.reciprocal_rank import reciprocal_rank

TOL = 1e-9
LABELSET = Path(__file__).resolve().parents[1].parent / "shared" / "labelsets" / "cmrc2018-zh"
WINDOW = 200
N_QUESTIONS = 300
POOL = 20
CUTOFFS = (1, 3, 5, 10, 20, 50)  # 50 is past the end of every list

# ranx metric name -> evalkit's function as fn(rel, k, n_relevant)
OURS = {
    "hit_rate": lambda rel, k, n: hit_at_k(rel, k),
    "precision": lambda rel, k, n: precision_at_k(rel, k),
    "recall": recall_at_k,
    "mrr": lambda rel, k, n: reciprocal_rank(rel, k),
    "ndcg": ndcg_at_k,
}


# A realistic run over the real labelled set --------------------------------------


@dataclass(frozen=True)
class Corpus:
    docs: dict[str, str]
    questions: list[Question]


def read_labelset(folder: Path) -> Corpus:
    """Read docs/*.md and questions.jsonl with the standard library (no loader)."""
    docs = {}
    for path in sorted((folder / "docs").glob("*.md")):
        with path.open(encoding="utf-8", newline="") as handle:  # offsets count "\r" too
            docs[path.stem] = handle.read()
    questions = []
    with (folder / "questions.jsonl").open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            row = json.loads(line)
            questions.append(
                Question(
                    id=row["id"],
                    question=row["question"],
                    answers=tuple(row["answers"]),
                    answerable=row["answerable"],
                    evidence=tuple(Span(e["doc_id"], e["start"], e["end"], e["text"]) for e in row["evidence"]),
                    evidence_mode=row["evidence_mode"],
                    tags=row.get("tags", {}),
                    line=number,
                )
            )
    return Corpus(docs, questions)


def bigrams(text: str) -> set[str]:
    return {text[i : i + 2] for i in range(len(text) - 1) if not text[i : i + 2].isspace()}


@dataclass(frozen=True)
class Judged:
    """One question's ranked pool, judged."""

    qid: str
    chunk_ids: tuple[str, ...]
    """Ranked chunk ids, best first."""
    scores: tuple[float, ...]
    """Unique, strictly decreasing scores for ranx (it re-sorts by score)."""
    rel: tuple[bool, ...]
    """evalkit's relevance of the ranked chunks."""
    relevant_ids: frozenset[str]
    """Every relevant chunk of the chunking: the qrels."""

    @property
    def n_relevant(self) -> int:
        return len(self.relevant_ids)


def judged_run(corpus: Corpus, stride: int, tau: float, threshold: float | None) -> list[Judged]:
    """Rank 200-character windows for the first questions; judge them with evalkit.chunking.relevance."""
    doc_ids, starts, ends, texts = [], [], [], []
    for doc_id, text in corpus.docs.items():
        for start in range(0, len(text), stride):
            doc_ids.append(doc_id)
            starts.append(start)
            ends.append(min(start + WINDOW, len(text)))
            texts.append(text[start : start + WINDOW])
    chunk_ids = [f"{d}#{s}-{e}" for d, s, e in zip(doc_ids, starts, ends, strict=True)]
    index = build_unit_index(starts, ends, doc_ids)

    questions = corpus.questions[:N_QUESTIONS]
    vocab = sorted(set().union(*(bigrams(q.question) for q in questions)))
    column = {gram: j for j, gram in enumerate(vocab)}
    in_chunk = np.zeros((len(texts), len(vocab)), dtype=np.float64)
    for i, text in enumerate(texts):
        for gram in bigrams(text) & column.keys():
            in_chunk[i, column[gram]] = 1.0
    idf = np.log((len(texts) + 1) / (in_chunk.sum(axis=0) + 0.5))
    in_question = np.zeros((len(questions), len(vocab)), dtype=np.float64)
    for i, question in enumerate(questions):
        for gram in bigrams(question.question):
            in_question[i, column[gram]] = 1.0
    scores = (in_question * idf) @ in_chunk.T

    run = []
    for i, question in enumerate(questions):
        relevant = index_relevance_matrix(question, index, tau)
        # best score first; ties broken by chunk order, so the order is total
        order = np.lexsort((np.arange(len(texts)), -scores[i]))[:POOL]
        if threshold is not None:
            order = order[scores[i, order] >= threshold]
        run.append(
            Judged(
                qid=question.id,
                chunk_ids=tuple(chunk_ids[j] for j in order),
                # ranx re-sorts by score: give it unique, strictly decreasing scores
                scores=tuple(float(POOL - rank) for rank in range(len(order))),
                rel=tuple(bool(relevant[j]) for j in order),
                relevant_ids=frozenset(chunk_ids[j] for j in np.flatnonzero(relevant)),
            )
        )
    return run


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    if not (LABELSET / "questions.jsonl").is_file():
        pytest.skip(f"labelled set cmrc2018-zh not found at {LABELSET} (shared data not mounted)")
    corpus = read_labelset(LABELSET)
    for question in corpus.questions:  # offsets really index the text as read
        for span in question.evidence:
            assert corpus.docs[span.doc_id][span.start : span.end] == span.text
    return corpus


@pytest.fixture(scope="module")
def ranx() -> ModuleType:
    return pytest.importorskip("ranx", reason="ranx is not installed")


def ranx_scores(ranx: ModuleType, run: list[Judged], metrics: list[str]) -> dict[str, dict[str, float]]:
    """Per-question ranx scores.

    A question without any relevant chunk gets an empty qrels entry: ranx
    0.3.21 keeps it and scores it 0.0 on every metric (as long as some other
    query has a relevant document; trec_eval would skip it instead).
    """
    qrels = ranx.Qrels({j.qid: dict.fromkeys(sorted(j.relevant_ids), 1) for j in run})
    ranx_run = ranx.Run({j.qid: dict(zip(j.chunk_ids, j.scores, strict=True)) for j in run})
    assert sorted(qrels.keys()) == sorted(j.qid for j in run)
    ranx.evaluate(qrels, ranx_run, metrics, return_mean=False)
    return {metric: dict(ranx_run.scores[metric]) for metric in metrics}


@pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaTypeSafetyWarning")
@pytest.mark.parametrize(
    ("stride", "tau", "threshold"),
    [(200, 1.0, None), (200, 1.0, 10.0), (100, 1.0, None), (100, 0.5, 10.0)],
    ids=["fixed", "fixed-threshold", "overlap", "overlap-tau0.5-threshold"],
)
def test_ranking_metrics_match_ranx(
    corpus: Corpus, ranx: ModuleType, stride: int, tau: float, threshold: float | None
) -> None:
    run = judged_run(corpus, stride, tau, threshold)
    metrics = [f"{name}@{k}" for name in OURS for k in CUTOFFS]
    reference = ranx_scores(ranx, run, metrics)

    # the run is realistic and exercises the interesting cases
    n_relevant = [j.n_relevant for j in run]
    if stride == WINDOW and tau == 1.0:
        assert min(n_relevant) == 0  # some answers straddle a window boundary
    else:
        assert max(n_relevant) >= 3  # overlapping windows: several relevant chunks
    assert 0.5 < np.mean([hit_at_k(j.rel, 5) for j in run]) < 1.0
    if threshold is not None:
        lengths = {len(j.rel) for j in run}
        assert 0 in lengths and POOL in lengths and len(lengths) > 5

    for judged in run:
        for name, ours in OURS.items():
            for k in CUTOFFS:
                value = ours(judged.rel, k, judged.n_relevant)
                expected = reference[f"{name}@{k}"][judged.qid]
                assert math.isclose(value, expected, rel_tol=0.0, abs_tol=TOL), (judged.qid, name, k, value, expected)
                if judged.n_relevant == 0:
                    assert value == 0.0  # nothing to find: 0 on every metric, as in ranx


# ragas' context precision ----------------------------------------------------------


@pytest.fixture(scope="module")
def ragas_average_precision() -> Iterator[SimpleNamespace]:
    """ragas' own verdicts-to-score functions, imported with telemetry off."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAGAS_DO_NOT_TRACK", "true")
        assert os.environ["RAGAS_DO_NOT_TRACK"] == "true"
        try:
            from ragas.metrics._context_precision import (
                LLMContextPrecisionWithReference,
                Verification,
            )
            from ragas.metrics.collections.context_precision.metric import (
                ContextPrecisionWithReference,
            )
        except ImportError as error:  # not installed, or a broken langchain pin
            pytest.skip(f"ragas cannot be imported ({error}); pip install ragas==0.4.3 langchain-community==0.4.1")
        legacy = LLMContextPrecisionWithReference()  # what ragas.metrics.context_precision runs

        def from_legacy(verdicts: list[int]) -> float:
            return legacy._calculate_average_precision([Verification(reason="", verdict=v) for v in verdicts])

        def from_collections(verdicts: list[int]) -> float:
            # a pure function on a class that needs an LLM to build; it never reads self
            return ContextPrecisionWithReference._calculate_average_precision(None, verdicts)  # type: ignore[arg-type]

        yield SimpleNamespace(legacy=from_legacy, collections=from_collections)


@settings(max_examples=400, deadline=None)
@given(verdicts=st.lists(st.booleans(), max_size=40), k=st.integers(1, 50))
def test_context_precision_matches_ragas(
    ragas_average_precision: SimpleNamespace, verdicts: list[bool], k: int
) -> None:
    ours = context_precision_at_k(verdicts, k)
    # ragas scores whatever list it is given: give it the top k
    top = [int(v) for v in verdicts[:k]]
    assert math.isclose(ours, ragas_average_precision.legacy(top), rel_tol=0.0, abs_tol=TOL)
    assert math.isclose(ours, ragas_average_precision.collections(top), rel_tol=0.0, abs_tol=TOL)


def test_context_precision_matches_ragas_by_hand(ragas_average_precision: SimpleNamespace) -> None:
    # ragas divides by (relevant + 1e-10): 0.8333333332916666, not 5/6, for [1, 0, 1]
    for verdicts, expected in (([1, 0, 1], 5 / 6), ([0, 1, 0, 1, 1], 1.6 / 3), ([0, 0], 0.0), ([], 0.0)):
        assert math.isclose(context_precision_at_k([bool(v) for v in verdicts], 50), expected, abs_tol=1e-12)
        assert math.isclose(ragas_average_precision.legacy(verdicts), expected, abs_tol=TOL)
        assert ragas_average_precision.legacy(verdicts) <= expected  # the 1e-10 only ever lowers it
