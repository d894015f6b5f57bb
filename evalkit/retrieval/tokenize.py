"""Word tokens for BM25, for any script.

Han text has no spaces, so it is segmented with jieba's dictionary (the
Rust port ``rjieba`` when installed, else ``jieba``). Other unspaced scripts
(kana, Thai, Lao, Khmer, Myanmar) fall back to character bigrams, which BM25
handles well without a dictionary. Everything else splits on word
characters. Tokens are case-folded and NFKC-normalised so full-width Latin
letters and digits match their ASCII forms.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from functools import cache

_HAN = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_UNSPACED = r"\u3040-\u30ff\u31f0-\u31ff\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff"
_RUNS = re.compile(rf"([{_HAN}]+)|([{_UNSPACED}]+)|([^\W{_HAN}{_UNSPACED}]+)")

ENGLISH_STOPWORDS = frozenset(
    (
        "a an and are as at be by for from has have in is it its of on or that the this to was were "
        "what when where which who whom whose why how with does did do"
    ).split()
)
"""Function words dropped from English queries and documents alike."""


@cache
def _han_segmenter() -> Callable[[str], Iterable[str]]:
    try:
        import rjieba

        return rjieba.cut
    except ImportError:
        import jieba

        jieba.setLogLevel(60)  # jieba prints its dictionary load at INFO; keep runs quiet
        return lambda text: jieba.cut(text, HMM=True)


def _bigrams(run: str) -> list[str]:
    return [run] if len(run) < 2 else [run[i : i + 2] for i in range(len(run) - 1)]


def tokenize(text: str, stopwords: frozenset[str] = ENGLISH_STOPWORDS) -> list[str]:
    """Case-folded word tokens of ``text``; punctuation and stopwords dropped."""
    normalised = unicodedata.normalize("NFKC", text).casefold()
    tokens: list[str] = []
    for han, unspaced, word in _RUNS.findall(normalised):
        if han:
            tokens.extend(token for token in _han_segmenter()(han) if token.strip())
        elif unspaced:
            tokens.extend(_bigrams(unspaced))
        elif word not in stopwords:
            tokens.append(word)
    return tokens


TOKENIZER_VERSION = "1"
"""Bumped when :func:`tokenize` changes its output, so cached tokens are never reused across versions."""


def tokenize_many(texts: Iterable[str]) -> list[list[str]]:
    return [tokenize(text) for text in texts]
