"""Local token estimates: how many tokens a text costs in a tokenizer family, without the model's counter.

Pure. Every number derived from these estimates is labelled ``estimated``; the
target model's own counter (Anthropic ``count_tokens``) replaces them when a key
exists. Token counts belong to one tokenizer family (Claude 4.7+ tokenizers
count about 30% more tokens than earlier ones for the same text) and must
never be reused across families.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType

import numpy as np

TOKENIZER_SCALE_PERCENT: Mapping[str, int] = MappingProxyType(
    {
        "generic": 100,
        "claude-pre-4.7": 100,
        "claude-4.7+": 130,
        "cohere-embed-v4": 100,
        "o200k": 100,
        "cl100k": 100,
        "qwen2": 100,
        "gemma3": 100,
        "use-multilingual": 100,
        "xlm-roberta": 100,
        "bert-wordpiece": 100,
    }
)
"""Scale of each tokenizer family over the base heuristic (Claude 4.7+: about 30% more)."""

_CJK = re.compile(
    "[\u1100-\u11ff\u2e80-\u303f\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7af\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0003134f]"
)


def estimate_tokens(text: str, model_family: str) -> int:
    """A local, labelled estimate of the tokens ``text`` costs in a tokenizer family.

    Heuristic, deliberately on the high side (an over-estimate keeps both
    the budget and the window check safe): about 4 ASCII characters per token
    (English prose, spaces included); 1 token per CJK character (Han, kana,
    Hangul, full-width forms; real tokenizers give 1 token per 1-1.5 CJK
    characters); 2 other non-ASCII characters per token (accented Latin,
    Cyrillic, Greek, ...). The sum is scaled by the family's
    :data:`TOKENIZER_SCALE_PERCENT` (Claude 4.7+: x1.3) and rounded up.
    Any cost computed from it must be flagged ``estimated=True``; use the
    model's own counter (Anthropic ``count_tokens``) when a key exists.
    """
    if model_family not in TOKENIZER_SCALE_PERCENT:
        known = ", ".join(sorted(TOKENIZER_SCALE_PERCENT))
        raise ValueError(f"unknown tokenizer family {model_family!r}; known: {known}")
    cjk = len(_CJK.findall(text))
    ascii_chars = len(text.encode("ascii", "ignore"))  # what it drops is exactly the non-ASCII code points
    other = len(text) - cjk - ascii_chars
    quarter_tokens = ascii_chars + 2 * other + 4 * cjk
    return -(-quarter_tokens * TOKENIZER_SCALE_PERCENT[model_family] // 400)


def unit_token_counts(texts: Sequence[str], family: str) -> np.ndarray:
    """Estimated tokens of each retrievable unit's text."""
    return np.array([estimate_tokens(text, family) for text in texts], dtype=np.int64)
