"""The scoring stage of one unit: judge the pool against the gold spans, slice every grid point.

Every (top_k, threshold) of a chunking is a slice of one ranked pool, so this
stage costs no model call: a grid grown by a top_k or a threshold re-runs only
this stage.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from evalkit.chunking import relevance
from evalkit.cost.apply import returned_tokens
from evalkit.cost.tokens import estimate_tokens, unit_token_counts
from evalkit.pipeline.plan import SweepPlan
from evalkit.pipeline.units import Units
from evalkit.records import ChunkingSpec, Question
from evalkit.retrieval.filters import Access, leaked
from evalkit.retrieval.pools import CandidatePool
from evalkit.scoring.calibration import best_scores
from evalkit.scoring.ir.chars import char_measures, overlapping_units
from evalkit.scoring.ir.forms import WRITTEN
from evalkit.scoring.slicing import PoolJudgement, best_score, slice_metrics


def judge(
    questions: Sequence[Question],
    pool: CandidatePool,
    units: Units,
    tau: float,
    index: relevance.UnitIndex | None = None,
) -> PoolJudgement:
    """Project every question's evidence spans onto the chunking (DESIGN §2).

    Per question only the units of its evidence documents are judged (``index`` groups them once per
    chunking), so scoring does not grow with the corpus: distractor documents cost nothing here.
    """
    index = unit_index(units) if index is None else index
    relevant = np.zeros(pool.indices.shape, dtype=bool)
    n_relevant = np.zeros(len(questions), dtype=np.int64)
    for row, question in enumerate(questions):
        if question.evidence_mode == "none":
            continue
        relevant_units = relevance.index_relevant_rows(question, index, tau)
        n_relevant[row] = relevant_units.size
        relevant[row] = np.isin(pool.indices[row], relevant_units) & (pool.indices[row] >= 0)
    return PoolJudgement(relevant=relevant, scores=pool.scores, n_relevant=n_relevant)


def _pool_spans(pool: CandidatePool, units: Units) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Document, start and end of every pool entry (n_q, N); entries past the end are never returned."""
    # Padded by one entry that -1 (no hit) indexes: a chunking with no units at all (an external retriever
    # that returned nothing) has nothing for np.maximum(indices, 0) to land on.
    at = pool.indices
    return np.append(units.doc_ids, "")[at], np.append(units.starts, 0)[at], np.append(units.ends, 0)[at]


def unit_index(units: Units) -> relevance.UnitIndex:
    """The chunking's units grouped by document, built once and read by every question."""
    return relevance.build_unit_index(units.starts, units.ends, units.doc_ids)


def _held_whole(index: relevance.UnitIndex, doc_id: str, start: int, end: int) -> bool:
    rows = index.rows_by_doc.get(doc_id)
    return rows is not None and bool(np.any((index.starts[rows] <= start) & (index.ends[rows] >= end)))


def gold_cut_share(questions: Sequence[Question], units: Units, index: relevance.UnitIndex | None = None) -> float:
    """Share of answerable questions whose gold span no single unit holds whole (cut by a boundary)."""
    answerable = [q for q in questions if q.evidence_mode != "none"]
    if not answerable:
        return float("nan")
    index = unit_index(units) if index is None else index
    cut = 0
    for question in answerable:
        whole = [_held_whole(index, s.doc_id, s.start, s.end) for s in question.evidence]
        if (question.evidence_mode == "any" and not any(whole)) or (question.evidence_mode == "all" and not all(whole)):
            cut += 1
    return cut / len(answerable)


def score_chunking(
    plan: SweepPlan,
    spec: ChunkingSpec,
    questions: Sequence[Question],
    pool: CandidatePool,
    units: Units,
    judgement: PoolJudgement,
    token_family: str,
    unit_access: Access,
    advised: Sequence[float] = (),
) -> Iterator[pd.DataFrame]:
    """Rows for every (top_k, threshold) x question of one chunking (slices of one pool), one grid point at a time.

    A generator: the chunking's rows are questions x grid points, so the caller writes each block as it
    comes instead of holding them all (their concatenation is the chunking's rows table). ``advised``: thresholds
    off the grid that the run's advice names (the calibration's), scored from the same pool at every top_k
    (column ``off_grid``) so the gate judges them like any grid point before they are advised.
    """
    unit_tokens = pool_token_counts(pool, units, token_family)
    answerable = np.array([q.evidence_mode != "none" for q in questions])
    base = question_columns(questions, pool, judgement, token_family)
    spans = _pool_spans(pool, units)
    evidence = [[(e.doc_id, e.start, e.end) for e in q.evidence] for q in questions]
    omega = overlapping_units(units.doc_ids, units.starts, units.ends, evidence)
    multi_hop = np.array([q.evidence_mode == "all" for q in questions])
    first_with: dict[bytes, str] = {}  # the returned lists of a grid point -> the first grid point returning them
    extra = [t for t in advised if not np.isclose(plan.thresholds, t, rtol=1e-9, atol=1e-12).any()]
    thresholds = sorted({*plan.thresholds, *extra})
    for k in plan.top_ks:
        for threshold in thresholds:
            sliced = slice_metrics(judgement, k, threshold)
            own_id = config_id(spec.key, plan.retriever.name, plan.reranker.name, k, threshold)
            same_as = first_with.setdefault(returned_key(sliced.returned), own_id)
            chars = char_measures(*spans, sliced.returned, evidence, omega)
            # Multi-hop recall: the share of evidence characters the returned chunks cover together (a chunk
            # inside a long evidence span covers its own characters, not the whole span).
            values = dict(sliced.values) | {"recall": np.where(multi_hop, chars.recall, sliced.values["hit"])}
            na = np.where(answerable, 1.0, np.nan)  # IR metrics are undefined without gold
            ranking = {m.name: values[m.name] * na for m in WRITTEN if m.answerable_only}
            by_char = {name: v * na for name, v in chars.columns().items()}
            abstention = {m.name: values[m.name] for m in WRITTEN if not m.answerable_only}
            tokens = returned_tokens(sliced.returned, pool.indices, unit_tokens)
            frame = pd.DataFrame(
                base
                | {
                    "chunking": spec.key,
                    "chunker": spec.chunker,
                    "chunk_size": spec.chunk_size,
                    "chunk_overlap": spec.chunk_overlap,
                    "retriever": plan.retriever.name,
                    "reranker": plan.reranker.name,
                    "top_k": k,
                    "threshold": threshold,
                }
                | ranking
                | by_char
                | abstention
                | {
                    "n_returned": sliced.n_returned,
                    "returned_tokens": tokens,
                    "leaked_units": leaked(sliced.returned, pool.indices, unit_access.visible),
                    "outdated_units": leaked(sliced.returned, pool.indices, unit_access.current),
                    "same_as": "" if same_as == own_id else same_as,
                    "lists_key": lists_key(sliced.returned, pool.indices, units, tokens),
                    "off_grid": threshold in extra,
                }
            )
            frame.insert(0, "config_id", config_ids(frame))
            yield frame


def question_columns(
    questions: Sequence[Question], pool: CandidatePool, judgement: PoolJudgement, token_family: str
) -> dict[str, Any]:
    """The columns of a chunking's rows that every grid point shares: each question's identity and pool scores."""
    best_relevant, best_irrelevant = best_scores(pool.scores, judgement.relevant)
    return {
        "question_id": [q.id for q in questions],
        "lang": [q.lang for q in questions],
        "evidence_mode": [q.evidence_mode for q in questions],
        "answerable": np.array([q.evidence_mode != "none" for q in questions]),
        "best_score": best_score(pool.scores),
        "best_relevant_score": best_relevant,
        "best_irrelevant_score": best_irrelevant,
        "gold_rank_in_pool": np.where(judgement.relevant.any(axis=1), judgement.relevant.argmax(axis=1) + 1, 0),
        "n_relevant_units": judgement.n_relevant,
        "question_tokens": [estimate_tokens(q.question, token_family) for q in questions],
    }


def pool_token_counts(pool: CandidatePool, units: Units, token_family: str) -> np.ndarray:
    """Estimated tokens of every unit some question's pool holds (0 for the others, which no slice returns):
    the estimate reads each character, so counting every unit of a large corpus cost more than the slicing."""
    counts = np.zeros(len(units.texts), dtype=np.int64)
    members = np.unique(pool.indices[pool.indices >= 0])
    counts[members] = unit_token_counts([units.texts[int(i)] for i in members], token_family)
    return counts


def returned_key(returned: np.ndarray) -> bytes:
    """What identifies a grid point's returned lists within one chunking (one pool): the packed returned mask.

    Two grid points of one pool with the same mask return the same units in the same order to every question,
    so every measure of them is the same: the second is a collapsed duplicate (e.g. a threshold below every
    score the top_k reaches), reported by its ``same_as`` column instead of being counted as a distinct config.
    """
    return hashlib.blake2b(np.packbits(returned, axis=None).tobytes() + repr(returned.shape).encode()).digest()


def lists_key(returned: np.ndarray, indices: np.ndarray, units: Units, tokens: np.ndarray) -> str:
    """What identifies a grid point's returned lists across chunkings: every question's returned spans in order.

    Two chunkings whose returned units are the same document spans in the same order for every question (e.g.
    documents shorter than one chunk, where overlap changes nothing) give every measure alike: the grid points
    are one config (:func:`evalkit.scoring.aggregate.with_twins`), whatever their chunking, threshold or k.
    ``tokens`` (per question, the returned lists' prompt tokens) keeps apart lists whose spans match but whose
    texts do not (a chunker that prefixes context).
    """
    rows, ranks = np.nonzero(returned)  # row-major: each question's returned entries in rank order
    unit = indices[rows, ranks]
    digest = hashlib.blake2b(digest_size=16)
    digest.update(repr(returned.shape[0]).encode())
    digest.update(np.ascontiguousarray(rows, dtype=np.int64).tobytes())
    digest.update("\x00".join(map(str, np.asarray(units.doc_ids, dtype=object)[unit])).encode())
    digest.update(np.ascontiguousarray(np.asarray(units.starts)[unit], dtype=np.int64).tobytes())
    digest.update(np.ascontiguousarray(np.asarray(units.ends)[unit], dtype=np.int64).tobytes())
    digest.update(np.ascontiguousarray(tokens, dtype=np.float64).tobytes())
    return digest.hexdigest()


def config_id(chunking: str, retriever: str, reranker: str, top_k: int, threshold: float) -> str:
    """One grid point's id, e.g. ``recursive-s512-o64|hybrid|none|k5|t0.3`` (as :func:`config_ids` builds it)."""
    return f"{chunking}|{retriever}|{reranker}|k{top_k}|t{threshold:g}"


def config_ids(rows: pd.DataFrame) -> pd.Series:
    """A readable id per grid point, e.g. ``recursive-s512-o64|hybrid|none|k5|t0.3``."""
    return (
        rows["chunking"]
        + "|"
        + rows["retriever"]
        + "|"
        + rows["reranker"]
        + "|k"
        + rows["top_k"].astype(str)
        + "|t"
        + rows["threshold"].map(lambda t: f"{t:g}")
    )


def pool_table(questions: Sequence[Question], pool: CandidatePool, units: Units, relevant: np.ndarray) -> pd.DataFrame:
    """The candidate pool in long form, for the report's drill-down."""
    rows, ranks = np.nonzero(pool.indices >= 0)
    unit_index = pool.indices[rows, ranks]
    return pd.DataFrame(
        {
            "question_id": np.array([q.id for q in questions], dtype=object)[rows],
            "rank": ranks + 1,
            "unit_id": np.array(units.ids, dtype=object)[unit_index],
            "doc_id": units.doc_ids[unit_index],
            "start": units.starts[unit_index],
            "end": units.ends[unit_index],
            "score": pool.scores[rows, ranks],
            "relevant": relevant[rows, ranks],
        }
    )
