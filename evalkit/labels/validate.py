"""``validate``: the sweep's verdict on a labelled set, plus warnings it does not raise.

Problems are exactly what a sweep reports: both run the one reader's strict
mode (:func:`evalkit.labels.read.read_set`), one line each (file:line:
field: what). Warnings never fail a set: a document changed since
``docs.jsonl`` was written (sha256 or n_chars out of date) and files in
``docs/`` that ``docs.jsonl`` does not list.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from evalkit.labels.parse import read_jsonl
from evalkit.labels.read import LabelsetError, read_set

__all__ = ["Validation", "validate"]


@dataclass(frozen=True)
class Validation:
    """The outcome of validating one labelled set."""

    path: Path
    problems: tuple[str, ...]
    """Each makes the set unusable; empty when the loader accepts it."""
    warnings: tuple[str, ...]
    n_questions: int = 0
    n_documents: int = 0

    @property
    def ok(self) -> bool:
        """True when the loader accepts the set (warnings allowed)."""
        return not self.problems


def _index_warnings(root: Path) -> list[str]:
    """n_chars wrong for an unchanged text, and unlisted files under docs/ (sha256 is the loader's warning)."""
    index = root / "docs.jsonl"
    if not index.is_file():
        return []
    warnings, listed = [], set()
    # Lines that are not JSON objects are already the reader's problems.
    for number, record in read_jsonl(index, []):
        if not isinstance(record.get("path"), str):
            continue
        listed.add(Path(record["path"]).as_posix())
        path = root / record["path"]
        n_chars = record.get("n_chars")
        if isinstance(n_chars, int) and path.is_file():
            with open(path, encoding="utf-8", newline="", errors="replace") as handle:
                text = handle.read()
            changed = record.get("sha256") and hashlib.sha256(text.encode("utf-8")).hexdigest() != record["sha256"]
            if len(text) != n_chars and not changed:  # a changed document already has the loader's warning
                actual = len(text)
                warnings.append(f"{index}:{number}: field 'n_chars': {n_chars}, but {record['path']!r} has {actual}")
    docs = root / "docs"
    if docs.is_dir():
        for file in sorted(p for p in docs.rglob("*") if p.is_file() and not p.name.startswith(".")):
            relative = file.relative_to(root).as_posix()
            if relative not in listed:
                warnings.append(f"{file}: not listed in docs.jsonl (ignored)")
    return warnings


def validate(path: str | Path) -> Validation:
    """Validate a labelled set: the strict reader's problems (the sweep's) and every warning."""
    root = Path(path)
    try:
        reading = read_set(root, "strict")
    except LabelsetError as exc:  # not a labelled set at all: no documents were read, so no warnings of theirs
        return Validation(root, tuple(exc.problems), tuple(_index_warnings(root)))
    warnings = (*reading.warnings, *_index_warnings(root))
    if reading.problems:
        return Validation(root, reading.problems, warnings)
    return Validation(root, (), warnings, len(reading.questions), len(reading.documents))
