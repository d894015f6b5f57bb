"""How every long stage shows its progress: one place that makes the bars.

- Bars go to stderr only: stdout (a dry run's table, piped output) stays clean.
- A bar is off when the run says ``progress=false``, and whenever stderr is not a
  terminal (tqdm's ``disable=None``): a CI log or a pipe gets no carriage-return noise.
- Inner bars (embedding, rerank, generation, the report) leave nothing behind when
  they finish, so the sweep's one ``chunkings`` bar stays readable.
- A bar only counts: it never changes what is computed, or in which batches.

The stream is looked up when a bar is made (not at import), so a caller that points
``sys.stderr`` elsewhere gets its bars there.
"""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO

from tqdm import tqdm

PER_MINUTE_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {per_minute}]"
"""The bar of a slow stage (answers): its rate per minute, where a rate per second would read 0.40 it/s."""


FALLBACK_COLUMNS = 100
"""Width when the terminal reports none (a pseudo-terminal opened without a size): tqdm would print nothing."""


class PerMinuteBar(tqdm):
    """A tqdm bar that shows its rate per minute (``{per_minute}`` in its format)."""

    @property
    def format_dict(self) -> dict[str, Any]:
        values = dict(super().format_dict)
        rate = values.get("rate")
        if rate is None and values.get("elapsed") and values.get("n"):
            rate = values["n"] / values["elapsed"]
        unit = str(values.get("unit", "it")).strip()
        values["per_minute"] = f"{rate * 60:.1f} {unit}/min" if rate else f"? {unit}/min"
        return values


def _width(stream: TextIO) -> dict[str, Any]:
    """Follow the terminal's width, or a fixed one when it reports zero columns."""
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return {"dynamic_ncols": True}
    return {"dynamic_ncols": True} if columns > 0 else {"ncols": FALLBACK_COLUMNS}


def bar(
    total: int,
    desc: str,
    unit: str,
    enabled: bool,
    *,
    leave: bool = False,
    per_minute: bool = False,
) -> tqdm:
    """A progress bar over ``total`` items on stderr, with its rate and ETA.

    ``unit``: what is counted, plural (``texts`` shows as ``12.3 texts/s``).
    ``enabled``: the run's ``progress`` flag; even when True the bar shows only on a
    terminal. ``leave``: keep the finished bar (the sweep's outer bar); inner bars clear.
    ``per_minute``: show the rate per minute (answers) instead of per second.
    """
    stream = sys.stderr
    options: dict[str, Any] = {
        "total": total,
        "desc": desc,
        "unit": f" {unit}",
        "leave": leave,
        "file": stream,
        "disable": None if enabled else True,
    }
    if enabled:
        options.update(_width(stream))
    if per_minute:
        return PerMinuteBar(bar_format=PER_MINUTE_FORMAT, **options)
    return tqdm(**options)


def embedding_bar(total: int, kind: str, enabled: bool) -> tqdm:
    """The bar of one embedding pass (texts per second), the same on the local and the Ray path.

    ``total``: the distinct texts the cache did not hold; a pass with none shows no bar.
    """
    plural = {"query": "queries", "passage": "passages"}.get(kind, kind)
    return bar(total, f"embed {plural}", "texts", enabled and total > 0)


def steps_bar(total: int, desc: str, enabled: bool) -> tqdm:
    """A bar over a few named steps (the report's sections); the current step goes in its postfix."""
    return bar(total, desc, "steps", enabled)
