"""Dense search through a real vector database (``retriever.index=lancedb``): exact when flat, else measured.

LanceDB is embedded: a table is a folder of Lance files under the cache's folder, searched in this
process (no server, no listening socket). Each chunking's unit-norm vectors go into one table, keyed
by unit index, per (chunking, embedder identity); the vectors' fingerprint is kept beside the table,
so changed vectors rebuild it and unchanged ones reuse it.

The store heals like the cache (:mod:`evalkit.cache_file`): nothing in it is a result, only a saving.
A table is reused only when its marker reads, names these vectors, and the table reads back as exactly
these vectors (every row: a missing, truncated or garbage file fails here, and so does a marker that
lies). A store that does not read (or a file where its folder should be) is moved aside with one
warning naming both paths and rebuilt; a search the store fails mid-way is healed the same way, once.

``lancedb_index=flat`` (no index: LanceDB scans every row) is exact search, and the pool equals
:func:`evalkit.retrieval.pools.dense_pool` question by question. LanceDB scores in float32 and breaks
ties its own way, so its top-n is not taken as is: candidates are rescored with the same exact
cosines as :mod:`evalkit.retrieval.cosine` (ties by lower unit), and a question's list is accepted
only when no unit the store left out could still beat its n-th candidate (the store's own score of
its last candidate plus the float32 error bound lies below it); otherwise more are fetched. The
other ``lancedb_index`` values build one of LanceDB's approximate indexes; its candidates are
rescored the same way and its recall against exact search is measured like hnsw's
(:func:`evalkit.retrieval.ann.recall_against_exact`).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evalkit.cache_file import move_aside
from evalkit.console import warn
from evalkit.retrieval.cosine import exact_cosines, to_fixed_point
from evalkit.retrieval.pools import CandidatePool, DenseIndex, QueryVectors, check_same_model

STORE_FOLDER = "vectorstore"
"""The store's folder, beside the cache file (never in the repository)."""
EXTRA_HINT = 'pip install -e ".[vectorstore]"'
FIRST_MARGIN = 16
"""Exact mode fetches n + this at first, so near-ties at the cut are usually settled in one query."""
BATCH_QUERIES = 256
"""Questions sent to LanceDB in one multi-vector query."""
_RUST_SOURCE = re.compile(r",?\s*/(?:root/)?[\w./-]*(?:cargo|rustc)[^\s,)]*")


class StoreUnavailableError(RuntimeError):
    """lancedb (the ``vectorstore`` extra) is not installed."""


class StoreError(RuntimeError):
    """The store failed again after it was moved aside and rebuilt (one line naming the table)."""


@dataclass(frozen=True)
class StoreSettings:
    """Which LanceDB index the table gets and how it is searched (``retriever.lancedb_*``)."""

    index: str = "flat"
    partitions: int | None = None
    """IVF partitions; None: LanceDB's own choice (about sqrt of the rows)."""
    nprobes: int = 20
    """IVF partitions searched per question."""

    @property
    def exact(self) -> bool:
        return self.index == "flat"


@dataclass(frozen=True)
class StoreTable:
    """Where one chunking's table lives."""

    folder: Path
    name: str


def table_name(chunking: str, embedder_identity: str, labelset: str) -> str:
    """One table per (chunking, embedder identity) of a labelled set: readable key, hashed rest."""
    tail = hashlib.sha256(json.dumps([embedder_identity, labelset]).encode("utf-8")).hexdigest()[:16]
    return f"{''.join(c if c.isalnum() or c in '-_' else '_' for c in chunking)}-{tail}"


def fingerprint(index: DenseIndex, settings: StoreSettings) -> str:
    """What the table holds: the model, the vectors' bytes and the index it was given."""
    digest = hashlib.sha256(json.dumps([index.model, index.dim, asdict(settings)]).encode("utf-8"))
    digest.update(np.ascontiguousarray(index.vectors, dtype="<f4").tobytes())
    return digest.hexdigest()


def check_installed() -> None:
    """Raise :class:`StoreUnavailableError` (one line naming the extra) when lancedb cannot be imported."""
    _lancedb()


def _lancedb() -> Any:
    try:
        import lancedb
    except ImportError:
        raise StoreUnavailableError(
            f"retriever.index=lancedb needs lancedb: {EXTRA_HINT} (or retriever.index=exact)"
        ) from None
    return lancedb


def open_table(index: DenseIndex, table: StoreTable, settings: StoreSettings) -> Any:  # a lancedb Table
    """The chunking's table, built (or rebuilt) when the stored vectors or index differ from these.

    A table that does not read back as these vectors, a marker that does not parse, or a file where the
    store's folder should be is moved aside (one warning naming both paths) and the table rebuilt.
    """
    lancedb = _lancedb()
    _clear_folder(table.folder)
    marker = table.folder / f"{table.name}.json"
    wanted = fingerprint(index, settings)
    db = lancedb.connect(str(table.folder))
    try:
        stored = json.loads(marker.read_text(encoding="utf-8")).get("fingerprint") if marker.exists() else None
    except (OSError, ValueError, AttributeError) as exc:  # not a file, not UTF-8, not JSON, not an object
        heal_table(table, f"its marker {marker.name} does not read: {_cause(exc)}")
        stored = None
    if stored == wanted:
        try:
            opened = db.open_table(table.name)
            _check_holds(opened, index, settings)
            return opened
        except Exception as exc:  # lancedb raises its own (and OSError, ValueError) for files that do not read
            heal_table(table, _cause(exc))
    return _build(db, index, table, settings, wanted)


def _build(db: Any, index: DenseIndex, table: StoreTable, settings: StoreSettings, wanted: str) -> Any:
    import pyarrow as pa

    marker = table.folder / f"{table.name}.json"
    if marker.is_file():
        marker.unlink()  # no marker while the table is rewritten: a crash leaves it to rebuild
    vectors = np.ascontiguousarray(index.vectors, dtype=np.float32)
    data = pa.table(
        {
            "unit": pa.array(np.arange(len(vectors)), pa.int64()),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), index.dim),
        }
    )
    # "overwrite" on a table that is not there yet makes LanceDB log a warning on the sweep's stderr.
    try:
        mode = "overwrite" if (table.folder / f"{table.name}.lance").exists() else "create"
        built = db.create_table(table.name, data, mode=mode)
    except Exception as exc:  # an old table too broken to overwrite (a crash mid-build, damage)
        heal_table(table, _cause(exc))
        try:
            built = db.create_table(table.name, data, mode="create")
        except Exception as again:  # nothing left to heal: a read-only or full disk, a folder not ours to write
            raise StoreError(f"retriever.index=lancedb: cannot write {table.folder}: {_cause(again)}") from None
    if not settings.exact:
        built.create_index("vector", config=_index_config(settings, len(vectors)), replace=True)
    marker.write_text(json.dumps({"fingerprint": wanted, "model": index.model, **asdict(settings)}), encoding="utf-8")
    return built


def _check_holds(opened: Any, index: DenseIndex, settings: StoreSettings) -> None:
    """Raise ValueError unless the table reads back, every row, as exactly these vectors (and its index)."""
    stored = opened.to_arrow()
    units = stored["unit"].to_numpy()
    if stored.num_rows != len(index.vectors) or not np.array_equal(units, np.arange(len(units))):
        raise ValueError(f"it holds {stored.num_rows} rows, not the {len(index.vectors)} units of this chunking")
    vectors = stored["vector"].combine_chunks().flatten().to_numpy().reshape(len(units), -1)
    if not np.array_equal(vectors, np.asarray(index.vectors, dtype=np.float32)):
        raise ValueError("its vectors are not this chunking's (the marker does not match the table)")
    if not settings.exact and not opened.list_indices():
        raise ValueError(f"it has no {settings.index} index")


def heal_table(table: StoreTable, cause: str) -> None:
    """Move the table (and its marker) aside with one warning naming both paths: it is rebuilt from the vectors."""
    lance = table.folder / f"{table.name}.lance"
    marker = table.folder / f"{table.name}.json"
    what = lance if lance.exists() or lance.is_symlink() else marker
    if not (what.exists() or what.is_symlink()):
        return
    aside = move_aside(what)
    if what != marker and (marker.exists() or marker.is_symlink()):
        marker.rename(aside.with_name(f"{aside.name}.json"))
    warn(f"the vector store table {what} does not read ({cause}); moved it to {aside} and rebuilding it")


def _clear_folder(folder: Path) -> None:
    """The store's folder, made; a file in its place is moved aside first (a file above it is the cache's to refuse)."""
    if (folder.exists() or folder.is_symlink()) and not folder.is_dir():
        aside = move_aside(folder)
        warn(f"the vector store folder {folder} is not a folder; moved it to {aside} and rebuilding the store")
    folder.mkdir(parents=True, exist_ok=True)


def _cause(exc: BaseException) -> str:
    # LanceDB's messages end in the Rust source line that raised them: no use to the user.
    text = _RUST_SOURCE.sub("", " ".join(str(exc).split()))
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__


def _index_config(settings: StoreSettings, n_rows: int) -> Any:
    from lancedb.index import IvfFlat, IvfHnswSq, IvfPq

    # Dot product on unit vectors is the cosine; LanceDB reports it as the distance 1 - dot.
    partitions = None if settings.partitions is None else min(settings.partitions, n_rows)
    kinds = {"ivf_flat": IvfFlat, "ivf_pq": IvfPq, "ivf_hnsw_sq": IvfHnswSq}
    return kinds[settings.index](distance_type="dot", num_partitions=partitions)


def store_pool(
    index: DenseIndex,
    queries: QueryVectors,
    n: int,
    table: StoreTable,
    allowed: np.ndarray | None = None,
    settings: StoreSettings = StoreSettings(),
) -> CandidatePool:
    """Top-n by cosine from the store, best first, ties by lower unit; each score the exact cosine.

    Flat: equal to exact search (see the module's docstring). Approximate: the index is asked for n
    (four times n with metadata filters, the hits a question may not see dropped afterwards, as hnsw).
    """
    check_same_model(index, queries)
    n_units, n_queries = len(index.vectors), len(queries.vectors)
    indices = np.full((n_queries, n), -1, dtype=np.int64)
    scores = np.full((n_queries, n), np.nan)
    if n_units == 0 or n_queries == 0 or n == 0:
        return CandidatePool(indices, scores, "dense")
    store = open_table(index, table, settings)
    units, asked = to_fixed_point(index.vectors), to_fixed_point(queries.vectors)
    # LanceDB's float32 dot differs from the exact one by at most dim * eps (unit vectors), plus the
    # fixed-point rounding (below 1e-8): a unit it scored below its last hit by more cannot be above it.
    slack = 2.0 * index.dim * float(np.finfo(np.float32).eps) + 1e-6
    fetch = min(n_units, (n + FIRST_MARGIN) if allowed is None else 4 * n) if settings.exact else (
        min(n_units, n if allowed is None else 4 * n))  # fmt: skip
    pending, healed = np.arange(n_queries), False
    while pending.size:
        try:
            found = _search(store, queries.vectors[pending], fetch, settings)
        except Exception as exc:  # damage the read-back check cannot see (an approximate index's own files)
            lance = table.folder / f"{table.name}.lance"
            if healed:
                raise StoreError(f"retriever.index=lancedb: {lance} fails after a rebuild: {_cause(exc)}") from None
            heal_table(table, _cause(exc))
            store, healed = open_table(index, table, settings), True
            continue
        unsettled = []
        for row, (members, store_scores) in zip(pending, found):
            last = found_last(store_scores)  # before filters: the bound is on every unit the store left out
            if allowed is not None:
                members = members[allowed[row, members]]
            cosines = exact_cosines(asked.take(slice(row, row + 1)), units.take(members))[0]
            order = np.lexsort((members, -cosines))[:n]
            if settings.exact and fetch < n_units and not _settled(cosines[order], n, last, slack):
                unsettled.append(row)
                continue
            indices[row, : order.size] = members[order]
            scores[row, : order.size] = cosines[order]
        pending = np.asarray(unsettled, dtype=np.int64)
        fetch = min(n_units, fetch * 4)
    return CandidatePool(indices, scores, "dense")


def found_last(store_scores: np.ndarray) -> float:
    """The store's own score of the last row it returned (before filters); -inf when it returned none."""
    return float(store_scores.min()) if store_scores.size else -np.inf


def _settled(best: np.ndarray, n: int, last_store_score: float, slack: float) -> bool:
    """Whether the n-th exact cosine beats any unit the store did not return (a full, safe list)."""
    return best.size == n and best[-1] > last_store_score + slack


def _search(
    store: Any, vectors: np.ndarray, fetch: int, settings: StoreSettings
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per question, the units the store returned and its scores (cosines, as 1 - LanceDB's dot distance).

    Scores are the store's before any filter: the settled check needs the last one the store ranked.
    """
    out: list[tuple[np.ndarray, np.ndarray]] = []
    for start in range(0, len(vectors), BATCH_QUERIES):
        block = vectors[start : start + BATCH_QUERIES]
        query = store.search(list(block)).distance_type("dot").limit(fetch).select(["unit", "_distance"])
        query = query.bypass_vector_index() if settings.exact else query.nprobes(settings.nprobes)
        found = query.to_arrow()
        # A one-vector query has no query_index column: every row is that question's.
        rows = found["query_index"].to_numpy() if "query_index" in found.column_names else np.zeros(found.num_rows)
        units = found["unit"].to_numpy().astype(np.int64)
        similarity = 1.0 - found["_distance"].to_numpy().astype(np.float64)
        for i in range(len(block)):
            mine = rows == i
            out.append((units[mine], similarity[mine]))
    return out
