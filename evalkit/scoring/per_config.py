"""Every config's per-question values as compact numeric arrays, gathered block by block (pure).

The decision stage reads a few measures of every config on every question (paired bootstraps, the
objective's means, recall at a token budget). Holding the whole results table for that costs
questions x grid points rows of some forty columns with strings (6 GB at squad2-en grown 8x);
:class:`PerConfig` holds only the columns the decision reads, one numeric array per config, and
gives back exactly the frames the decision's functions read from a results table: one config's
rows (:meth:`PerConfig.rows`) or a question x config matrix (:meth:`PerConfig.wide`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

IDENTITY_COLUMNS = ("chunking", "chunker", "chunk_size", "chunk_overlap", "retriever", "reranker", "top_k", "threshold")
"""A config's own settings: the same on every one of its rows, kept once per config."""


@dataclass(frozen=True)
class PerConfig:
    """Per-question values of every config of a sweep; every config scored the same questions, in one order."""

    config_ids: tuple[str, ...]
    question_ids: np.ndarray
    """(questions,) in the order of every config's rows."""
    answerable: np.ndarray
    """(questions,) bool."""
    identity: pd.DataFrame
    """One row per config, in ``config_ids`` order: config_id and :data:`IDENTITY_COLUMNS`."""
    values: Mapping[str, tuple[np.ndarray, ...]]
    """Column -> one (questions,) array per config, in the column's own dtype."""

    @property
    def columns(self) -> frozenset[str]:
        """The result columns this holds (a measure whose column is absent is absent from the results)."""
        return frozenset({"question_id", "answerable", *self.identity.columns, *self.values})

    def rows(self, config_ids: Sequence[str]) -> pd.DataFrame:
        """The result rows of these configs (config after config, questions in order), held columns only."""
        at = [self._position[c] for c in config_ids]
        n = len(self.question_ids)
        frame = {
            "config_id": np.repeat(np.array([self.config_ids[i] for i in at], dtype=object), n),
            "question_id": np.tile(self.question_ids, len(at)),
            "answerable": np.tile(self.answerable, len(at)),
        }
        identity = self.identity.iloc[at]
        for column in IDENTITY_COLUMNS:
            if column in identity.columns:
                frame[column] = np.repeat(identity[column].to_numpy(), n)
        for column, arrays in self.values.items():
            frame[column] = np.concatenate([arrays[i] for i in at]) if at else arrays[0][:0]
        return pd.DataFrame(frame)

    def wide(self, columns: Sequence[str], subset: str = "all") -> pd.DataFrame:
        """question_id x config_id of the sum of ``columns`` as floats, NaN outside ``subset``.

        Sorted on both axes, as a results table unstacked by question and config is.
        """
        keep = {"answerable": self.answerable, "unanswerable": ~self.answerable}.get(subset)
        stacked = np.empty((len(self.question_ids), len(self.config_ids)), dtype=np.float64)
        for i in range(len(self.config_ids)):
            total = self.values[columns[0]][i]
            for column in columns[1:]:
                total = total + self.values[column][i]
            stacked[:, i] = total.astype(np.float64)
            if keep is not None:
                stacked[~keep, i] = np.nan
        # Sorted before the frame is built, so its memory layout is an unstacked table's too: pandas sums
        # a column in the order its memory holds it, and a mean must not move in the last bit.
        questions, by_question = pd.Index(self.question_ids, name="question_id").sort_values(return_indexer=True)
        configs, by_config = pd.Index(list(self.config_ids), name="config_id").sort_values(return_indexer=True)
        ordered = np.ascontiguousarray(stacked[by_question][:, by_config])
        return pd.DataFrame(ordered, index=questions, columns=configs, copy=False)

    @property
    def _position(self) -> dict[str, int]:
        return {c: i for i, c in enumerate(self.config_ids)}


class PerConfigBuilder:
    """Collects :class:`PerConfig` from blocks of result rows, each holding whole configs."""

    def __init__(self, columns: Iterable[str]) -> None:
        self.wanted = tuple(dict.fromkeys(columns))
        self.config_ids: list[str] = []
        self.identity: list[pd.DataFrame] = []
        self.values: dict[str, list[np.ndarray]] = {}
        self.question_ids: np.ndarray | None = None
        self.answerable: np.ndarray | None = None

    def add(self, block: pd.DataFrame) -> None:
        keys = block["config_id"].to_numpy()
        starts = np.concatenate([[0], np.flatnonzero(keys[1:] != keys[:-1]) + 1])
        ends = np.append(starts[1:], len(keys))
        held = [c for c in self.wanted if c in block.columns]
        identity = [c for c in ("config_id", *IDENTITY_COLUMNS) if c in block.columns]
        self.identity.append(block.iloc[starts][identity])
        for start, end in zip(starts, ends, strict=True):
            self._check_questions(block, start, end)
            self.config_ids.append(str(keys[start]))
            for column in held:
                self.values.setdefault(column, []).append(block[column].to_numpy()[start:end].copy())

    def _check_questions(self, block: pd.DataFrame, start: int, end: int) -> None:
        questions = block["question_id"].to_numpy()[start:end]
        if self.question_ids is None:
            self.question_ids = questions.copy()
            self.answerable = block["answerable"].to_numpy(dtype=bool)[start:end].copy()
        elif not np.array_equal(questions, self.question_ids):
            config = block["config_id"].iloc[start]
            raise ValueError(f"config {config!r} scored other questions than the first config (or in another order)")

    def build(self) -> PerConfig:
        if self.question_ids is None or self.answerable is None:
            raise ValueError("no result rows")
        identity = pd.concat(self.identity, ignore_index=True)
        return PerConfig(
            config_ids=tuple(self.config_ids),
            question_ids=self.question_ids,
            answerable=self.answerable,
            identity=identity,
            values={c: tuple(v) for c, v in self.values.items()},
        )


Results = pd.DataFrame | PerConfig
"""What the decision reads: a results table (a run folder's, a test's), or the sweep's :class:`PerConfig`."""


def config_rows(results: Results, config_id: str) -> pd.DataFrame:
    """Rows holding at least every row of ``config_id`` (a table is returned whole: readers filter it)."""
    return results.rows([config_id]) if isinstance(results, PerConfig) else results


def result_columns(results: Results) -> frozenset[str]:
    return results.columns if isinstance(results, PerConfig) else frozenset(results.columns)
