"""Metadata filters applied before retrieval: the as-of date and permissions (pure).

A production RAG system filters by metadata before it ranks: outdated policy
versions and documents a user may not see must never reach the prompt. The
sweep applies the same filters, per question, and counts what would have
leaked without them, so the gate can require zero leakage.

- In effect at a date: ``effective_date <= as_of`` (when given) and
  ``as_of <= expires`` (when given). A superseded version names its
  successor; it stops being in effect when the successor's effective date
  has come (so a question asked before that date still gets the old version).
- Visible to a role: ``meta.acl`` lists roles; ``all`` (or no acl) means everyone.
  A question's role is its ``role`` tag; a question with no role sees only public documents.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalkit.records import Document, Question
from evalkit.retrieval.mask import UnitMask

PUBLIC = "all"


@dataclass(frozen=True)
class FilterSettings:
    """Which metadata filters run before retrieval."""

    enabled: bool = False
    """Apply the filters to retrieval (leakage is counted either way)."""
    as_of: str | None = None
    """Date (YYYY-MM-DD) documents must be in effect at; a question's ``as_of`` tag overrides it."""
    role_tag: str = "role"
    as_of_tag: str = "as_of"


def _date(value: Any) -> dt.date | None:
    if value in (None, ""):
        return None
    return value if isinstance(value, dt.date) else dt.date.fromisoformat(str(value)[:10])


def in_effect(meta: Mapping[str, Any], as_of: dt.date, effective_of: Mapping[str, dt.date | None]) -> bool:
    """Whether a document with this metadata is in effect at ``as_of``."""
    start, expires = _date(meta.get("effective_date")), _date(meta.get("expires"))
    if start is not None and as_of < start:
        return False
    if expires is not None and as_of > expires:
        return False
    successor = meta.get("superseded_by")
    successor_start = effective_of.get(str(successor)) if successor else None
    return not (successor_start is not None and as_of >= successor_start)


def visible_to(meta: Mapping[str, Any], role: str | None) -> bool:
    """Whether a role may see a document."""
    acl = meta.get("acl")
    if not acl:
        return True
    roles = [acl] if isinstance(acl, str) else list(acl)
    return PUBLIC in roles or (role is not None and role in roles)


@dataclass(frozen=True)
class Access:
    """Per question and unit: may this role see it, and is it in effect at the question's date."""

    visible: UnitMask
    """bool (n_q, n_units), one row per distinct (role, date)."""
    current: UnitMask
    """bool (n_q, n_units); all True where no date applies."""

    @property
    def allowed(self) -> UnitMask:
        return self.visible & self.current


def access(
    questions: Sequence[Question], unit_doc_ids: np.ndarray, documents: Sequence[Document], settings: FilterSettings
) -> Access:
    """Visibility and currency of every unit for every question (computed once per distinct role and date)."""
    doc_index = {doc.doc_id: i for i, doc in enumerate(documents)}
    unit_doc = np.array([doc_index[str(d)] for d in unit_doc_ids], dtype=np.int64)
    effective_of = {doc.doc_id: _date(doc.meta.get("effective_date")) for doc in documents}
    row_of = np.zeros(len(questions), dtype=np.intp)
    kinds: dict[tuple[str | None, str | None], int] = {}
    visible, current = [], []
    for row, question in enumerate(questions):
        role = question.tags.get(settings.role_tag)
        as_of = question.tags.get(settings.as_of_tag) or settings.as_of
        key = (None if role is None else str(role), None if as_of is None else str(as_of))
        if key not in kinds:
            kinds[key] = len(kinds)
            doc_visible = np.array([visible_to(doc.meta, key[0]) for doc in documents], dtype=bool)
            date = _date(key[1])
            doc_current = np.array(
                [True if date is None else in_effect(doc.meta, date, effective_of) for doc in documents], dtype=bool
            )
            visible.append(doc_visible[unit_doc])
            current.append(doc_current[unit_doc])
        row_of[row] = kinds[key]
    shape = (len(kinds), len(unit_doc))
    stack = lambda rows: np.array(rows, dtype=bool).reshape(shape)  # noqa: E731  (no question: no row)
    return Access(visible=UnitMask(row_of, stack(visible)), current=UnitMask(row_of, stack(current)))


def leaked(returned: np.ndarray, pool_indices: np.ndarray, allowed_units: UnitMask) -> np.ndarray:
    """Per question: returned units the question may not have (not visible, or not in effect)."""
    if allowed_units.shape[1] == 0:  # no units at all (an external retriever that returned nothing)
        return np.zeros(len(pool_indices), dtype=np.int64)
    safe = np.maximum(pool_indices, 0)
    forbidden = ~allowed_units.at_ranks(safe) & (pool_indices >= 0)
    return (forbidden & returned).sum(axis=1)
