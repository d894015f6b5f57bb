"""How every long stage shows its progress: one place that makes the bars.

- Bars go to stderr only: stdout (a dry run's table, piped output) stays clean.
- A bar is off when the run says ``progress=false``. When stderr is not a terminal (a CI
  log, a file, a pipe) there is no bar and no carriage-return noise: each stage prints a
  plain line (stage, done/total, elapsed, ETA, rate) every :data:`LOG_EVERY_S` seconds while
  it runs, even when no item finished, and one when it ends (none at 0/N: nothing was done yet).
- Inner bars (embedding, rerank, generation, the report) leave nothing behind when
  they finish, so the sweep's one ``chunkings`` bar stays readable.
- A bar only counts: it never changes what is computed, or in which batches.

The stream is looked up when a bar is made (not at import), so a caller that points
``sys.stderr`` elsewhere gets its bars there.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, TextIO

from tqdm import tqdm

PER_MINUTE_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {per_minute}]"
"""The bar of a slow stage (answers): its rate per minute, where a rate per second would read 0.40 it/s."""


LOG_EVERY_S = float(os.environ.get("EVALKIT_PROGRESS_EVERY_S", "30"))
"""Seconds between a stage's plain progress lines off a terminal (the variable exists for tests)."""
LOG_FORMAT = "{desc}: {n_fmt}/{total_fmt} [{elapsed} elapsed, ETA {remaining}, {rate_text}]"

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


class LogLines(tqdm):
    """Progress for a log: whole lines, at most and at least every ``LOG_EVERY_S`` seconds, and a last one.

    tqdm prints on an update once ``mininterval`` has passed; a heartbeat thread prints too when no item
    finishes for that long (a slow batch), so a log never goes quiet for longer while a stage runs.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._ended = threading.Event()
        super().__init__(*args, mininterval=LOG_EVERY_S, maxinterval=LOG_EVERY_S, ascii=True, **kwargs)
        if not self.disable:
            threading.Thread(target=self._beat, daemon=True, name=f"progress {self.desc}").start()

    def _beat(self) -> None:
        while not self._ended.wait(LOG_EVERY_S):
            with self.get_lock():
                if time_since(self.last_print_t) >= LOG_EVERY_S * 0.9:
                    self.refresh()

    @property
    def format_dict(self) -> dict[str, Any]:
        values = dict(super().format_dict)
        values["rate_text"] = rate_text(values.get("rate"), values.get("n"), values.get("elapsed"), self.unit)
        return values

    def refresh(self, nolock: bool = False, lock_args: Any = None) -> None:
        """Print only when a line is due: a postfix or description change (the report names each step)
        would otherwise print a line per step."""
        last = getattr(self, "last_print_t", None)  # unset while tqdm's __init__ draws the bar at 0/N
        if last is None or time_since(last) < LOG_EVERY_S * 0.9:
            return  # not yet due, and no "0/N" line before the stage has done anything
        super().refresh(nolock=nolock, lock_args=lock_args)
        self.last_print_t = self._time()

    def display(self, msg: str | None = None, pos: int | None = None) -> bool:
        text = self.__str__() if msg is None else msg
        if not text.strip():
            return False  # tqdm's clearing of a closed bar: it would write a bare carriage return
        self.fp.write(text.strip() + "\n")
        self.fp.flush()
        return True

    def close(self) -> None:
        if self._ended.is_set() or self.disable:
            return super().close()
        self._ended.set()
        if self.n:
            self.display()  # the last line: what was done, in how long (none for a stage refused at once)
        self.leave = False  # tqdm would clear or repeat it
        return super().close()


def rate_text(rate: float | None, done: int | None, elapsed: float | None, unit: str) -> str:
    """``12.3 texts/s``, or per minute when slower than one a second (``10.4 answers/min``, not ``5.80s/ answers``)."""
    unit = unit.strip()
    if rate is None and done and elapsed:
        rate = done / elapsed
    if not rate:
        return f"? {unit}/s"
    return f"{rate:.1f} {unit}/s" if rate >= 1 else f"{rate * 60:.1f} {unit}/min"


def time_since(moment: float) -> float:
    import time

    return time.time() - moment


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
    if enabled and not _is_terminal(stream):
        return LogLines(**options | {"disable": False}, bar_format=LOG_FORMAT)
    if enabled:
        options.update(_width(stream))
    if per_minute:
        return PerMinuteBar(bar_format=PER_MINUTE_FORMAT, **options)
    return tqdm(**options)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def embedding_bar(total: int, kind: str, enabled: bool) -> tqdm:
    """The bar of one embedding pass (texts per second), the same on the local and the Ray path.

    ``total``: the distinct texts the cache did not hold; a pass with none shows no bar.
    """
    plural = {"query": "queries", "passage": "passages"}.get(kind, kind)
    return bar(total, f"embed {plural}", "texts", enabled and total > 0)


def steps_bar(total: int, desc: str, enabled: bool) -> tqdm:
    """A bar over a few named steps (the report's sections); the current step goes in its postfix."""
    return bar(total, desc, "steps", enabled)
