"""Label health: what is wrong or too easy in a labelled set, before it scores anything.

:func:`label_health` is pure (documents, questions and the tolerant loader's
stale-label lines in; a frozen :class:`LabelHealth` out). Findings, each a
count and up to five examples:

- ``duplicates``: questions whose normalised text (NFKC, case-folded, no
  punctuation, whitespace collapsed) is equal; counted per group.
- ``near_duplicates``: pairs with character 3-gram Jaccard >= 0.9 on the
  normalised text (exact duplicates excluded), found by a prefix-filtered
  similarity join.
- ``verbatim``: questions copied from their document: one contiguous run of
  at least 80% of the question's characters (case-folded, whitespace
  collapsed, trailing punctuation dropped; questions of 12+ characters)
  occurs in a document the question cites (evidence or source passage).
- ``trivial``: answerable questions whose evidence document is tiny (under
  200 characters of body text, headings aside) or has a single sentence.
- ``stale``: spans whose text no longer matches the document (the loader's
  stale-label lines; the span is dropped, the question kept).
- ``invalid``: other problems that made the tolerant loader skip a record.

Plus one composition line per tag with few values (as ``stats`` prints).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalkit.labels.similarity import longest_common_run, normalise, similar_pairs
from evalkit.labels.stats import composition
from evalkit.records import Document, Question

__all__ = ["Finding", "LabelHealth", "format_health", "label_health"]

MAX_EXAMPLES = 5
_SPACE = re.compile(r"\s+")
_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}(?:[ \t].*)?$", re.MULTILINE)
_SENTENCE_END = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s)|[。！？；…]+[”’」』）]*")
_TRAILING = re.compile(r"[\s?？!！.。:：]+$")


@dataclass(frozen=True)
class Finding:
    """One kind of label problem: how many, and a few examples."""

    name: str
    """duplicates, near_duplicates, verbatim, trivial, stale, invalid."""
    description: str
    count: int
    examples: tuple[str, ...]
    """Up to five one-line examples (question ids and the evidence)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {
            "name": self.name,
            "description": self.description,
            "count": self.count,
            "examples": list(self.examples),
        }


@dataclass(frozen=True)
class LabelHealth:
    """Every label-health finding of one labelled set."""

    name: str
    n_questions: int
    n_documents: int
    findings: tuple[Finding, ...]
    composition: tuple[str, ...]
    """One line per tag with few values, e.g. ``kind: frequent 50% / known_error 50%``."""

    def finding(self, name: str) -> Finding:
        """The finding called ``name``."""
        return next(f for f in self.findings if f.name == name)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {
            "name": self.name,
            "questions": self.n_questions,
            "documents": self.n_documents,
            "findings": {f.name: f.to_dict() for f in self.findings},
            "composition": list(self.composition),
        }


def _clip(text: str, limit: int = 70) -> str:
    text = _SPACE.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _finding(name: str, description: str, examples: Sequence[str], count: int | None = None) -> Finding:
    return Finding(name, description, len(examples) if count is None else count, tuple(examples[:MAX_EXAMPLES]))


def _duplicates(questions: Sequence[Question], texts: Sequence[str]) -> Finding:
    groups: dict[str, list[int]] = defaultdict(list)
    for i, text in enumerate(texts):
        if text:
            groups[text].append(i)
    repeated = [g for g in groups.values() if len(g) > 1]
    examples = [
        f"{len(g)}×: " + ", ".join(questions[i].id for i in g[:4]) + f" — {_clip(questions[g[0]].question)!r}"
        for g in repeated
    ]
    extra = sum(len(g) - 1 for g in repeated)
    return _finding("duplicates", f"groups of questions with equal normalised text ({extra} extra copies)", examples)


def _near_duplicates(questions: Sequence[Question], texts: Sequence[str], threshold: float) -> Finding:
    pairs = [(i, j, s) for i, j, s in similar_pairs(texts, threshold) if texts[i] != texts[j]]
    pairs.sort(key=lambda p: (-p[2], p[0], p[1]))
    examples = []
    for i, j, similarity in pairs[:MAX_EXAMPLES]:
        a, b = questions[i], questions[j]
        differ = " (one answerable, one not)" if a.answerable != b.answerable else ""
        examples.append(f"{a.id} ~ {b.id} J={similarity:.2f}{differ}: {_clip(a.question)!r} / {_clip(b.question)!r}")
    return _finding(
        "near_duplicates", f"question pairs with character 3-gram Jaccard >= {threshold:g}", examples, count=len(pairs)
    )


def _folded(text: str) -> str:
    return _SPACE.sub(" ", text.casefold()).strip()


def _verbatim(questions: Sequence[Question], documents: dict[str, Document], share: float, min_chars: int) -> Finding:
    folded_docs: dict[str, str] = {}
    examples = []
    for question in questions:
        needle = _TRAILING.sub("", _folded(question.question))
        if len(needle) < min_chars:
            continue
        at_least = math.ceil(share * len(needle))
        cited = dict.fromkeys(s.doc_id for s in (*question.evidence, *question.source_passage))
        for doc_id in cited:
            if doc_id not in documents:
                continue
            if doc_id not in folded_docs:
                folded_docs[doc_id] = _folded(documents[doc_id].text)
            haystack = folded_docs[doc_id]
            run = longest_common_run(needle, haystack, at_least)
            if run:
                examples.append(
                    f"{question.id}: {run}/{len(needle)} characters found in {doc_id}: {_clip(question.question)!r}"
                )
                break
    return _finding(
        "verbatim", f"questions with one run of >= {share:.0%} of their characters in their document", examples
    )


def _body(text: str) -> str:
    return _HEADING_LINE.sub("", text).strip()


def _sentences(text: str) -> int:
    return sum(1 for piece in _SENTENCE_END.split(text) if piece.strip())


def _trivial(questions: Sequence[Question], documents: dict[str, Document], tiny_chars: int) -> Finding:
    reasons: dict[str, str] = {}
    for doc_id, doc in documents.items():
        body = _body(doc.text)
        if len(body) < tiny_chars:
            reasons[doc_id] = f"document {doc_id} is tiny ({len(body)} characters of body)"
        elif _sentences(body) <= 1:
            reasons[doc_id] = f"document {doc_id} is a single sentence"
    examples = []
    for question in questions:
        hit = next((reasons[s.doc_id] for s in question.evidence if s.doc_id in reasons), None)
        if question.answerable and hit:
            examples.append(f"{question.id}: {hit}: {_clip(question.question, 50)!r}")
    return _finding(
        "trivial", f"answerable questions whose document is tiny (< {tiny_chars} characters) or one sentence", examples
    )


def label_health(
    name: str,
    documents: Sequence[Document],
    questions: Sequence[Question],
    stale: Sequence[str] = (),
    invalid: Sequence[str] = (),
    near_threshold: float = 0.9,
    verbatim_share: float = 0.8,
    verbatim_min_chars: int = 12,
    tiny_doc_chars: int = 200,
) -> LabelHealth:
    """Every label-health finding for ``questions`` over ``documents``."""
    by_id = {doc.doc_id: doc for doc in documents}
    texts = [normalise(q.question) for q in questions]
    findings = (
        _duplicates(questions, texts),
        _near_duplicates(questions, texts, near_threshold),
        _verbatim(questions, by_id, verbatim_share, verbatim_min_chars),
        _trivial(questions, by_id, tiny_doc_chars),
        _finding("stale", "spans whose text no longer matches the document (span dropped)", list(stale)),
        _finding("invalid", "other problems: the record was skipped", list(invalid)),
    )
    lines = tuple(c.line() for c in composition(questions))
    return LabelHealth(name, len(questions), len(documents), findings, lines)


def format_health(health: LabelHealth) -> str:
    """Plain-text report of :class:`LabelHealth`."""
    lines = [f"label health of {health.name}: {health.n_questions} questions, {health.n_documents} documents", ""]
    width = max(len(f.name) for f in health.findings)
    for finding in health.findings:
        lines.append(f"{finding.name:<{width}}  {finding.count:>6}  {finding.description}")
        lines.extend(f"{'':<{width}}          {example}" for example in finding.examples)
    lines.append("")
    lines.append("composition (share of all questions)")
    lines.extend(f"  {line}" for line in health.composition)
    return "\n".join(lines)
