"""Where units of work run: the seam a cluster executor plugs into.

An executor maps a work function over units and yields their results in the
units' order. The driver keeps the cache and the unit store; what a unit
needs besides its spec travels in the work function's context.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Protocol, TypeVar

from evalkit.pipeline.work import UnitOfWork

R = TypeVar("R")


class Executor(Protocol):
    name: str

    def map(self, work: Callable[[UnitOfWork], R], units: Sequence[UnitOfWork]) -> Iterator[R]:
        """``work(unit)`` for every unit, results in the units' order, each as soon as it is ready."""
        ...


class LocalExecutor:
    """Every unit in this process, one after another (the default)."""

    name = "local"

    def map(self, work: Callable[[UnitOfWork], R], units: Sequence[UnitOfWork]) -> Iterator[R]:
        for unit in units:
            yield work(unit)


EXECUTORS: dict[str, Callable[[], Executor]] = {"local": LocalExecutor}
