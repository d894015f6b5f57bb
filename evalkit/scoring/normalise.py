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
containment) runs the official rules above on a folded form
(:func:`match_tokens`), so that a model's spelling of a gold answer is not
counted wrong: dash variants become ``-`` and curly quotes ASCII quotes
(``20–18`` == ``20-18``; NFKC, other non-ASCII punctuation becomes a space),
number words become digits (``ten times`` == ``10 times``, ``twenty-one`` ==
``21``; Chinese ``十`` == ``10``, ``六百`` == ``600``, ``两`` == ``2``), and gold
answers that normalise to nothing are dropped as ``evaluate-v2.0.py`` does
(none left: the gold is the empty no-answer). :func:`normalize_squad`,
:func:`squad_f1`, :func:`normalize_cjk`, :func:`cjk_f1` stay exact replicas.
"""

from __future__ import annotations

import collections
import math
import re
import string
import unicodedata
from collections.abc import Sequence
from typing import Literal

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


# Folded forms: dashes and quotes, number words -----------------------------------

_VARIANTS = str.maketrans(
    dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d", "-")  # hyphens, dashes, minus
    | dict.fromkeys("\u2018\u2019\u201a\u201b\u2032\u00b4", "'")  # curly single quotes, prime, acute
    | dict.fromkeys("\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb", '"')  # curly double quotes, guillemets
)
_UNITS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen"
).split()
_TENS = {w: 10 * i for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)}
_SMALL = (
    {w: i for i, w in enumerate(_UNITS)}
    | _TENS
    | {t + u: v + i for t, v in _TENS.items() for i, u in enumerate(_UNITS[1:10], 1)}  # twenty-one -> twentyone
)
_SCALES = {"thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
_ZH_DIGITS = dict(zip("零〇一二两三四五六七八九", (0, 0, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9)))
_ZH_UNITS = {"十": 10, "百": 100, "千": 1_000}
_ZH_NUMBER = re.compile("[零〇一二两三四五六七八九十百千万]+")


def _read_number(tokens: Sequence[str], start: int) -> tuple[int, int]:
    """The number spelled by English words from ``tokens[start]``, and how many tokens it took (0: none).

    Cardinals only: ``twenty one`` 21, ``two hundred and five`` 205, ``hundred`` 100 (``a`` was dropped as an
    article), ``three thousand`` 3000. A word that cannot continue the number (``one two``) starts a new one.
    """
    total = part = 0
    last = ""  # the previous word's kind: "" (none yet), "small", "hundred", "scale"
    scale_cap = math.inf  # scales descend: "two million three thousand"
    i = end = start
    while i < len(tokens):
        word = tokens[i]
        if word in _SMALL:
            value = _SMALL[word]
            if last == "small" and not (part % 100 >= 20 and part % 10 == 0 and value < 10):
                break  # "one two", "twenty twenty": two numbers
            part, last = part + value, "small"
        elif word == "hundred":
            if last == "hundred" or part >= 100:
                break
            part, last = (part or 1) * 100, "hundred"
        elif word in _SCALES:
            if _SCALES[word] >= scale_cap:
                break
            total, part, last, scale_cap = total + (part or 1) * _SCALES[word], 0, "scale", _SCALES[word]
        elif word == "and" and last in ("hundred", "scale") and i + 1 < len(tokens) and tokens[i + 1] in _SMALL:
            i += 1
            continue
        else:
            break
        i += 1
        end = i
    return total + part, end - start


def _words_to_digits(tokens: Sequence[str]) -> list[str]:
    """Runs of English number words replaced by their digits (one token per number)."""
    out: list[str] = []
    i = 0
    while i < len(tokens):
        value, used = _read_number(tokens, i)
        out.append(str(value) if used else tokens[i])
        i += used or 1
    return out


def _zh_number(run: str) -> int:
    """A run of Chinese numerals as an integer: ``十`` 10, ``六百`` 600, ``一百零五`` 105, ``二〇二四`` 2024."""
    if all(ch in _ZH_DIGITS for ch in run):
        return int("".join(str(_ZH_DIGITS[ch]) for ch in run))  # read digit by digit (years, codes)
    total = section = digit = 0
    for ch in run:
        if ch in _ZH_DIGITS:
            digit = _ZH_DIGITS[ch]
        elif ch == "万":
            total, section, digit = total + ((section + digit) or 1) * 10_000, 0, 0
        else:
            section, digit = section + (digit or 1) * _ZH_UNITS[ch], 0
    return total + section + digit


def match_tokens(text: str, scheme: Scheme) -> list[str]:
    """The tokens answer matching compares: the scheme's official tokens of the folded text.

    ``squad``: dash and quote variants to ASCII, NFKC, other non-ASCII punctuation and symbols to spaces, then
    :func:`squad_tokens`, then number words to digits. ``cjk``: Chinese numerals to digits, then
    :func:`cjk_tokens` (which already drops every punctuation mark).
    """
    if scheme == "cjk":
        return cjk_tokens(_ZH_NUMBER.sub(lambda m: str(_zh_number(m.group())), text))
    folded = unicodedata.normalize("NFKC", text.translate(_VARIANTS))
    spaced = "".join(" " if ord(ch) > 127 and is_punct_or_symbol(ch) else ch for ch in folded)
    return _words_to_digits(normalize_squad(spaced).split())
