"""How answer text becomes comparable tokens (pure): the official normalisations, and evalkit's folds.

Two schemes (picked per question by :func:`evalkit.scoring.answers.scheme_for`):

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

Answer matching in :mod:`evalkit.scoring.answers` (exact match, token F1,
containment, the primary verdict) runs the official rules above on a folded form
(:func:`match_tokens`), so that a model's spelling of a gold answer is not
counted wrong: dash variants become ``-`` and curly quotes ASCII quotes
(``20–18`` == ``20-18``); NFKC folds full-width digits and letters; digits and
Latin letters touching Han characters are tokens of their own (``需要64GiB内存``
holds ``64 gib``); a currency symbol or word beside a number becomes a code
after it (``25EUR`` == ``25 EUR`` == ``€25``, ``$25`` == ``25$``); ``1,000`` ==
``1000``; a decimal is one token (gold ``6公里`` is not in ``364.6公里``); number
words become digits (``ten times`` == ``10 times``; Chinese ``三百六十四点六`` ==
``364.6`` where the characters are a number, :mod:`evalkit.scoring.numerals`);
and gold answers that normalise to nothing are dropped as ``evaluate-v2.0.py``
does (none left: the gold is the empty no-answer). :func:`normalize_squad`,
:func:`squad_f1`, :func:`normalize_cjk`, :func:`cjk_f1` stay exact replicas.
"""

from __future__ import annotations

import collections
import re
import string
import unicodedata
from collections.abc import Sequence
from typing import Literal

from evalkit.scoring.numerals import english_words_to_digits, zh_numerals_to_digits

__all__ = [
    "CJK_OR_WORD",
    "CJK_RE",
    "Scheme",
    "bag_f1",
    "cjk_f1",
    "cjk_tokens",
    "is_punct_or_symbol",
    "match_tokens",
    "normalize_cjk",
    "normalize_squad",
    "run_f1",
    "squad_exact",
    "squad_f1",
    "squad_tokens",
]

Scheme = Literal["squad", "cjk"]
"""``squad`` (English and other spaced scripts) or ``cjk`` (Chinese, Japanese, Korean)."""

_CJK_CHARS = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # Han: extension A, unified, compatibility
    "\uac00-\ud7af"  # Hangul syllables
    "\U00020000-\U0003134f"  # Han extensions B-G
)
CJK_RE = re.compile(f"[{_CJK_CHARS}]")
CJK_OR_WORD = re.compile(rf"[{_CJK_CHARS}]|[^\W{_CJK_CHARS}]+")


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
    return bag_f1(squad_tokens(gold), squad_tokens(prediction))


def bag_f1(gold_tokens: Sequence[str], pred_tokens: Sequence[str]) -> float:
    if not gold_tokens or not pred_tokens:
        return float(gold_tokens == pred_tokens)  # either is no-answer: 1 if they agree
    num_same = sum((collections.Counter(gold_tokens) & collections.Counter(pred_tokens)).values())
    if num_same == 0:
        return 0.0
    precision, recall = num_same / len(pred_tokens), num_same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


# CJK (CMRC 2018 style) --------------------------------------------------------


def is_punct_or_symbol(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "PS"


def _fold(text: str) -> str:
    """NFKC (full-width to half-width), lowercase, each ``P*``/``S*`` character to a space."""
    folded = unicodedata.normalize("NFKC", text).lower()
    return "".join(" " if is_punct_or_symbol(ch) else ch for ch in folded)


def normalize_cjk(text: str) -> str:
    """NFKC, lowercase, without punctuation, symbols or whitespace: ``３６４．６ 公里。`` -> ``3646公里``."""
    return "".join(_fold(text).split())


def cjk_tokens(text: str) -> list[str]:
    """CMRC-style mixed segmentation: each CJK character one token, other runs split on whitespace."""
    return [token for run in _fold(text).split() for token in CJK_OR_WORD.findall(run) or [run]]


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
    return run_f1(cjk_tokens(gold), cjk_tokens(prediction))


def run_f1(gold_tokens: Sequence[str], pred_tokens: Sequence[str]) -> float:
    common = _longest_common_run(gold_tokens, pred_tokens)
    if common == 0:
        return 0.0
    precision, recall = common / len(pred_tokens), common / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


# Folded forms: what answer matching compares ------------------------------------

_VARIANTS = str.maketrans(
    dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d", "-")  # hyphens, dashes, minus
    | dict.fromkeys("\u2018\u2019\u201a\u201b\u2032\u00b4", "'")  # curly single quotes, prime, acute
    | dict.fromkeys("\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb", '"')  # curly double quotes, guillemets
    | {"\uff0c": "\u3001"}  # a full-width comma separates list items: keep it from NFKC's ASCII comma
)
_THOUSANDS = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?!\d|,\d)")
_LIST_COMMA = re.compile(r"(?<=\d),(?=\d)")  # a comma between digits that is no thousands separator
_CURRENCY_CODES = {"$": "usd", "€": "eur", "£": "gbp", "₹": "inr", "₩": "krw"}
_SYMBOL_FIRST = re.compile(r"([$€£₹₩])\s?(\d+(?:\.\d+)?)")
_SYMBOL_AFTER = re.compile(r"(\d+(?:\.\d+)?)\s?([$€£₹₩])")
_CURRENCY_WORDS = {"euro": "eur", "euros": "eur", "dollar": "usd", "dollars": "usd"}
_CURRENCY_WORD = re.compile(r"\b(euros?|dollars?)\b|(欧元|美元|英镑)|\b(per ?cent|percent)\b")
_ZH_CURRENCY = {"欧元": "eur", "美元": "usd", "英镑": "gbp"}
_DECIMAL_POINT = "\ue000"  # a private-use character: a decimal point survives punctuation removal as it
_DECIMAL = re.compile(r"(?<=\d)\.(?=\d)")
_PIECE = re.compile(
    rf"[{_CJK_CHARS}]|%"
    rf"|\d+(?:{_DECIMAL_POINT}\d+)*(?:(?:st|nd|rd|th|s)(?![^\W\d_]))?"  # 364.6, 10th, 1990s; 64gib -> 64 gib
    rf"|[^\W\d_{_CJK_CHARS}]+\d*"  # mp3, covid19: a digit after letters stays in the word
    r"|\S"
)


def _currency_word(match: re.Match[str]) -> str:
    word, han, _ = match.groups()
    return f" {_CURRENCY_WORDS[word]} " if word else f" {_ZH_CURRENCY[han]} " if han else " % "


def _prefold(text: str) -> str:
    """Variants to ASCII, thousands separators dropped, NFKC, lowercase, Chinese numerals and currencies."""
    text = _THOUSANDS.sub(lambda m: m.group().replace(",", ""), text.translate(_VARIANTS))
    text = _LIST_COMMA.sub(" ", text)  # 1,2,3 is a list, not 123 (SQuAD's deletion would fuse it)
    folded = zh_numerals_to_digits(unicodedata.normalize("NFKC", text).lower())
    folded = _SYMBOL_FIRST.sub(lambda m: f" {m.group(2)} {_CURRENCY_CODES[m.group(1)]} ", folded)
    folded = _SYMBOL_AFTER.sub(lambda m: f" {m.group(1)} {_CURRENCY_CODES[m.group(2)]} ", folded)
    return _DECIMAL.sub(_DECIMAL_POINT, _CURRENCY_WORD.sub(_currency_word, folded))


def _pieces(word: str) -> list[str]:
    """One whitespace-separated word split where scripts meet: each CJK character, a number, a Latin run."""
    pieces = _PIECE.findall(word)  # a point left alone (c10.18: the point does not join c10 and 18) is dropped
    return [piece.replace(_DECIMAL_POINT, ".") for piece in pieces if piece != _DECIMAL_POINT]


def match_tokens(text: str, scheme: Scheme) -> list[str]:
    """The tokens answer matching compares: the scheme's official tokens of a folded text.

    Folding, both schemes: dash and quote variants to ASCII; ``1,000`` to ``1000`` (ASCII comma, groups
    of three); NFKC (full-width digits and letters) and lowercase; Chinese numerals to digits where they
    are numbers (:mod:`evalkit.scoring.numerals`); a currency symbol beside a number becomes a code after
    it (``$25``, ``25$``, ``$ 25`` -> ``25 usd``; ``€`` eur, ``£`` gbp, ``₹`` inr, ``₩`` krw; ``euros``,
    ``欧元`` eur, ``dollars``, ``美元`` usd, ``英镑`` gbp; ``¥`` is yen or yuan, so it is dropped);
    ``percent``, ``per cent`` and ``％`` are ``%``. Then tokens split where scripts meet: each CJK
    character, a number (``364.6`` whole), a Latin run (``64GiB`` -> ``64 gib``, ``25EUR`` -> ``25 eur``;
    ordinals and decades stay: ``10th``, ``1990s``; letters then digits stay: ``mp3``) and ``%``.

    ``squad``: ASCII punctuation is deleted as the official script does (``don't`` -> ``dont``, ``20-18``
    -> ``2018``) except a decimal point and ``%``; other punctuation and symbols become spaces; the
    articles a/an/the are dropped; number words become digits. ``cjk``: every punctuation mark and symbol
    but a decimal point and ``%`` becomes a space (CMRC deletes them; here no two runs fuse).
    """
    folded = _prefold(text)
    if scheme == "cjk":
        spaced = "".join(" " if is_punct_or_symbol(ch) and ch != "%" else ch for ch in folded)
        return [piece for word in spaced.split() for piece in _pieces(word)]
    kept = "".join(
        "" if ch in _SQUAD_PUNCT and ch != "%" else " " if is_punct_or_symbol(ch) and ch != "%" else ch for ch in folded
    )
    pieces = [piece for word in kept.split() for piece in _pieces(word)]
    return english_words_to_digits([piece for piece in pieces if piece not in ("a", "an", "the")])
