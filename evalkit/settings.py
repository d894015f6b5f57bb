"""Typed, frozen settings read strictly from plain config mappings.

Every stage's settings are frozen dataclasses; :func:`parse_settings` turns a
Hydra section (already a plain mapping) into one, or raises a one-line
:class:`ConfigError` naming the key. Strict on purpose: an unknown key is a
typo until proven otherwise (``chunk_szie`` -> did you mean ``chunk_size``?),
and no value is coerced silently (``seed=1.5`` is not 1, ``pool_size=0`` is not
50, ``dry_run=maybe`` is not true, ``threshold=nan`` is not a number).

Field constraints live in the field's metadata, next to its type:
``field(default=50, metadata={"min": 1, "max": 1000})``; ``"choices"`` for a
closed set of strings; ``"scalar_ok"`` lets a ``tuple[...]`` field take one
value (the sweep's grid keys take a number or a list).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar, Union, get_args, get_origin

T = TypeVar("T")


class ConfigError(ValueError):
    """A configuration that cannot run; the message names the key and says why (one line)."""


def suggest(name: str, known: Iterable[str], where: str = "") -> str:
    """``did you mean 'X'?`` for the closest known name (with its section), else the known names."""
    known = sorted(known)
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    if close:
        return f"did you mean {_join(where, close[0])!r}?"
    return f"known: {', '.join(known)}" if known else "this section takes no keys"


def check_keys(raw: Mapping[str, Any], known: Iterable[str], where: str) -> None:
    """Refuse keys that are not in ``known``, with the nearest valid one."""
    known = set(known)
    for key in raw:
        if key not in known:
            raise ConfigError(f"{_join(where, str(key))}: unknown key; {suggest(str(key), known, where)}")


def config_int(value: Any, key: str, minimum: int) -> int:
    """One whole number from a config value, at least ``minimum`` (no bools, no floats, no strings)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{key}: {_short(value)} is not a whole number")
    if value < minimum:
        raise ConfigError(f"{key}: {value} is below the minimum {minimum}")
    return value


def parse_settings(cls: type[T], raw: Mapping[str, Any] | None, where: str, **given: Any) -> T:
    """A ``cls`` instance from ``raw``; every value checked against the field's type and metadata.

    ``given`` supplies values that do not come from this section (e.g. a seed
    shared with the whole run); they bypass the checks and win over ``raw``.
    """
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected a section of keys, got {_short(raw)}")
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}  # type: ignore[arg-type]
    check_keys(raw, fields, where)
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for name, spec in fields.items():
        if name in given:
            values[name] = given[name]
        elif name in raw:
            values[name] = convert(raw[name], hints[name], _join(where, name), spec.metadata)
        elif spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
            raise ConfigError(f"{_join(where, name)}: missing (set it on the command line, e.g. {name}=...)")
    return cls(**values)


def convert(value: Any, kind: Any, key: str, meta: Mapping[str, Any] | None = None) -> Any:
    """``value`` as ``kind`` (int, float, bool, str, X | None, tuple[X, ...], Literal, Mapping, a dataclass)."""
    meta = meta or {}
    origin = get_origin(kind)
    if origin in (Union, types.UnionType):
        options = get_args(kind)
        if value is None and type(None) in options:
            return None
        rest = [o for o in options if o is not type(None)]
        if len(rest) == 1:
            return convert(value, rest[0], key, meta)
        return _first_that_fits(value, rest, key, meta)
    if origin is typing.Literal:
        if value not in get_args(kind):
            raise ConfigError(f"{key}: unknown value {_short(value)}; {suggest(str(value), map(str, get_args(kind)))}")
        return value
    if origin is tuple:
        return _tuple(value, get_args(kind), key, meta)
    if origin in (dict, Mapping) or kind in (dict, Mapping):
        if not isinstance(value, Mapping):
            raise ConfigError(f"{key}: expected a section of keys, got {_short(value)}")
        return types.MappingProxyType(dict(value))
    if dataclasses.is_dataclass(kind):
        if not isinstance(value, Mapping):  # `filters=null` must not mean "filters at their defaults"
            raise ConfigError(f"{key}: expected a section of keys, got {_short(value)}")
        return parse_settings(kind, value, key)  # type: ignore[arg-type]
    if kind is Any:
        return value
    return _scalar(value, kind, key, meta)


def _scalar(value: Any, kind: type, key: str, meta: Mapping[str, Any]) -> Any:
    if kind is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{key}: {_short(value)} is not true or false")
        return value
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{key}: {_short(value)} is not a whole number")
        return _in_range(value, key, meta)
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{key}: {_short(value)} is not a number")
        number = float(value)
        if math.isnan(number) or (math.isinf(number) and not meta.get("allow_inf")):
            raise ConfigError(f"{key}: {value} is not a finite number")
        return _in_range(number, key, meta)
    if kind is str:
        if not isinstance(value, str):
            raise ConfigError(f"{key}: {_short(value)} is not a string")
        choices = meta.get("choices")
        if choices is not None and value not in choices:
            raise ConfigError(f"{key}: unknown value {value!r}; {suggest(value, choices)}")
        if not value and not meta.get("allow_empty", True):
            raise ConfigError(f"{key}: empty")
        return value
    raise TypeError(f"settings field {key} has an unsupported type {kind!r}")  # a bug in evalkit, not in the config


def _in_range(number: int | float, key: str, meta: Mapping[str, Any]) -> int | float:
    low, high = meta.get("min"), meta.get("max")
    if low is not None and number < low:
        raise ConfigError(f"{key}: {number} is below the minimum {low}")
    if meta.get("above") is not None and number <= meta["above"]:
        raise ConfigError(f"{key}: {number} must be greater than {meta['above']}")
    if high is not None and number > high:
        raise ConfigError(f"{key}: {number} is above the maximum {high}")
    return number


def _tuple(value: Any, args: tuple[Any, ...], key: str, meta: Mapping[str, Any]) -> tuple[Any, ...]:
    if isinstance(value, str | int | float | bool) and meta.get("scalar_ok"):
        value = [value]
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise ConfigError(f"{key}: expected a list, got {_short(value)}")
    items = list(value)
    item_kind = args[0] if len(args) == 2 and args[1] is Ellipsis else Any
    out = tuple(convert(item, item_kind, key, meta) for item in items)
    if not out and not meta.get("allow_empty", False):
        raise ConfigError(f"{key}: empty list")
    return out


def _first_that_fits(value: Any, options: list[Any], key: str, meta: Mapping[str, Any]) -> Any:
    errors = []
    for option in options:
        try:
            return convert(value, option, key, meta)
        except ConfigError as exc:
            errors.append(str(exc))
    raise ConfigError(errors[0])


def _join(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
