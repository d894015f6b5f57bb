"""Where units of work run: the seam a cluster executor plugs into.

An executor runs the units of a sweep and yields their results in the units'
order, each as soon as it (and every unit before it) is done. The driver keeps
the cache and the unit store: an executor that runs work elsewhere
(:mod:`evalkit.pipeline.ray_executor`) resolves cache hits before it dispatches
anything, sends only the misses, and writes what comes back through the driver.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

from evalkit.pipeline.chunk_ahead import chunked_ahead, needs_chunking
from evalkit.pipeline.executor_settings import EXECUTORS, ExecutorSettings
from evalkit.pipeline.work import UnitOfWork, UnitResult, WorkContext, run_unit
from evalkit.settings import ConfigError
from evalkit.usercode import guarded_iter, run_user_code


class Executor(Protocol):
    name: str

    def ready(self) -> None:
        """Raise a one-line error now if the units cannot run where this executor sends them (nothing ran yet)."""
        ...

    def run(self, units: Sequence[UnitOfWork], ctx: WorkContext) -> Iterator[UnitResult]:
        """Every unit's result, in the units' order."""
        ...


class LocalExecutor:
    """Every unit in this process, one after another (the default)."""

    name = "local"

    def __init__(self, settings: ExecutorSettings | None = None) -> None:
        self.settings = settings or ExecutorSettings()

    def ready(self) -> None:
        """This process can always run them."""

    def run(self, units: Sequence[UnitOfWork], ctx: WorkContext) -> Iterator[UnitResult]:
        ahead = [u for u in units if needs_chunking(u, ctx)]
        chars = sum(len(doc.text) for doc in ctx.labelset.documents)
        if len(ahead) < 2 or chars < self.settings.chunk_ahead_min_chars:
            for unit in units:
                yield run_unit(unit, ctx)
            return
        yield from chunked_ahead(units, ahead, ctx)


def ray_executor(settings: ExecutorSettings) -> Executor:
    """``executor=ray``: Ray is an extra, so its absence is one line."""
    try:
        from evalkit.pipeline.ray_executor import RayExecutor
    except ImportError as exc:
        raise ConfigError(
            f'executor=ray: Ray is not installed ({exc.name}); pip install -e ".[ray]" (or executor=local)'
        ) from None
    return RayExecutor(settings)


def make_executor(settings: ExecutorSettings) -> Executor:
    factory: Callable[[ExecutorSettings], Executor] = EXECUTORS.implementation(settings.name)  # type: ignore[assignment]
    executor = factory(settings)
    where = EXECUTORS.where(settings.name)
    return executor if where is None else PluginExecutor(where, executor)


class PluginExecutor:
    """An installed executor behind the user-code boundary: its ``ready`` and every step of its ``run``.

    The units it runs are evalkit's own: what they raise (a budget stop, a failed call) passes through as is.
    """

    def __init__(self, where: str, inner: Executor) -> None:
        self.where, self.inner = where, inner
        self.name = str(getattr(inner, "name", where))

    def ready(self) -> None:
        check = getattr(self.inner, "ready", None)  # a plugin may have no check of its own
        if check is not None:
            run_user_code(self.where, "failed", check)

    def run(self, units: Sequence[UnitOfWork], ctx: WorkContext) -> Iterator[UnitResult]:
        results = run_user_code(self.where, "failed", self.inner.run, units, ctx)
        return guarded_iter(self.where, "failed", results)
