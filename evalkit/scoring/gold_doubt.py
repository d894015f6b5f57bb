"""The second signal of item analysis: is a flagged question's gold elsewhere, or is the question just hard?

Item analysis (:mod:`evalkit.scoring.items`) flags a question when the configs best on the rest of the set miss
it. Two things look alike there: a wrong gold span (retrieval finds the question's passage, the label points
elsewhere) and a hard question (the gold is right, no config retrieves it: misspellings, vague wording). What
the run already has separates them lexically, without a model: the question's terms, weighted by their inverse
document frequency in the set, are matched against

- the **gold window**: the gold span widened by :data:`CONTEXT` characters on each side (a span that *is* the
  answer holds few question terms; its sentence holds them when the label is right);
- every window of the same length elsewhere in the **gold's own document**;
- every window of the same length in the **documents the configs retrieved** for the question (the pools' top
  ranks).

When a window elsewhere holds at least :data:`FLOOR` of the question's weight and at least :data:`RATIO` times what
the gold window holds, the passage the question was written against is likely that one: the gold is **elsewhere**
(``wrong_span`` when that window is in the gold's own document, ``wrong_document`` when in another document).
Otherwise the gold reads about as well as what the configs found, and the question is **hard**: no config
retrieves it, but nothing says the label is wrong. A plausible wrong passage next to the right one (a near miss)
shares the right one's surroundings and is not told apart by this rule.

The bounds were set on squad2-en with 30 planted wrong gold (seed 7, ``benchmarks/item_kinds.py``): of the 216
questions item analysis flagged there, the 19 planted ones it caught had gold windows holding 0.00-0.34 of the
question's weight (median 0.09) and windows elsewhere 0.48-0.99 (median 0.73); the 197 unplanted ones 0.27 and 0.48
(medians). A difference rule (elsewhere - gold >= 0.2) kept 80 unplanted flags, a ratio of 3 keeps 15, mostly
questions that lean on their paragraph ("What did this agreement do?"). A ratio rather than a fixed ceiling on the
gold's share: the shares move with the set's IDF (a 40-document cut of the same set raises them). Held-out figures
(another seed, the Chinese set) are in the README.

Pure: texts in, records out.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["CONTEXT", "FLOOR", "KINDS", "RATIO", "GoldDoubt", "Lexicon", "doubt_gold", "lexicon", "terms"]

CONTEXT = 250
"""Characters added on each side of the gold span (about a sentence either way), and of every window compared."""
STEP = 50
"""Stride of the windows slid over a document."""
FLOOR = 0.5
"""The gold is doubted only when a window elsewhere holds at least this share of the question's term weight (a
window matching little of the question says nothing) ..."""
RATIO = 3.0
"""... and at least this many times the gold window's share."""
KINDS = ("wrong_span", "wrong_document", "hard")
"""``wrong_span``: a passage of the gold's own document matches the question better; ``wrong_document``: a passage
of a retrieved document does; ``hard``: the gold matches the question as well as anything found."""

_LATIN = re.compile(r"[^\W\d_\u3400-\u9fff]+|\d+")
_CJK = re.compile(r"[\u3400-\u9fff]+")


_SUFFIXES = ("ing", "ed", "es", "s")


def _stem(word: str) -> str:
    """A crude English stem (joined, joins, joining -> join): enough for a question to meet its passage."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def terms(text: str) -> list[tuple[int, str]]:
    """(offset, term) of a text: lowercased, crudely stemmed words, numbers, and character bigrams of CJK runs."""
    out = [(m.start(), _stem(m.group().lower())) for m in _LATIN.finditer(text)]
    for m in _CJK.finditer(text):
        run = m.group()
        out.extend((m.start() + i, run[i : i + 2]) for i in range(max(len(run) - 1, 1)))
    out.sort()
    return out


@lru_cache(maxsize=512)
def _document_terms(text: str) -> tuple[tuple[int, str], ...]:
    """:func:`terms` of a document, kept: every suspect question slides its windows over the same few documents."""
    return tuple(terms(text))


@dataclass(frozen=True)
class Lexicon:
    """Inverse document frequency of every term of a set's documents (unseen terms weigh the most)."""

    idf: Mapping[str, float]
    unseen: float

    def weight(self, term: str) -> float:
        return self.idf.get(term, self.unseen)


def lexicon(texts: Iterable[str]) -> Lexicon:
    """The IDF of every term over the documents (BM25's, always positive)."""
    df: Counter[str] = Counter()
    n = 0
    for text in texts:
        n += 1
        df.update({term for _, term in terms(text)})
    idf = {term: math.log(1 + (n - k + 0.5) / (k + 0.5)) for term, k in df.items()}
    return Lexicon(idf, math.log(1 + (n + 0.5) / 0.5))


@dataclass(frozen=True)
class GoldDoubt:
    """Why a flagged question's gold is doubted, or not."""

    kind: str
    """One of :data:`KINDS`."""
    gold_overlap: float
    """Share of the question's term weight the best gold window holds."""
    elsewhere_overlap: float
    """... that the best window elsewhere (own document or retrieved documents) holds."""
    elsewhere_doc_id: str
    """The document of that window ('' when there is none)."""
    gold_doc_retrieved: bool
    """A gold document is among the documents the configs retrieved."""


def _coverage(question: Mapping[str, float], total: float, found: Iterable[str]) -> float:
    return sum(question[t] for t in set(found) & question.keys()) / total if total > 0 else 0.0


def _windows(tokens: Sequence[tuple[int, str]], length: int, n_chars: int) -> Iterable[tuple[int, set[str]]]:
    """(start, terms) of every window of ``length`` characters, every :data:`STEP` characters."""
    starts = range(0, max(n_chars - length, 0) + 1, STEP)
    i = j = 0
    for start in starts:
        while i < len(tokens) and tokens[i][0] < start:
            i += 1
        j = max(j, i)
        while j < len(tokens) and tokens[j][0] < start + length:
            j += 1
        yield start, {term for _, term in tokens[i:j]}


def doubt_gold(
    question: str,
    gold: Sequence[tuple[str, int, int]],
    texts: Mapping[str, str],
    retrieved: Sequence[str],
    lex: Lexicon,
) -> GoldDoubt:
    """Whether the gold spans ``gold`` ((doc_id, start, end) into ``texts``) or a passage elsewhere fits ``question``.

    ``retrieved``: the documents the configs returned for the question. Windows overlapping a gold window are not
    "elsewhere".
    """
    weights = {t: lex.weight(t) for _, t in terms(question)}
    total = sum(weights.values())
    spans = [(d, s, e) for d, s, e in gold if d in texts]
    gold_cov, length = 0.0, 2 * CONTEXT
    covered: dict[str, list[tuple[int, int]]] = {}
    for doc_id, start, end in spans:
        a, b = max(0, start - CONTEXT), min(len(texts[doc_id]), end + CONTEXT)
        covered.setdefault(doc_id, []).append((a, b))
        gold_cov = max(gold_cov, _coverage(weights, total, (t for _, t in terms(texts[doc_id][a:b]))))
        length = max(length, b - a)
    gold_docs = list(dict.fromkeys(d for d, _, _ in spans))
    best, best_doc = 0.0, ""
    for doc_id in dict.fromkeys([*gold_docs, *(d for d in retrieved if d in texts)]):
        taken = covered.get(doc_id, [])
        for start, found in _windows(_document_terms(texts[doc_id]), length, len(texts[doc_id])):
            if any(start < b and a < start + length for a, b in taken):
                continue
            cov = _coverage(weights, total, found)
            if cov > best:
                best, best_doc = cov, doc_id
    if best >= FLOOR and best >= RATIO * gold_cov:
        kind = "wrong_span" if best_doc in gold_docs else "wrong_document"
    else:
        kind = "hard"
    return GoldDoubt(kind, gold_cov, best, best_doc, any(d in gold_docs for d in retrieved))
