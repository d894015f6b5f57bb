"""Which questions resample together (pure): the question's source document, a tag, or the question itself.

Questions written against one document are not independent (same wording, same chunks), so the
statistics resample whole clusters (:mod:`evalkit.scoring.stats.cluster_paired`). ``cluster_by``:

- ``document`` (default): the first evidence span's ``doc_id``; a question without evidence
  (unanswerable) is its own cluster;
- ``question``: every question its own cluster (questions resampled, as before clusters);
- any other value: the name of a question tag; a question without that tag is its own cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from evalkit.records import Question

DOCUMENT = "document"
QUESTION = "question"
OWN = "question:"
"""Prefix of the cluster of a question that is its own cluster (cannot collide with a doc_id's ``doc:``)."""


def cluster_of(question: Question, cluster_by: str) -> str:
    """The cluster label of one question (see the module docstring)."""
    if cluster_by == DOCUMENT:
        return f"doc:{question.evidence[0].doc_id}" if question.evidence else OWN + question.id
    if cluster_by == QUESTION:
        return OWN + question.id
    value = question.tags.get(cluster_by)
    return f"tag:{value}" if isinstance(value, str | int | bool) and str(value) != "" else OWN + question.id


def question_clusters(questions: Iterable[Question], cluster_by: str = DOCUMENT) -> pd.DataFrame:
    """One row per question: question_id, cluster, cluster_by (the run folder's clusters.parquet)."""
    rows = [{"question_id": q.id, "cluster": cluster_of(q, cluster_by)} for q in questions]
    frame = pd.DataFrame(rows, columns=["question_id", "cluster"])
    return frame.assign(cluster_by=cluster_by)


def unit_words(cluster_by: str) -> str:
    """How a statement names the unit resampled: ``by document``, ``by question`` or ``by tag 'role'``."""
    return f"by {cluster_by}" if cluster_by in (DOCUMENT, QUESTION) else f"by tag {cluster_by!r}"


def cluster_map(frame: pd.DataFrame | None) -> pd.Series | None:
    """question_id -> cluster from a clusters table; None (resample questions) when absent or by question."""
    if frame is None or frame.empty or (frame["cluster_by"] == QUESTION).all():
        return None
    return pd.Series(frame["cluster"].astype(str).to_numpy(), index=frame["question_id"].astype(str).to_numpy())


def labels_for(questions: Sequence[object] | np.ndarray, clusters: pd.Series | None) -> np.ndarray | None:
    """The cluster label of each of ``questions`` (a question the map lacks is its own); None: by question."""
    if clusters is None:
        return None
    ids = pd.Index(np.asarray(questions, dtype=object)).astype(str)
    found = clusters.reindex(ids).to_numpy(dtype=object)
    own = np.array([OWN + q for q in ids], dtype=object)
    return np.where(pd.isna(found), own, found)
