"""The documents as labelled: a copy of each document's text kept in the set, so ``reanchor`` knows what changed.

``labels reanchor`` can only tell a span that moved from one whose text now
matches *another* occurrence if it knows the document as it was labelled: how
often the span's text occurred in it, and what surrounded it. ``--before OLD``
gives that by hand; this module keeps it in the set itself, content-addressed:
``<set>/.history/<sha256>.txt.gz`` holds the text whose sha256 ``docs.jsonl``
records. A copy is taken only of a text that matches ``docs.jsonl`` (the
version the labels were checked against): by ``labels validate``, by the
importers when they write a set, and by ``reanchor`` for each document whose
``docs.jsonl`` line it brings up to date. Old copies stay (a few kB each,
compressed) until removed by hand; nothing reads them but ``reanchor``.

A set that cannot be written to (a shared read-only copy) simply keeps no
history: :func:`remember` reports it and never fails the command that asked.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from evalkit.labels.parse import read_jsonl
from evalkit.records import Document

__all__ = ["HISTORY", "recall", "recorded_sha256", "remember", "sha256_of"]

HISTORY = ".history"


def sha256_of(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def recorded_sha256(root: Path) -> dict[str, str]:
    """doc_id -> the sha256 ``docs.jsonl`` records for it (documents without one are left out)."""
    index = root / "docs.jsonl"
    if not index.is_file():
        return {}
    recorded = {}
    for _, record in read_jsonl(index, []):  # lines that are not objects are the reader's problems, named there
        doc_id, sha = record.get("doc_id"), record.get("sha256")
        if isinstance(doc_id, str) and isinstance(sha, str) and sha:
            recorded[doc_id] = sha
    return recorded


def _path(root: Path, sha: str) -> Path:
    return root / HISTORY / f"{sha}.txt.gz"


def remember(root: Path, documents: Iterable[Document], recorded: Mapping[str, str] | None = None) -> str:
    """Keep a copy of every document whose text matches its recorded sha256; return a note ("" when all is well).

    ``recorded``: doc_id -> sha256 (default: ``docs.jsonl``'s). Each copy is written atomically.
    """
    recorded = recorded_sha256(root) if recorded is None else recorded
    wanted = [(d, recorded[d.doc_id]) for d in documents if d.doc_id in recorded]
    missing = [(d, sha) for d, sha in wanted if sha_matches(d, sha) and not _path(root, sha).is_file()]
    try:
        for document, sha in missing:
            _write(_path(root, sha), gzip.compress(document.text.encode("utf-8"), mtime=0))
    except OSError as exc:
        why = exc.strerror or exc
        return f"note: no copy of the documents kept in {root / HISTORY} ({why}); reanchor will need --before"
    return ""


def sha_matches(document: Document, sha: str) -> bool:
    return sha256_of(document.text) == sha


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def recall(root: Path, sha: str) -> str | None:
    """The text whose sha256 is ``sha``, from the set's history; ``None`` when no intact copy is kept."""
    path = _path(root, sha)
    try:
        text = gzip.decompress(path.read_bytes()).decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError, gzip.BadGzipFile):
        return None
    return text if sha256_of(text) == sha else None  # a damaged copy is no copy
