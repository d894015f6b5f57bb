"""Score one generated answer against a labelled question (pure).

Two scoring schemes, picked per question by :func:`scheme_for`:

- ``squad`` (English and other spaced scripts): :func:`normalize_squad`,
  :func:`squad_exact` and :func:`squad_f1` replicate ``normalize_answer``,
  ``compute_exact`` and ``compute_f1`` of the official SQuAD v2.0 evaluation
  script (``evaluate-v2.0.py``, Rajpurkar et al. 2018, distributed with the
  SQuAD 2.0 dev set on CodaLab): lowercase, drop ASCII punctuation, drop the
  articles a/an/the, collapse whitespace; bag-of-tokens F1.
- ``cjk`` (Chinese, Japanese, Korean): :func:`normalize_cjk` folds width with
  NFKC, lowercases, and removes every Unicode punctuation (``P*``) and symbol
  (``S*``) character and all whitespace. F1 follows ``calc_f1_score`` of the
  official CMRC 2018 script (``ymcui/cmrc2018``,
  ``squad-style-data/cmrc2018_evaluate.py``, v5): segment into tokens where
  every CJK character is one token, take the longest common *contiguous*
  token run (``find_lcs``), then precision = lcs / len(prediction tokens),
  recall = lcs / len(gold tokens). Deviations, on purpose: CMRC deletes a
  fixed list of 33 punctuation strings, splits non-Chinese runs with
  ``nltk.word_tokenize`` and compares exact matches without NFKC and with
  whitespace kept; here every ``P*``/``S*`` character becomes a space, non-CJK
  runs split on whitespace (nltk and its downloaded models are not a
  dependency), exact match compares :func:`normalize_cjk` forms, and kana and
  Hangul count as CJK as well as Han (CMRC: ``[\u4e00-\u9fa5]`` only).

LLM answers are sentences, so :func:`contains_match` (a gold answer occurs in
the prediction on token boundaries) is reported beside exact match, and it is
what :func:`score_answer` calls correct. Refusals are compared whole after
:func:`refusal_key`.
"""

from __future__ import annotations

import collections
import math
import re
import string
import unicodedata
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from evalkit.records import Question

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
    "normalize",
    "normalize_cjk",
    "normalize_squad",
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

Scheme = Literal["squad", "cjk"]

DEFAULT_REFUSALS = ("I don't have that information", "我没有这方面的信息")
"""The refusal strings the generator is told to answer with when the context lacks the answer."""

CJK_LANGS = frozenset({"zh", "ja", "ko", "yue", "wuu", "cmn", "lzh", "hak", "nan"})
"""Primary language subtags scored with the ``cjk`` scheme."""

MIN_QUOTE_CHARS = 8
"""Quotes shorter than this are not checked (too short to be a verbatim claim)."""

_CJK_CHARS = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # Han: extension A, unified, compatibility
    "\uac00-\ud7af"  # Hangul syllables
    "\U00020000-\U0003134f"  # Han extensions B-G
)
_CJK = re.compile(f"[{_CJK_CHARS}]")
_CJK_OR_WORD = re.compile(rf"[{_CJK_CHARS}]|[^\W{_CJK_CHARS}]+")


# SQuAD v2.0 (replicated from the official evaluate-v2.0.py) -------------------

_SQUAD_PUNCT = frozenset(string.punctuation)
_SQUAD_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_squad(text: str) -> str:
    """SQuAD v2.0 ``normalize_answer``: lower, drop ASCII punctuation, then articles, collapse whitespace."""
    lowered = text.lower()
    no_punct = "".join(ch for ch in lowered if ch not in _SQUAD_PUNCT)
    no_articles = _SQUAD_ARTICLES.sub(" ", no_punct)
    return " ".join(no_articles.split())


def squad_tokens(text: str) -> list[str]:
    """SQuAD v2.0 ``get_tokens``."""
    return normalize_squad(text).split() if text else []


def squad_exact(gold: str, prediction: str) -> bool:
    """SQuAD v2.0 ``compute_exact`` (as a bool)."""
    return normalize_squad(gold) == normalize_squad(prediction)


def squad_f1(gold: str, prediction: str) -> float:
    """SQuAD v2.0 ``compute_f1``: F1 of the token multisets; 1.0 when both are empty."""
    gold_tokens, pred_tokens = squad_tokens(gold), squad_tokens(prediction)
    if not gold_tokens or not pred_tokens:
        return float(gold_tokens == pred_tokens)  # either is no-answer: 1 if they agree
    num_same = sum((collections.Counter(gold_tokens) & collections.Counter(pred_tokens)).values())
    if num_same == 0:
        return 0.0
    precision, recall = num_same / len(pred_tokens), num_same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


# CJK (CMRC 2018 style) --------------------------------------------------------


def _is_punct_or_symbol(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "PS"


def _fold(text: str) -> str:
    """NFKC (full-width to half-width), lowercase, each ``P*``/``S*`` character to a space."""
    folded = unicodedata.normalize("NFKC", text).lower()
    return "".join(" " if _is_punct_or_symbol(ch) else ch for ch in folded)


def normalize_cjk(text: str) -> str:
    """NFKC, lowercase, without punctuation, symbols or whitespace: ``３６４．６ 公里。`` -> ``3646公里``."""
    return "".join(_fold(text).split())


def cjk_tokens(text: str) -> list[str]:
    """CMRC-style mixed segmentation: each CJK character one token, other runs split on whitespace."""
    return [token for run in _fold(text).split() for token in _CJK_OR_WORD.findall(run) or [run]]


def _longest_common_run(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common contiguous run of ``a`` and ``b`` (CMRC ``find_lcs``)."""
    best, previous = 0, [0] * (len(b) + 1)
    for x in a:
        current = [0] * (len(b) + 1)
        for j, y in enumerate(b):
            if x == y:
                current[j + 1] = previous[j] + 1
                best = max(best, current[j + 1])
        previous = current
    return best


def cjk_f1(gold: str, prediction: str) -> float:
    """CMRC 2018 ``calc_f1_score`` for one gold: F1 of the longest common token run; 0.0 when none."""
    gold_tokens, pred_tokens = cjk_tokens(gold), cjk_tokens(prediction)
    common = _longest_common_run(gold_tokens, pred_tokens)
    if common == 0:
        return 0.0
    precision, recall = common / len(pred_tokens), common / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


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
    units = _CJK_OR_WORD.findall(unicodedata.normalize("NFKC", text))
    cjk = sum(1 for unit in units if _CJK.fullmatch(unit))
    return "cjk" if units and 2 * cjk >= len(units) else "squad"


def normalize(text: str, scheme: Scheme) -> str:
    """The scheme's normalised form: :func:`normalize_squad` or :func:`normalize_cjk`."""
    return normalize_squad(text) if scheme == "squad" else normalize_cjk(text)


# Answer matching --------------------------------------------------------------


def _exact(prediction: str, golds: Sequence[str], scheme: Scheme) -> bool:
    if scheme == "squad":
        return any(squad_exact(gold, prediction) for gold in golds)
    return any(normalize_cjk(gold) == normalize_cjk(prediction) for gold in golds)


def _f1(prediction: str, golds: Sequence[str], scheme: Scheme) -> float:
    f1 = squad_f1 if scheme == "squad" else cjk_f1
    return max((f1(gold, prediction) for gold in golds), default=0.0)


def _loose_en_tokens(text: str) -> list[str]:
    """SQuAD tokens after NFKC and after non-ASCII punctuation/symbols (curly quotes, dashes) became spaces."""
    folded = unicodedata.normalize("NFKC", text)
    return normalize_squad("".join(" " if ord(ch) > 127 and _is_punct_or_symbol(ch) else ch for ch in folded)).split()


def _contains_run(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    """``needle`` (non-empty) occurs as a contiguous run of ``haystack``."""
    n = len(needle)
    return n > 0 and any(list(haystack[i : i + n]) == list(needle) for i in range(len(haystack) - n + 1))


def _contains(prediction: str, golds: Sequence[str], scheme: Scheme) -> bool:
    if _exact(prediction, golds, scheme):
        return True
    tokens = _loose_en_tokens if scheme == "squad" else cjk_tokens
    predicted = tokens(prediction)
    return any(_contains_run(predicted, tokens(gold)) for gold in golds)


def exact_match(prediction: str, golds: Sequence[str], lang: str) -> bool:
    """Some gold equals the prediction once both are normalised; False when there is no gold.

    ``lang`` is a language tag (``en``, ``zh-Hans``, ...); empty means: decide
    from the golds' text (:func:`scheme_for`).
    """
    return _exact(prediction, golds, scheme_for(lang, " ".join(golds)))


def token_f1(prediction: str, golds: Sequence[str], lang: str) -> float:
    """Best F1 over the golds (SQuAD token F1, or CMRC longest-run F1 for CJK); 0.0 when there is no gold."""
    return _f1(prediction, golds, scheme_for(lang, " ".join(golds)))


def contains_match(prediction: str, golds: Sequence[str], lang: str) -> bool:
    """Some gold occurs in the prediction as a whole run of tokens, or matches exactly.

    Tokens are the scheme's: SQuAD tokens (after curly quotes and other
    non-ASCII punctuation become spaces) or CJK tokens (each CJK character;
    other runs split at punctuation and whitespace). Token boundaries keep
    gold ``20`` from matching ``200``. Exact match implies containment.
    """
    return _contains(prediction, golds, scheme_for(lang, " ".join(golds)))


# Refusals ---------------------------------------------------------------------


def refusal_key(text: str) -> str:
    """Comparison form of a refusal: NFKC, casefold, punctuation and symbols deleted, whitespace collapsed.

    ``"  I don’t have that information. "`` and ``"I dont have that information"``
    share one key, as do ``我没有这方面的信息。`` and ``我没有这方面的信息``.
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join("".join(ch for ch in folded if not _is_punct_or_symbol(ch)).split())


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
    """Answerable: a gold answer is contained (or exactly matched) and the answer is no refusal.
    Unanswerable: the answer is a refusal."""
    exact: bool
    """Normalised exact match with some gold answer."""
    contains: bool
    """Some gold answer occurs in the normalised answer on token boundaries."""
    f1: float
    """Best token F1 over the gold answers (0.0 when there is none)."""
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


def score_answer(
    question: Question,
    answer_text: str,
    refusals: Sequence[str],
    provided_doc_ids: Collection[str],
    documents: Mapping[str, str],
) -> AnswerScore:
    """Score ``answer_text`` for ``question``; ``documents`` maps doc_id to the document's current text.

    The scheme comes from the question's ``lang`` tag, else from its text.
    Refusal, exact match, containment and F1 are judged on the answer without
    its citation brackets (:func:`strip_citations`); citations and quotes on
    the answer as given.
    """
    scheme = scheme_for(question.lang, question.question)
    golds = question.answers
    body = strip_citations(answer_text)
    refused = is_refusal(body, refusals)
    contains = _contains(body, golds, scheme)
    citations = cited_doc_ids(answer_text)
    provided = set(provided_doc_ids)
    return AnswerScore(
        correct=(contains and not refused) if question.answerable else refused,
        exact=_exact(body, golds, scheme),
        contains=contains,
        f1=_f1(body, golds, scheme),
        refused=refused,
        citations=citations,
        citations_valid=all(doc_id in provided for doc_id in citations),
        quotes_valid=quotes_valid(answer_text, provided, documents),
        scheme=scheme,
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
