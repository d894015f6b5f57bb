"""The one boundary around user code: a retriever target, an installed plugin, on import or on call.

Whatever user code raises or exits with (``sys.exit(0)``, ``sys.exit(3)``, ``KeyboardInterrupt``, any
exception, on import or on call) becomes one :class:`UserCodeError` naming it, which the entry points
print as one line and exit 2: only evalkit says "done" (0), "over budget" (3) or "stopped" (130/143).
Two things pass through untouched, because they are evalkit's own:

- :class:`~evalkit.signals.Stopped`: a real Ctrl-C or SIGTERM arriving while user code runs;
- an exception raised in evalkit's own code that user code called back into (an executor plugin runs
  evalkit's units, an embedder plugin may use evalkit's helpers): a budget stop stays a budget stop.
  Which code raised it is read from the traceback's last frame, not from the exception's type, so a
  plugin raising evalkit's ``BudgetExceeded`` itself is still the plugin's failure.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any, TypeVar

from evalkit.signals import Stopped

T = TypeVar("T")

EVALKIT_DIR = Path(__file__).resolve().parent
LONGEST_DETAIL = 300
"""Characters of user code's own message kept on the line (its text may be a whole page)."""


class UserCodeError(RuntimeError):
    """A target or plugin failed, exited or was interrupted by itself: one line naming it."""


def describe(exc: BaseException) -> str:
    """``Type: message`` on one line; an exit says which code it tried to end the process with."""
    if isinstance(exc, SystemExit):
        return f"SystemExit: it called sys.exit({exc.code!r}), which ends no evalkit run"
    text = " ".join(str(exc).split())
    if len(text) > LONGEST_DETAIL:
        text = text[:LONGEST_DETAIL] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _last_file(traceback: TracebackType | None) -> Path | None:
    last = None
    while traceback is not None:
        last, traceback = traceback, traceback.tb_next
    return Path(last.tb_frame.f_code.co_filename).resolve() if last is not None else None


def raised_by_evalkit(exc: BaseException) -> bool:
    """Whether evalkit's own code raised ``exc`` (its traceback ends in a file of the evalkit package)."""
    where = _last_file(exc.__traceback__)
    return where is not None and where.is_relative_to(EVALKIT_DIR) and where != Path(__file__).resolve()


def outside_evalkit(exc: BaseException) -> str:
    """Names the deepest frame of ``exc``'s traceback outside evalkit: the net under the boundaries."""
    traceback, found = exc.__traceback__, None
    while traceback is not None:
        path = Path(traceback.tb_frame.f_code.co_filename).resolve()
        if not path.is_relative_to(EVALKIT_DIR):
            found = f"user code at {path}:{traceback.tb_lineno}"
        traceback = traceback.tb_next
    return found or "user code"


def _passes(exc: BaseException) -> bool:
    return isinstance(exc, Stopped) or (isinstance(exc, Exception) and raised_by_evalkit(exc))


def run_user_code(where: str, action: str, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``function(*args, **kwargs)``; whatever user code raises is ``UserCodeError('<where> <action>: ...')``."""
    try:
        return function(*args, **kwargs)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt too: user code never ends evalkit's process
        if _passes(exc):
            raise
        raise UserCodeError(f"{where} {action}: {describe(exc)}") from None


def import_user_module(where: str, module_name: str) -> ModuleType:
    """``module_name`` imported behind the boundary (its SyntaxError, RuntimeError, sys.exit: one line)."""
    return run_user_code(where, "does not load", importlib.import_module, module_name)


def guarded_iter(where: str, action: str, items: Iterable[T]) -> Iterator[T]:
    """Each step of a user-code iterator behind the boundary (an executor plugin's ``run`` yields results)."""
    iterator = run_user_code(where, action, iter, items)
    while True:
        try:
            yield run_user_code(where, action, next, iterator)
        except StopIteration:
            return


class UserCallable:
    """A plugin's entry point (a function, a factory or a class) whose calls and methods run behind the boundary.

    Attribute access is forwarded, so a generator plugin's class still answers ``from_config``; every
    callable it hands out is guarded too.
    """

    def __init__(self, where: str, target: Any) -> None:
        self._where, self._target = where, target
        functools.update_wrapper(self, target, updated=())  # its __module__, __name__, __doc__ (not its __dict__)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return run_user_code(self._where, "failed", self._target, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name in ("_where", "_target"):  # not set yet (a copy or an unpickling): no recursion
            raise AttributeError(name)
        value = getattr(self._target, name)
        if callable(value) and not name.startswith("__"):
            return UserCallable(self._where, value)
        return value

    def __repr__(self) -> str:
        return f"UserCallable({self._where!r}, {self._target!r})"


def guard_methods(where: str, obj: T, names: Iterable[str]) -> T:
    """``obj`` (built by a plugin) with its ``names`` methods run behind the boundary; evalkit's own objects as is."""
    for name in names:
        method = getattr(obj, name, None)
        if callable(method):
            # __slots__ or a built-in type refuses it: then its calls reach the net in the entry point.
            with contextlib.suppress(AttributeError, TypeError):
                object.__setattr__(obj, name, UserCallable(where, method))
    return obj
