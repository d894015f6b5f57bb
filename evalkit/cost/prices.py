"""Price tables: read ``conf/pricing/*.yaml`` into frozen records.

This is the I/O edge of the cost model; :mod:`evalkit.cost.model` is pure and
only reads the records defined here. Every caller reads prices through
:func:`price_table` (cached: each folder is read once per process);
:func:`load_price_table` always reads the files. One YAML file per provider::

    provider: anthropic
    currency: USD
    models:            # chat models (ModelPrice)
      - model_id: claude-sonnet-5
        input_per_mtok: 2.00
        ...
    rerank: [...]      # RerankPrice
    embed: [...]       # EmbedPrice

Entries are lists (not mappings keyed by id) so that a duplicated id is an
error rather than a silent YAML overwrite. Every field is checked; unknown
fields are errors (a typo must not fall back to a default). Every problem is
one :class:`PricingError` line naming the file, the entry and the field.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import re
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

import yaml

CacheTTL = Literal["5m", "1h"]
"""Anthropic prompt-cache lifetimes; a write's price depends on which one."""

CURRENCY = "USD"
"""The only currency the cost model handles."""

_CHECKED_ON = re.compile(r"^\d{4}-(0[1-9]|1[0-2])(-(0[1-9]|[12]\d|3[01]))?$")


class PricingError(ValueError):
    """A malformed price table or an unknown id; the message is one line."""


def _kind(kind: str, default: Any = MISSING) -> Any:
    """Declare a YAML-backed field and how the loader validates it."""
    return field(default=default, metadata={"kind": kind})


@dataclass(frozen=True)
class ModelPrice:
    """Prices of one chat model, in US dollars per million tokens."""

    model_id: str = _kind("text")
    """The provider's model id, as sent in API requests."""
    provider: str = _kind("provider")
    """Provider named at the top of the YAML file."""
    input_per_mtok: float = _kind("usd")
    """Uncached input tokens."""
    output_per_mtok: float = _kind("usd")
    """Output tokens."""
    cache_write_5m_per_mtok: float = _kind("usd")
    """Prompt-cache write with the 5-minute lifetime (Anthropic: 1.25x input)."""
    cache_write_1h_per_mtok: float = _kind("usd")
    """Prompt-cache write with the 1-hour lifetime (Anthropic: 2x input)."""
    cache_read_per_mtok: float = _kind("usd")
    """Prompt-cache hit (Anthropic: 0.1x input, whatever the lifetime)."""
    batch_multiplier: float = _kind("multiplier")
    """Factor on the whole bill for batch requests (0.5 = half price; 1.0 = no batch API)."""
    context_window: int = _kind("count")
    """Maximum prompt plus output tokens, counted by this model's tokenizer."""
    tokenizer_family: str = _kind("text")
    """Models sharing a tokenizer; token counts never carry across families."""
    checked_on: str = _kind("month")
    """When the prices were last checked: ``YYYY-MM`` or ``YYYY-MM-DD``."""
    source: str = _kind("text")
    """Where the prices came from (one sentence)."""
    note: str = _kind("note", "")
    """Free caveat shown next to the prices."""

    def cache_write_per_mtok(self, ttl: CacheTTL) -> float:
        """Price of a cache write for the given lifetime."""
        if ttl == "5m":
            return self.cache_write_5m_per_mtok
        if ttl == "1h":
            return self.cache_write_1h_per_mtok
        raise ValueError(f"cache_ttl must be '5m' or '1h', got {ttl!r}")


@dataclass(frozen=True)
class RerankPrice:
    """Price of one hosted reranker, billed per search unit."""

    model_id: str = _kind("text")
    """The provider's model id."""
    provider: str = _kind("provider")
    """Provider named at the top of the YAML file."""
    per_1000_searches: float = _kind("usd")
    """Dollars per 1,000 search units."""
    documents_per_search: int = _kind("count")
    """Documents one search unit covers for one query (Cohere: 100)."""
    checked_on: str = _kind("month")
    """When the price was last checked: ``YYYY-MM`` or ``YYYY-MM-DD``."""
    source: str = _kind("text")
    """Where the price came from (one sentence)."""
    note: str = _kind("note", "")
    """Free caveat shown next to the price."""


@dataclass(frozen=True)
class EmbedPrice:
    """Price of one embedding model, in US dollars per million input tokens."""

    model_id: str = _kind("text")
    """The provider's model id."""
    provider: str = _kind("provider")
    """Provider named at the top of the YAML file."""
    input_per_mtok: float = _kind("usd")
    """Embedded tokens (documents and queries alike)."""
    tokenizer_family: str = _kind("text")
    """Models sharing a tokenizer; token counts never carry across families."""
    checked_on: str = _kind("month")
    """When the price was last checked: ``YYYY-MM`` or ``YYYY-MM-DD``."""
    source: str = _kind("text")
    """Where the price came from (one sentence)."""
    note: str = _kind("note", "")
    """Free caveat shown next to the price."""


PriceRecord = ModelPrice | RerankPrice | EmbedPrice

_SECTIONS: Mapping[str, type[ModelPrice] | type[RerankPrice] | type[EmbedPrice]] = MappingProxyType(
    {"models": ModelPrice, "rerank": RerankPrice, "embed": EmbedPrice}
)
_TOP_KEYS = frozenset({"provider", "currency", *_SECTIONS})


@dataclass(frozen=True)
class PriceTable:
    """Every price loaded from one file or folder, looked up by model id."""

    models: Mapping[str, ModelPrice]
    """Chat models by id."""
    rerankers: Mapping[str, RerankPrice]
    """Rerankers by id."""
    embedders: Mapping[str, EmbedPrice]
    """Embedding models by id."""
    files: tuple[str, ...]
    """The YAML files read, in load order."""

    def model(self, model_id: str) -> ModelPrice:
        """Price of a chat model; :class:`PricingError` lists the known ids."""
        return _lookup(self.models, model_id, "chat model", self.files)

    def reranker(self, model_id: str) -> RerankPrice:
        """Price of a reranker; :class:`PricingError` lists the known ids."""
        return _lookup(self.rerankers, model_id, "reranker", self.files)

    def embedder(self, model_id: str) -> EmbedPrice:
        """Price of an embedding model; :class:`PricingError` lists the known ids."""
        return _lookup(self.embedders, model_id, "embedding model", self.files)


def _lookup(table: Mapping[str, Any], model_id: str, what: str, files: tuple[str, ...]) -> Any:
    if model_id in table:
        return table[model_id]
    known = ", ".join(sorted(table)) or "none"
    raise PricingError(f"unknown {what} {model_id!r} in price table ({', '.join(files)}); known: {known}")


def price_table(path_or_dir: str | Path) -> PriceTable:
    """The price table of a file or folder, read once per process (cached on the resolved path).

    The one loader every stage uses (sweep, dry run, position experiment, paid rerankers), so a
    process prices everything from one reading of the files. Errors are not cached: a fixed file is
    read again on the next call. Use :func:`load_price_table` to re-read files changed in-process.
    """
    return _cached_table(Path(path_or_dir).resolve())


@functools.cache
def _cached_table(resolved: Path) -> PriceTable:
    return load_price_table(resolved)


def model_price_or_none(model: str, pricing_dir: str | Path) -> ModelPrice | None:
    """The model's price from the price files, or None when they do not list it (its costs are then NaN)."""
    try:
        return price_table(pricing_dir).model(model)
    except PricingError:
        return None


def load_price_table(path_or_dir: str | Path) -> PriceTable:
    """Read one YAML file, or every ``*.yaml`` in a folder (sorted), into a table (uncached; see :func:`price_table`).

    Raises :class:`PricingError` (one line naming file, entry and field) on
    any malformed entry, and when an id appears twice in the same section.
    """
    root = Path(path_or_dir)
    if root.is_dir():
        paths = tuple(sorted(root.glob("*.yaml")))
        if not paths:
            raise PricingError(f"{root}: no *.yaml price files in this folder")
    elif root.is_file():
        paths = (root,)
    else:
        raise PricingError(f"{root}: no such price file or folder")
    records = tuple(rec for path in paths for rec in _read_file(path))
    return PriceTable(
        models=_index(records, ModelPrice),
        rerankers=_index(records, RerankPrice),
        embedders=_index(records, EmbedPrice),
        files=tuple(str(p) for p in paths),
    )


def _index(records: tuple[tuple[str, PriceRecord], ...], cls: type) -> Mapping[str, Any]:
    """Records of one type by id; a repeated id is an error naming both files."""
    seen: dict[str, tuple[str, Any]] = {}
    for path, rec in records:
        if not isinstance(rec, cls):
            continue
        if rec.model_id in seen:
            raise PricingError(f"{path}: {cls.__name__} {rec.model_id!r} already defined in {seen[rec.model_id][0]}")
        seen[rec.model_id] = (path, rec)
    return MappingProxyType({mid: rec for mid, (_, rec) in seen.items()})


def _read_file(path: Path) -> tuple[tuple[str, PriceRecord], ...]:
    """Parse and validate one price file; pairs of (file, record)."""
    where = str(path)
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise PricingError(f"{where}: not valid YAML{at}: {problem}") from None
    if not isinstance(doc, dict):
        raise PricingError(f"{where}: top level must be a mapping with provider, currency, models/rerank/embed")
    unknown = sorted(set(map(str, doc)) - _TOP_KEYS)
    if unknown:
        allowed = ", ".join(sorted(_TOP_KEYS))
        raise PricingError(f"{where}: unknown top-level key(s) {', '.join(unknown)}; allowed: {allowed}")
    provider = doc.get("provider")
    if not isinstance(provider, str) or not provider.strip():
        raise PricingError(f"{where}: top-level field 'provider' must be a non-empty string")
    if doc.get("currency") != CURRENCY:
        raise PricingError(f"{where}: top-level field 'currency' must be {CURRENCY}, got {doc.get('currency')!r}")
    if not any(doc.get(s) for s in _SECTIONS):
        raise PricingError(f"{where}: no entries under any of {', '.join(_SECTIONS)}")
    return tuple(
        (where, _record(cls, entry, provider, where, f"{section}[{i}]"))
        for section, cls in _SECTIONS.items()
        for i, entry in enumerate(_section(doc, section, where))
    )


def _section(doc: dict, section: str, where: str) -> list:
    entries = doc.get(section) or []
    if not isinstance(entries, list):
        raise PricingError(f"{where}: '{section}' must be a list of entries")
    return entries


def _record(cls: type, entry: Any, provider: str, where: str, position: str) -> PriceRecord:
    """Build one record, checking every field; errors name file, entry and field."""
    if not isinstance(entry, dict):
        raise PricingError(f"{where}: {position}: entry must be a mapping of fields")
    mid = entry.get("model_id")
    label = f"{position} {mid!r}" if isinstance(mid, str) and mid else position
    spec = {f.name: f for f in fields(cls)}
    allowed = sorted(n for n, f in spec.items() if f.metadata["kind"] != "provider")
    unknown = sorted(set(map(str, entry)) - set(allowed))
    if unknown:
        raise PricingError(f"{where}: {label}: unknown field '{unknown[0]}' (allowed: {', '.join(allowed)})")
    values = {
        name: _value(f.metadata["kind"], entry, name, f.default, provider, f"{where}: {label}: field '{name}'")
        for name, f in spec.items()
    }
    return cls(**values)


def _value(kind: str, entry: dict, name: str, default: Any, provider: str, ctx: str) -> Any:
    """One validated field value."""
    if kind == "provider":
        return provider
    if name not in entry:
        if default is not MISSING:
            return default
        raise PricingError(f"{ctx} is missing")
    raw = entry[name]
    check = _CHECKS[kind]
    value, problem = check(raw)
    if problem:
        raise PricingError(f"{ctx} {problem}, got {_short(raw)}")
    return value


def _short(raw: Any) -> str:
    text = repr(raw).replace("\n", " ")
    return text if len(text) <= 60 else text[:57] + "..."


def _is_number(raw: Any) -> bool:
    return isinstance(raw, (int, float)) and not isinstance(raw, bool) and math.isfinite(raw)


def _check_text(raw: Any) -> tuple[Any, str]:
    ok = isinstance(raw, str) and bool(raw.strip())
    return (raw.strip() if ok else None), ("" if ok else "must be a non-empty string")


def _check_note(raw: Any) -> tuple[Any, str]:
    ok = isinstance(raw, str)
    return (raw.strip() if ok else None), ("" if ok else "must be a string")


def _check_usd(raw: Any) -> tuple[Any, str]:
    ok = _is_number(raw) and raw >= 0
    return (float(raw) if ok else None), ("" if ok else "must be a non-negative number of dollars")


def _check_multiplier(raw: Any) -> tuple[Any, str]:
    ok = _is_number(raw) and 0 < raw <= 1
    return (float(raw) if ok else None), ("" if ok else "must be a number in (0, 1]")


def _check_count(raw: Any) -> tuple[Any, str]:
    ok = isinstance(raw, int) and not isinstance(raw, bool) and raw > 0
    return (raw if ok else None), ("" if ok else "must be a positive integer")


def _check_month(raw: Any) -> tuple[Any, str]:
    text = raw.isoformat() if isinstance(raw, dt.date) else raw
    ok = isinstance(text, str) and bool(_CHECKED_ON.match(text))
    return (text if ok else None), ("" if ok else "must be a date YYYY-MM or YYYY-MM-DD")


_CHECKS = MappingProxyType(
    {
        "text": _check_text,
        "note": _check_note,
        "usd": _check_usd,
        "multiplier": _check_multiplier,
        "count": _check_count,
        "month": _check_month,
    }
)
