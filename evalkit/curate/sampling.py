"""Picking the questions worth labelling from a query log (pure): fold variants, then a stratified sample.

The method evalkit follows builds a labelled set from real sessions: about
half the most frequent questions of the last three months and half known
failures, with a seed. Steps, each a pure function:

1. **window**: rows after ``since`` (a moment, or a span such as ``7d`` back
   from ``until``; without it, ``months`` calendar months before ``until``) up
   to and including ``until`` (default: the log's latest timestamp, so the
   same log samples the same way on any day);
2. **fold**: a question's key is its normalised text (NFKC, case-folded,
   punctuation dropped, white space collapsed, and no spaces between Han
   characters, so ``住宿 标准？`` and ``住宿标准`` fold); keys whose character
   3-gram Jaccard reaches ``fold_threshold`` are one question (an exact
   similarity join, :func:`evalkit.labels.similarity.similar_pairs`). Its
   text is the most asked spelling; frequency counts every variant;
3. **sample**: ``frequent``: the most asked groups (ties broken by the
   seed); ``failure``: groups with at least one failed row, drawn without
   replacement with weight = number of failures (Efraimidis–Spirakis keys
   from the seed), so recurring failures are likelier but one topic cannot
   take the whole share. A stratum short of groups leaves its places to the
   other.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from evalkit.curate.querylog import LogEntry, parse_timestamp
from evalkit.labels.similarity import normalise, similar_pairs
from evalkit.records import Span

__all__ = [
    "QueryGroup",
    "Sample",
    "SampleSettings",
    "fold",
    "fold_key",
    "group_id",
    "language",
    "parse_since",
    "sample",
    "window",
]

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_HAN_GAP = re.compile(rf"(?<=[{_HAN}])\s+(?=[{_HAN}])")
_HAN_CHAR = re.compile(rf"[{_HAN}]")
_SPAN = re.compile(r"^(?P<count>[1-9]\d{0,3})(?P<unit>[dw])$")
_FILLER = re.compile(r"^(?:(?:hi|hello|hey|please|pls|excuse me|请问|你好|您好|麻烦问一下|想问一下|请)[\s,，]*)+")


@dataclass(frozen=True)
class SampleSettings:
    """How many questions to pick, in which shares, from which window."""

    n: int = 40
    """Questions in the sample (fewer when the log holds fewer distinct questions)."""
    failure_share: float = 0.5
    """Share of known failures; the rest are the most frequent questions."""
    months: int = 3
    """Window length in calendar months, ending at ``until``."""
    until: dt.datetime | None = None
    """End of the window (inclusive); None: the latest timestamp in the log."""
    fold_threshold: float = 0.8
    """Character 3-gram Jaccard at which two spellings are one question (1.0: only equal normalised text)."""
    seed: int = 0
    since: dt.datetime | dt.timedelta | None = None
    """Start of the window (exclusive): a moment, or a span back from ``until``; None: ``months`` before it."""

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError(f"n must be at least 1, got {self.n}")
        if not 0.0 <= self.failure_share <= 1.0:
            raise ValueError(f"failure share must be in [0, 1], got {self.failure_share}")
        if self.months < 1:
            raise ValueError(f"months must be at least 1, got {self.months}")
        if not 0.0 < self.fold_threshold <= 1.0:
            raise ValueError(f"fold threshold must be in (0, 1], got {self.fold_threshold}")


@dataclass(frozen=True)
class QueryGroup:
    """One question of the log with every spelling of it folded in."""

    key: str
    """Normalised text of the most asked spelling (the group's identity)."""
    question: str
    """The most asked spelling (ties: the earliest asked)."""
    frequency: int
    failures: int
    first_seen: dt.datetime
    last_seen: dt.datetime
    variants: tuple[str, ...]
    """Distinct spellings, most asked first."""
    roles: tuple[str, ...]
    """Roles that asked it, most frequent first."""
    users: int
    """Distinct users (0 when the log names none)."""
    returned: tuple[Span, ...]
    """What production returned for it, most often returned first."""

    @property
    def lang(self) -> str:
        return language(self.question)


@dataclass(frozen=True)
class Sample:
    """The picked questions and what they were picked from."""

    picked: tuple[tuple[QueryGroup, str], ...]
    """``(group, stratum)`` with stratum ``frequent`` or ``failure``, frequent ones first."""
    start: dt.datetime
    until: dt.datetime
    rows_in_window: int
    rows_outside: int
    groups: int
    failure_groups: int


def language(text: str) -> str:
    """``zh-Hans`` for text with Han characters, else ``en`` (the demo set's tags)."""
    return "zh-Hans" if _HAN_CHAR.search(text) else "en"


def fold_key(text: str) -> str:
    """The text two spellings of one question share: normalised, greetings and "please" dropped in front
    (``hi,``, ``请问``), no spaces between Han characters."""
    key = _HAN_GAP.sub("", normalise(text))
    return _FILLER.sub("", key) or key


def group_id(key: str) -> str:
    """A question id stable across runs and appends: ``log-`` and a hash of the folded text."""
    return "log-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:10]


def _months_before(moment: dt.datetime, months: int) -> dt.datetime:
    total = moment.year * 12 + moment.month - 1 - months
    year, month = divmod(total, 12)
    month += 1
    days = [31, 29 if year % 4 == 0 and (year % 100 or year % 400 == 0) else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    return moment.replace(year=year, month=month, day=min(moment.day, days[month - 1]))


def parse_since(text: str) -> dt.datetime | dt.timedelta:
    """``--since``: ``7d`` or ``2w`` (days or weeks back from the window's end) or a date / ISO 8601 moment."""
    span = _SPAN.match(text.strip())
    if span:
        days = int(span["count"]) * (7 if span["unit"] == "w" else 1)
        return dt.timedelta(days=days)
    moment = parse_timestamp(text)
    if moment is None:
        raise ValueError(f"--since {text!r} is not a date (YYYY-MM-DD or ISO 8601) nor a span like 7d or 2w")
    return moment


def window(entries: Sequence[LogEntry], settings: SampleSettings) -> tuple[dt.datetime, dt.datetime]:
    """``(start, until)``: rows with ``start < timestamp <= until`` are sampled."""
    if not entries:
        raise ValueError("the query log has no usable row")
    until = settings.until or max(e.timestamp for e in entries)
    since = settings.since
    if since is None:
        return _months_before(until, settings.months), until
    start = until - since if isinstance(since, dt.timedelta) else since
    if start >= until:
        raise ValueError(f"--since {start.isoformat()} is not before the window's end {until.isoformat()}")
    return start, until


def _untidy(text: str) -> int:
    """How far a spelling is from a clean question (no final question mark, odd spaces): ties go to the tidiest."""
    filler = fold_key(text) != _HAN_GAP.sub("", normalise(text))
    return (not text.rstrip().endswith(("?", "？"))) + len(_HAN_GAP.findall(text)) + filler


def _components(keys: Sequence[str], threshold: float) -> list[list[int]]:
    parent = list(range(len(keys)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    if threshold < 1.0:
        for i, j, _ in similar_pairs(keys, threshold):
            parent[root(i)] = root(j)
    groups: dict[int, list[int]] = defaultdict(list)
    for i in range(len(keys)):
        groups[root(i)].append(i)
    return list(groups.values())


def fold(entries: Sequence[LogEntry], threshold: float = 0.8) -> tuple[QueryGroup, ...]:
    """The distinct questions of ``entries``, near-duplicates folded together, most asked first."""
    by_key: dict[str, list[LogEntry]] = defaultdict(list)
    for entry in entries:
        key = fold_key(entry.question)
        if key:
            by_key[key].append(entry)
    keys = sorted(by_key)
    groups = []
    for component in _components(keys, threshold):
        rows = sorted((e for i in component for e in by_key[keys[i]]), key=lambda e: (e.timestamp, e.line))
        spellings = Counter(e.question for e in rows)
        first_at = {}
        for e in rows:
            first_at.setdefault(e.question, e.timestamp)
        variants = tuple(sorted(spellings, key=lambda s: (-spellings[s], _untidy(s), first_at[s], s)))
        returned = Counter(span for e in rows for span in e.returned)
        by_count = sorted(returned.items(), key=lambda kv: (-kv[1], kv[0].doc_id, kv[0].start))
        roles = Counter(e.role for e in rows if e.role)
        groups.append(
            QueryGroup(
                key=fold_key(variants[0]),
                question=variants[0],
                frequency=len(rows),
                failures=sum(e.failed for e in rows),
                first_seen=rows[0].timestamp,
                last_seen=rows[-1].timestamp,
                variants=variants,
                roles=tuple(r for r, _ in roles.most_common()),
                users=len({e.user for e in rows if e.user}),
                returned=tuple(span for span, _ in by_count),
            )
        )
    return tuple(sorted(groups, key=lambda g: (-g.frequency, g.key)))


def _draw_weighted(groups: Sequence[QueryGroup], k: int, rng: random.Random) -> list[QueryGroup]:
    """``k`` groups without replacement, weight = failures (Efraimidis–Spirakis: the largest u^(1/w))."""
    keyed = [(rng.random() ** (1.0 / max(g.failures, 1)), g) for g in groups]
    keyed.sort(key=lambda kv: (-kv[0], kv[1].key))
    return [g for _, g in keyed[:k]]


def sample(entries: Sequence[LogEntry], settings: SampleSettings = SampleSettings()) -> Sample:
    """The stratified sample of ``entries`` (see the module docstring)."""
    start, until = window(entries, settings)
    inside = [e for e in entries if start < e.timestamp <= until]
    groups = fold(inside, settings.fold_threshold)
    rng = random.Random(settings.seed)
    ties = {g.key: rng.random() for g in sorted(groups, key=lambda g: g.key)}
    by_frequency = sorted(groups, key=lambda g: (-g.frequency, ties[g.key]))
    failing = sorted((g for g in groups if g.failures), key=lambda g: g.key)
    # Failures first: a question both frequent and failing is a known failure, and must not starve that share.
    n_failures = min(round(settings.n * settings.failure_share), len(failing))
    failures = _draw_weighted(failing, n_failures, rng)
    taken = {g.key for g in failures}
    frequent = [g for g in by_frequency if g.key not in taken][: settings.n - len(failures)]
    taken |= {g.key for g in frequent}
    # A stratum short of groups hands its places to the other.
    rest = [g for g in failing if g.key not in taken]
    failures += _draw_weighted(rest, settings.n - len(frequent) - len(failures), rng)
    picked = tuple((g, "frequent") for g in frequent) + tuple((g, "failure") for g in failures)
    return Sample(
        picked=picked,
        start=start,
        until=until,
        rows_in_window=len(inside),
        rows_outside=len(entries) - len(inside),
        groups=len(groups),
        failure_groups=len(failing),
    )
