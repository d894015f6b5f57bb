"""Score one generated answer against a labelled question (pure).

The scheme (``squad`` or ``cjk``) is picked per question by :func:`scheme_for`;
the text normalisations, the official SQuAD v2.0 / CMRC 2018 replicas and
evalkit's folds (dash and quote variants, mixed-script tokens, currencies,
number words and Chinese numerals, empty golds) live in
:mod:`evalkit.scoring.normalise` and :mod:`evalkit.scoring.numerals`.

Four answer-match scores, all on the folded tokens: :func:`exact_match`
(SQuAD EM), :func:`token_f1` (SQuAD bag F1 / CMRC longest-run F1),
:func:`contains_match` (a gold occurs as a token run: LLM answers are
sentences) and the primary, :func:`primary_match`: contained, and neither
negated, hedged nor contradicted by another value of the same type
(:mod:`evalkit.scoring.verdict` states the rule and its failure modes). On the
hand-labelled table of ``tests/test_answer_verdicts.py`` (96 answers, English
and Chinese) the primary agrees with 88 labels, containment on the same folds
with 71, and containment before the folds of issue 22 with 55.
:func:`score_answer` calls an answer correct by the primary. Refusals are
compared whole after :func:`refusal_key`.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from evalkit.records import Question
from evalkit.scoring.normalise import (
    CJK_OR_WORD,
    CJK_RE,
    Scheme,
    bag_f1,
    cjk_f1,
    cjk_tokens,
    is_punct_or_symbol,
    match_tokens,
    normalize_cjk,
    normalize_squad,
    run_f1,
    squad_exact,
    squad_f1,
    squad_tokens,
)
from evalkit.scoring.verdict import Reason, judge

__all__ = [
    "CJK_LANGS",
    "DEFAULT_REFUSALS",
    "MIN_QUOTE_CHARS",
    "AnswerScore",
    "cited_doc_ids",
    "cjk_f1",
    "cjk_tokens",
    "contains_match",
    "exact_match",
    "flip_rate",
    "is_refusal",
    "match_tokens",
    "normalize",
    "normalize_cjk",
    "normalize_squad",
    "primary_match",
    "primary_reason",
    "quoted_passages",
    "quotes_valid",
    "refusal_key",
    "scheme_for",
    "score_answer",
    "squad_exact",
    "squad_f1",
    "squad_tokens",
    "strip_citations",
    "token_f1",
]

DEFAULT_REFUSALS = ("I don't have that information", "我没有这方面的信息")
"""The refusal strings the generator is told to answer with when the context lacks the answer."""

CJK_LANGS = frozenset({"zh", "ja", "ko", "yue", "wuu", "cmn", "lzh", "hak", "nan"})
"""Primary language subtags scored with the ``cjk`` scheme."""

MIN_QUOTE_CHARS = 8
"""Quotes shorter than this are not checked (too short to be a verbatim claim)."""

# Language ---------------------------------------------------------------------


def scheme_for(lang: str, text: str = "") -> Scheme:
    """``cjk`` for a CJK language tag (``zh``, ``zh-Hans``, ``ja``, ...), ``squad`` for any other tag.

    Without a tag, ``text`` decides: ``cjk`` when CJK characters are at least
    half of its word units (one CJK character, or one run of other letters and
    digits, is one unit), so a Chinese question naming ``RateLimiter`` is
    ``cjk`` and an English one quoting two Chinese characters is not.
    """
    if lang:
        return "cjk" if re.split(r"[-_]", lang.strip().lower())[0] in CJK_LANGS else "squad"
    units = CJK_OR_WORD.findall(unicodedata.normalize("NFKC", text))
    cjk = sum(1 for unit in units if CJK_RE.fullmatch(unit))
    return "cjk" if units and 2 * cjk >= len(units) else "squad"


def normalize(text: str, scheme: Scheme) -> str:
    """The scheme's normalised form: :func:`normalize_squad` or :func:`normalize_cjk`."""
    return normalize_squad(text) if scheme == "squad" else normalize_cjk(text)


def _match_form(text: str, scheme: Scheme) -> str:
    """What exact match compares: the folded tokens, spaced (SQuAD) or joined (CJK, as normalize_cjk)."""
    return ("" if scheme == "cjk" else " ").join(match_tokens(text, scheme))


# Answer matching --------------------------------------------------------------


def _scored_golds(golds: Sequence[str], scheme: Scheme) -> list[str]:
    """Golds that normalise to something (SQuAD v2.0); when none is left, the empty no-answer ``''``."""
    kept = [gold for gold in golds if _match_form(gold, scheme)]
    return kept or ([""] if golds else [])


def _exact(prediction: str, golds: Sequence[str], scheme: Scheme) -> bool:
    form = _match_form(prediction, scheme)
    return any(_match_form(gold, scheme) == form for gold in _scored_golds(golds, scheme))


def _f1(prediction: str, golds: Sequence[str], scheme: Scheme) -> float:
    f1 = bag_f1 if scheme == "squad" else run_f1
    predicted = match_tokens(prediction, scheme)
    return max((f1(match_tokens(gold, scheme), predicted) for gold in _scored_golds(golds, scheme)), default=0.0)


def _contains_run(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    """``needle`` (non-empty) occurs as a contiguous run of ``haystack``."""
    n = len(needle)
    return n > 0 and any(list(haystack[i : i + n]) == list(needle) for i in range(len(haystack) - n + 1))


def _contains(prediction: str, golds: Sequence[str], scheme: Scheme) -> bool:
    """A non-empty gold matches exactly or occurs as a token run (an empty gold is never contained)."""
    usable = [gold for gold in golds if _match_form(gold, scheme)]
    if _exact(prediction, usable, scheme):
        return True
    predicted = match_tokens(prediction, scheme)
    return any(_contains_run(predicted, match_tokens(gold, scheme)) for gold in usable)


def _reason(prediction: str, golds: Sequence[str], scheme: Scheme) -> Reason:
    usable = [gold for gold in golds if _match_form(gold, scheme)]
    return judge(match_tokens(prediction, scheme), [match_tokens(gold, scheme) for gold in usable])


def exact_match(prediction: str, golds: Sequence[str], lang: str) -> bool:
    """Some gold equals the prediction once both are folded and normalised; False when there is no gold.

    Golds that normalise to nothing are dropped; when all do, the gold is the empty no-answer (SQuAD v2.0).

    ``lang`` is a language tag (``en``, ``zh-Hans``, ...); empty means: decide
    from the golds' text (:func:`scheme_for`).
    """
    return _exact(prediction, golds, scheme_for(lang, " ".join(golds)))


def token_f1(prediction: str, golds: Sequence[str], lang: str) -> float:
    """Best F1 over the golds (SQuAD token F1, or CMRC longest-run F1 for CJK); 0.0 when there is no gold."""
    return _f1(prediction, golds, scheme_for(lang, " ".join(golds)))


def contains_match(prediction: str, golds: Sequence[str], lang: str) -> bool:
    """Some gold occurs in the prediction as a whole run of tokens, or matches exactly.

    Tokens are :func:`match_tokens`: SQuAD tokens of the folded text (dash and
    quote variants to ASCII, number words to digits) or CJK tokens (each CJK
    character; other runs split at punctuation and whitespace; Chinese
    numerals to digits). Token boundaries keep gold ``20`` from matching
    ``200``. Exact match implies containment; a gold that normalises to
    nothing is never contained.
    """
    return _contains(prediction, golds, scheme_for(lang, " ".join(golds)))


def primary_reason(prediction: str, golds: Sequence[str], lang: str) -> Reason:
    """Why the primary verdict is what it is: ``stated`` (correct), ``missing``, ``negated``, ``hedged``
    or ``other value`` (:func:`evalkit.scoring.verdict.judge`)."""
    return _reason(prediction, golds, scheme_for(lang, " ".join(golds)))


def primary_match(prediction: str, golds: Sequence[str], lang: str) -> bool:
    """The primary score: some gold is contained and the answer neither negates it, hedges it with
    ``or``, nor states another value of its type (``It is not 308, it is 136`` is wrong for ``308``)."""
    return primary_reason(prediction, golds, lang) == "stated"


# Refusals ---------------------------------------------------------------------


def refusal_key(text: str) -> str:
    """Comparison form of a refusal: NFKC, casefold, punctuation and symbols deleted, whitespace collapsed.

    ``"  I don’t have that information. "`` and ``"I dont have that information"``
    share one key, as do ``我没有这方面的信息。`` and ``我没有这方面的信息``.
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join("".join(ch for ch in folded if not is_punct_or_symbol(ch)).split())


def is_refusal(text: str, refusals: Iterable[str] = DEFAULT_REFUSALS) -> bool:
    """The whole answer is one of ``refusals`` (compared by :func:`refusal_key`).

    A refusal followed by an attempt at an answer is not a refusal; neither is
    an empty answer.
    """
    key = refusal_key(text)
    return bool(key) and any(key == refusal_key(refusal) for refusal in refusals)


# Citations and quotes ---------------------------------------------------------

_BRACKETS = re.compile(r"\[([^\[\]\n]+)\]")
_DOC_ID = re.compile(r"\w[\w./#-]*")
_QUOTES = re.compile(r"\"([^\"]+)\"|“([^”]+)”|「([^」]+)」|『([^』]+)』")


def _citation_parts(content: str) -> list[str] | None:
    """Doc ids inside one pair of brackets, or None when the brackets hold anything else."""
    parts = re.split(r"\s*[,;]\s*", content.strip())
    return parts if all(_DOC_ID.fullmatch(part) for part in parts) else None


def cited_doc_ids(text: str) -> tuple[str, ...]:
    """Every ``[doc_id]`` cited, deduplicated in order of first citation.

    A doc id is word characters plus ``/ . # -`` (``_`` is a word character);
    ``[a, b]`` and ``[a; b]`` cite both. Brackets holding anything else
    (spaces inside a phrase, markdown link text) are not citations.
    """
    cited: dict[str, None] = {}
    for content in _BRACKETS.findall(text):
        cited.update(dict.fromkeys(_citation_parts(content) or ()))
    return tuple(cited)


def strip_citations(text: str) -> str:
    """``text`` without its citation brackets (each replaced by a space): what answer matching sees."""
    return _BRACKETS.sub(lambda m: " " if _citation_parts(m.group(1)) else m.group(0), text)


def _squash(text: str) -> str:
    return " ".join(text.split())


def quoted_passages(text: str, min_chars: int = MIN_QUOTE_CHARS) -> tuple[str, ...]:
    """Text inside ``"..."``, ``“...”``, ``「...」`` or ``『...』`` with at least ``min_chars`` characters.

    Whitespace is collapsed first (runs to one space, ends stripped); the
    length is counted after that.
    """
    found = (_squash(next(group for group in match if group)) for match in _QUOTES.findall(text))
    return tuple(quote for quote in found if len(quote) >= min_chars)


def quotes_valid(text: str, provided_doc_ids: Collection[str], documents: Mapping[str, str]) -> bool | None:
    """Every quote (see :func:`quoted_passages`) occurs in the current text of some provided document.

    Both sides are whitespace-normalised. ``None`` when the answer quotes
    nothing long enough; a provided doc missing from ``documents`` cannot
    vouch for a quote.
    """
    quotes = quoted_passages(text)
    if not quotes:
        return None
    sources = [_squash(documents[doc_id]) for doc_id in provided_doc_ids if doc_id in documents]
    return all(any(quote in source for source in sources) for quote in quotes)


# One answer -------------------------------------------------------------------


@dataclass(frozen=True)
class AnswerScore:
    """How one answer fares against one question."""

    correct: bool
    """The primary score. Answerable: :func:`primary_match` (a gold answer is stated, not negated,
    hedged or contradicted) and the answer is no refusal. Unanswerable: the answer is a refusal."""
    exact: bool
    """Normalised exact match with some gold answer."""
    contains: bool
    """Some gold answer occurs in the normalised answer on token boundaries."""
    f1: float
    """Best token F1 over the gold answers; NaN on an unanswerable question, where F1 is not defined (a correct
    refusal is not a 0.0 to average in): one rule for every experiment that scores answers."""
    refused: bool
    """The whole answer is a configured refusal."""
    citations: tuple[str, ...]
    """Doc ids cited as ``[doc_id]``, in order of first citation."""
    citations_valid: bool
    """Every cited doc id is among the documents of the provided context (True when none is cited)."""
    quotes_valid: bool | None
    """Every quote of >= 8 characters occurs in a provided document's current text; None without quotes."""
    scheme: Scheme
    """``squad`` or ``cjk``: how the answer was normalised and tokenised."""
    reason: Reason
    """The primary verdict's reason on the answer text (:func:`primary_reason`), refusal or not:
    ``stated`` when a gold is stated cleanly; ``missing``, ``negated``, ``hedged``, ``other value``."""


def score_answer(
    question: Question,
    answer_text: str,
    refusals: Sequence[str],
    provided_doc_ids: Collection[str],
    documents: Mapping[str, str],
) -> AnswerScore:
    """Score ``answer_text`` for ``question``; ``documents`` maps doc_id to the document's current text.

    The scheme comes from the question's ``lang`` tag, else from its text.
    Refusal, the primary verdict, exact match, containment and F1 are judged on the answer without
    its citation brackets (:func:`strip_citations`); citations and quotes on
    the answer as given.
    """
    scheme = scheme_for(question.lang, question.question)
    golds = question.answers
    body = strip_citations(answer_text)
    refused = is_refusal(body, refusals)
    contains = _contains(body, golds, scheme)
    reason = _reason(body, golds, scheme)
    citations = cited_doc_ids(answer_text)
    provided = set(provided_doc_ids)
    return AnswerScore(
        correct=(reason == "stated" and not refused) if question.answerable else refused,
        exact=_exact(body, golds, scheme),
        contains=contains,
        f1=_f1(body, golds, scheme) if question.answerable else math.nan,
        refused=refused,
        citations=citations,
        citations_valid=all(doc_id in provided for doc_id in citations),
        quotes_valid=quotes_valid(answer_text, provided, documents),
        scheme=scheme,
        reason=reason,
    )


# Across repeats ---------------------------------------------------------------


def flip_rate(correct_by_question: Mapping[str, Sequence[bool]]) -> float:
    """Share of questions whose correctness differs between repeats.

    Only questions with at least two repeats count; NaN when there is none.
    """
    repeated = [outcomes for outcomes in correct_by_question.values() if len(outcomes) >= 2]
    if not repeated:
        return math.nan
    return sum(1 for outcomes in repeated if len(set(outcomes)) > 1) / len(repeated)
