"""Per-(config, question) rows on disk in blocks: written a block at a time, read back whole configs at a time.

A sweep's rows are questions x grid points (squad2-en grown 8x: 4.7 million rows, 6 GB as one
frame), so no stage holds them whole: the score stage writes each chunking's rows as it slices
them, and the results stage reads them back in blocks of about ``results_block_rows`` rows. A
block always holds whole configs (every question of each), because per-config means and paired
statistics need all of a config's questions; a config's rows are contiguous in every rows file.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from evalkit.run.files import DEFAULT_RESULTS_BLOCK_ROWS as DEFAULT_RESULTS_BLOCK_ROWS


def write_frames(path: Path, frames: Iterable[pd.DataFrame]) -> int:
    """Frames appended to one parquet file, renamed into place once every frame is written; returns the rows.

    The same rows, columns and values as ``pd.concat(frames).to_parquet(path, index=False)``.
    """
    with FrameSink(path) as sink:
        for frame in frames:
            sink.write(frame)
    return sink.rows


class FrameSink:
    """A parquet file (and optionally its CSV) written block by block, renamed into place only when complete.

    ``with FrameSink(path, csv=True) as sink: sink.write(block)``: a sweep killed half-way leaves no
    file that a resume or a reader would trust (the temporary names are removed).
    """

    def __init__(self, path: Path, csv: bool = False) -> None:
        self.path, self.csv = path, csv
        self.rows = 0
        self._blocks: list[pd.DataFrame] = []
        self._writer: pq.ParquetWriter | None = None

    def __enter__(self) -> FrameSink:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tmp, self._csv_tmp = (_temporary(self.path.with_suffix(ext)) for ext in (".parquet", ".csv"))
        return self

    def write(self, frame: pd.DataFrame) -> None:
        table = pa.Table.from_pandas(frame, preserve_index=False)
        if self._writer is None:
            self._writer = pq.ParquetWriter(self._tmp, table.schema)
        self._writer.write_table(table)
        if self.csv:
            first = self.rows == 0
            frame.to_csv(self._csv_tmp, index=False, header=first, mode="w" if first else "a")
        self.rows += len(frame)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._writer is not None:
            self._writer.close()
        try:
            if kind is None:
                if self._writer is None:
                    pd.DataFrame().to_parquet(self._tmp, index=False)
                    if self.csv:
                        pd.DataFrame().to_csv(self._csv_tmp, index=False)
                self._tmp.replace(self.path)
                if self.csv:
                    self._csv_tmp.replace(self.path.with_suffix(".csv"))
        finally:
            for leftover in (self._tmp, self._csv_tmp):
                leftover.unlink(missing_ok=True)


def _temporary(path: Path) -> Path:
    """A temporary name beside ``path``, unique per writer (two processes never share one)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    return Path(tmp)


def config_blocks(
    paths: Sequence[Path], block_rows: int, key: str = "config_id", columns: Sequence[str] | None = None
) -> Iterator[pd.DataFrame]:
    """The rows of ``paths`` in order, in blocks of whole configs of about ``block_rows`` rows each.

    A block is cut at the last config boundary once it holds ``block_rows`` rows, so it holds at
    least one whole config even when one config has more rows than that; no block spans two files.
    """
    for path in paths:
        pending: list[pd.DataFrame] = []
        held = 0
        for batch in pq.ParquetFile(path).iter_batches(batch_size=block_rows, columns=columns):
            pending.append(batch.to_pandas())
            held += batch.num_rows
            if held < block_rows:
                continue
            block = pd.concat(pending, ignore_index=True) if len(pending) > 1 else pending[0]
            cut = _last_boundary(block[key].to_numpy())
            if cut == 0:  # one config longer than a block: keep reading until it ends
                pending, held = [block], len(block)
                continue
            yield block.iloc[:cut].reset_index(drop=True)
            rest = block.iloc[cut:].reset_index(drop=True)
            pending, held = [rest], len(rest)
        if held:
            yield pd.concat(pending, ignore_index=True) if len(pending) > 1 else pending[0]


def _last_boundary(keys: np.ndarray) -> int:
    """Index where the last run of equal keys starts (0 when every key is the same)."""
    changes = np.flatnonzero(keys[1:] != keys[:-1])
    return int(changes[-1]) + 1 if changes.size else 0
