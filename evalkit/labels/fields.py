"""Checks of single fields the sweep reads, shared by every reader of the format (pure).

Each returns the problem as text, or "" when the value is fine; the caller adds file, line and field.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from typing import Any

_INVISIBLE = re.compile(r"[\s\u200b-\u200f\u2028-\u202f\u2060-\u206f\ufeff]+")
DATE_FIELDS = ("effective_date", "expires")


def visible(text: str) -> bool:
    """Whether a text has anything a person could read (not only spaces, zero-width or format characters)."""
    return bool(_INVISIBLE.sub("", text)) and any(unicodedata.category(c)[0] != "C" for c in text)


LONE_SURROGATE = "holds a lone surrogate code point (a broken \\u escape); it cannot be encoded, indexed or shown"


def has_surrogate(value: str) -> bool:
    return any("\ud800" <= c <= "\udfff" for c in value)


def date_problem(value: Any) -> str:
    if value in (None, ""):
        return ""
    if isinstance(value, str):
        try:
            dt.date.fromisoformat(value[:10])
            return ""
        except ValueError:
            pass
    return f"{value!r} is not a date (YYYY-MM-DD)"


def acl_problem(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list) and all(isinstance(role, str) and role.strip() for role in value):
        return ""
    return f"expected a list of role names, got {value!r}"


def id_key(identifier: str) -> str:
    """What two ids must not share: ids differing only in white space or Unicode normalisation are one id."""
    return " ".join(unicodedata.normalize("NFC", identifier).split())


ID_CLASH = "ids that differ only in white space or Unicode normalisation (NFC/NFD) are the same id"


def id_problem(value: str) -> str:
    """An id that cannot travel safely (file names, HTML, CSV, C strings): it holds a control character."""
    for position, char in enumerate(value):
        if unicodedata.category(char) == "Cc" and char not in "\t":
            return f"holds the control character U+{ord(char):04X} at position {position}"
    return ""


def superseded_problem(value: Any) -> str:
    if value is None or (isinstance(value, str) and value):
        return ""
    return f"expected the doc_id of the newer version (a non-empty string), got {value!r}"


def deep_surrogates(value: Any, path: str = "") -> str:
    """The dotted path of the first string holding a lone surrogate, or ""."""
    if isinstance(value, str):
        return (path or ".") if has_surrogate(value) else ""
    if isinstance(value, dict):
        for key, item in value.items():
            found = deep_surrogates(item, f"{path}.{key}" if path else str(key))
            if found:
                return found
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = deep_surrogates(item, f"{path}[{i}]")
            if found:
                return found
    return ""
