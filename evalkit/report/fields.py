"""Reading recommendation.json's fields strictly in shape and leniently in value (the report's records).

A block of the wrong shape is a one-line :class:`~evalkit.run.folder.RunError`; a missing or non-numeric
value is None and renders as "n/a".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from evalkit.run import files
from evalkit.run.folder import RunError


def as_number(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def as_int(value: Any) -> int | None:
    number = as_number(value)
    return None if number is None else int(number)


def as_bool(value: Any) -> bool | None:
    return None if value is None else bool(value)


def as_mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise RunError(f"{files.RECOMMENDATION_JSON}: {where} is not an object")
    return value


def as_list(value: Any, where: str) -> Sequence[Any]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise RunError(f"{files.RECOMMENDATION_JSON}: {where} is not a list")
    return value
