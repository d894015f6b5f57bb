"""Which questions, and which context items each arm offers them (pure)."""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Mapping, Sequence
from typing import Any

from evalkit.answers.context import ContextItem, file_items, whole_item
from evalkit.answers.pools import gold_doc_ids
from evalkit.answers.position.clean import SkipReason, clean_context
from evalkit.answers.position.settings import Arm, PositionSettings, StuffScope, SubsetSpec
from evalkit.records import Document, Question


def _stable_int(*parts: Any) -> int:
    """A 63-bit integer from ``parts``, the same on every machine and Python run (no ``hash()``)."""
    digest = hashlib.sha256(json.dumps([str(p) for p in parts]).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def shuffle_seed(seed: int, question_id: str, repeat: int) -> int:
    """Seed of repeat ``repeat``'s shuffle for one question: adding a question never reshuffles another."""
    return _stable_int("position-shuffle", seed, question_id, repeat)


def _allocate(total: int, sizes: Mapping[str, int]) -> dict[str, int]:
    """Split ``total`` over strata proportionally to ``sizes`` (largest remainder; ties by name), capped by size."""
    available = sum(sizes.values())
    total = min(total, available)
    if total <= 0:
        return dict.fromkeys(sizes, 0)
    quotas = {name: total * size / available for name, size in sizes.items()}
    counts = {name: min(sizes[name], math.floor(q)) for name, q in quotas.items()}
    by_remainder = sorted(sizes, key=lambda name: (-(quotas[name] - math.floor(quotas[name])), name))
    while sum(counts.values()) < total:
        for name in by_remainder:
            if sum(counts.values()) < total and counts[name] < sizes[name]:
                counts[name] += 1
    return counts


def choose_subset(questions: Sequence[Question], spec: SubsetSpec) -> tuple[Question, ...]:
    """A seeded subset, stratified by ``lang`` within answerable and unanswerable; in the given order.

    ``spec.unanswerable`` unanswerable questions (or all there are) and the
    rest answerable, each side split over languages proportionally (largest
    remainder). Without a size, or a size of at least the set, every question.
    """
    if spec.size is None or spec.size >= len(questions):
        return tuple(questions)
    rng = random.Random(_stable_int("position-subset", spec.seed))
    answerable = [q for q in questions if q.answerable]
    unanswerable = [q for q in questions if not q.answerable]
    n_unanswerable = min(spec.unanswerable, len(unanswerable), spec.size)
    n_answerable = min(spec.size - n_unanswerable, len(answerable))
    n_unanswerable = min(spec.size - n_answerable, len(unanswerable))  # top up when answerable run short
    chosen: set[str] = set()
    for pool, n in ((answerable, n_answerable), (unanswerable, n_unanswerable)):
        strata: dict[str, list[Question]] = {}
        for question in pool:
            strata.setdefault(question.lang, []).append(question)
        counts = _allocate(n, {lang: len(members) for lang, members in sorted(strata.items())})
        for lang in sorted(strata):
            chosen.update(q.id for q in rng.sample(strata[lang], counts[lang]))
    return tuple(q for q in questions if q.id in chosen)


def scope_documents(question: Question, documents: Mapping[str, Document]) -> tuple[Document, ...]:
    """Documents the ``stuff`` arm puts in the context: the question's scope tags, else all, in the given order.

    ``tags.context_doc_ids`` (a list) and ``tags.scope_doc_id`` (an id or a
    list) name the documents in scope; with neither, every document is.
    """
    named: list[str] = []
    for tag in ("context_doc_ids", "scope_doc_id"):
        value = question.tags.get(tag)
        if value:
            named.extend([value] if isinstance(value, str) else [str(v) for v in value])
    if not named:
        return tuple(documents.values())
    unknown = [doc_id for doc_id in named if doc_id not in documents]
    if unknown:
        raise ValueError(f"question {question.id!r} scopes unknown documents: {unknown}")
    return tuple(documents[doc_id] for doc_id in dict.fromkeys(named))


def stuffed_documents(
    question: Question, ranked: Sequence[ContextItem], documents: Mapping[str, Document], scope: StuffScope
) -> tuple[Document, ...]:
    """Documents the ``stuff`` arm offers, the gold's first.

    ``document``: the gold's whole document(s); a question without evidence
    (unanswerable) gets the document of its best-ranked pool unit, what a
    retriever would have stuffed. ``corpus``: those first, then the documents in
    scope (:func:`scope_documents`) in the order the pool ranks them, then the
    rest; the budget keeps as many as the window holds.
    """
    first = gold_doc_ids(question) or tuple(dict.fromkeys(item.doc_id for item in ranked[:1]))
    if scope == "document":
        return tuple(documents[doc_id] for doc_id in first if doc_id in documents)
    in_scope = {doc.doc_id: doc for doc in scope_documents(question, documents)}
    order = [*first, *(item.doc_id for item in ranked), *in_scope]
    return tuple(in_scope[doc_id] for doc_id in dict.fromkeys(order) if doc_id in in_scope)


def arm_items(
    arm: Arm,
    question: Question,
    ranked: Sequence[ContextItem],
    documents: Mapping[str, Document],
    settings: PositionSettings,
) -> tuple[tuple[ContextItem, ...], SkipReason]:
    """The items ``arm`` offers the context for ``question`` (``ranked``: its pool, best first), or why none.

    Retrieval arms are clean (:func:`~evalkit.answers.position.clean.clean_context`) unless ``position.clean``
    is false; ``stuff`` items are
    scored by their order so the budget drops the last documents first.
    """
    if arm.kind == "closed":
        return (), ""
    if arm.kind == "stuff":
        docs = stuffed_documents(question, ranked, documents, settings.stuff.scope)
        gold = set(gold_doc_ids(question))
        return tuple(whole_item(doc, score=-float(i), is_gold=doc.doc_id in gold) for i, doc in enumerate(docs)), ""
    if arm.kind == "retrieve":
        if not settings.clean:
            return tuple(ranked[: arm.k]), ""
        picked = clean_context(question, ranked, arm.k)
        return picked.items, picked.reason
    return file_items(ranked[: arm.k], documents, gold_doc_ids(question)), ""
