"""One registry shape for every pluggable kind, and the entry-point groups installed packages add to.

Each kind (chunker, embedder, retriever, reranker, generator, executor, tracker) has one
:class:`Registry`: evalkit's own entries, then those of every installed distribution that declares
an entry point in the kind's group (``evalkit.chunkers``, ``evalkit.embedders``, ...). A plugin
package needs no change to evalkit::

    # the plugin's pyproject.toml
    [project.entry-points."evalkit.retrievers"]
    mystore = "mystore_evalkit.search:search"

after which ``python -m evalkit.sweep --help`` lists ``mystore`` and ``retriever=mystore`` runs it.
What an entry point names is the kind's contract (:data:`CONTRACTS`). Entry points are read once per
process and loaded only when used, so an installed plugin that fails to import breaks nothing until a
config names it, and then it is one line naming the distribution and the entry point. A loaded entry
point is handed out as a :class:`~evalkit.usercode.UserCallable`: whatever it raises or exits with when
called is one line naming it too (:mod:`evalkit.usercode`).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from typing import Generic, TypeVar

from evalkit.usercode import UserCallable, UserCodeError, run_user_code

T = TypeVar("T")

GROUPS: Mapping[str, str] = {
    "chunker": "evalkit.chunkers",
    "embedder": "evalkit.embedders",
    "retriever": "evalkit.retrievers",
    "reranker": "evalkit.rerankers",
    "generator": "evalkit.generators",
    "executor": "evalkit.executors",
    "tracker": "evalkit.trackers",
}
"""Config group (``chunker=...``) to its entry-point group."""

CONTRACTS: Mapping[str, str] = {
    "chunker": "function(doc: Document, spec: ChunkingSpec) -> list[Chunk] (offsets into doc.text)",
    "embedder": "factory(settings: EmbedderSettings) -> Embedder (evalkit.retrieval.embedding.base)",
    "retriever": "function(queries: list[dict], k: int[, documents: list[dict]]) -> list[list[hit]], "
    "the retriever=external contract",
    "reranker": "factory(settings: RerankerSettings, cache: Cache, pricing_dir: Path) -> Reranker",
    "generator": "class with from_config(settings: GeneratorSettings, **overrides) -> Generator",
    "executor": "factory(settings: ExecutorSettings) -> Executor (run(units, ctx) yields every unit's result)",
    "tracker": "function(run_dir: Path, settings: TrackerSettings, reports_dir: Path) -> str | None (where it logged)",
}
"""What an entry point of each kind names (README "Where to add")."""


class PluginError(RuntimeError):
    """An installed plugin could not be loaded (its import failed, or it is not the kind's contract)."""


@dataclass(frozen=True)
class Plugin:
    """An entry point an installed distribution declares for one kind."""

    kind: str
    name: str
    value: str
    """``package.module:attribute``, as the entry point names it."""
    distribution: str

    @property
    def where(self) -> str:
        return f"{self.kind}={self.name} (entry point {self.value!r} of the package {self.distribution!r})"


@cache
def installed_plugins(kind: str) -> tuple[Plugin, ...]:
    """The entry points of ``kind``'s group, sorted by name (the first distribution wins a clash)."""
    found: dict[str, Plugin] = {}
    for point in sorted(metadata.entry_points(group=GROUPS[kind]), key=lambda p: (p.name, p.value)):
        distribution = point.dist.name if point.dist is not None else "?"
        found.setdefault(point.name, Plugin(kind, point.name, point.value, distribution))
    return tuple(found.values())


class Registry(Mapping[str, T], Generic[T]):
    """Name to entry for one kind: evalkit's own first, then installed plugins (lazily loaded).

    A plugin never replaces a built-in name: a config that says ``embedder=e5`` means evalkit's e5
    whatever is installed.
    """

    def __init__(self, kind: str, builtins: Mapping[str, T]) -> None:
        if kind not in GROUPS:
            raise ValueError(f"unknown plugin kind {kind!r}")  # a bug in evalkit, not in a config
        self.kind = kind
        self._builtins = dict(builtins)
        self._loaded: dict[str, T] = {}

    def plugins(self) -> dict[str, Plugin]:
        return {p.name: p for p in installed_plugins(self.kind) if p.name not in self._builtins}

    def builtin(self, name: str) -> bool:
        return name in self._builtins

    def builtin_names(self) -> tuple[str, ...]:
        """evalkit's own names, in registration order (a settings field's choices start with them)."""
        return tuple(self._builtins)

    def __getitem__(self, name: str) -> T:
        if name in self._builtins:
            return self._builtins[name]
        if name not in self._loaded:
            plugin = self.plugins()[name]  # KeyError for an unknown name, as a dict
            # Its calls (and its methods, for a generator's class) run behind the user-code boundary.
            self._loaded[name] = UserCallable(plugin.where, load(plugin))  # type: ignore[assignment]
        return self._loaded[name]

    def implementation(self, name: str) -> object:
        """What builds ``name``: a built-in's entry names it by its ``target`` (``module:attribute``, imported
        now, :func:`resolve`); an installed plugin's entry point is it (loaded behind the user-code boundary)."""
        if name in self._builtins:
            return resolve(self._builtins[name].target)  # type: ignore[attr-defined]
        return self[name]

    def where(self, name: str) -> str | None:
        """How a line names ``name`` when an installed plugin provides it; None for evalkit's own (or unknown)."""
        plugin = None if name in self._builtins else self.plugins().get(name)
        return plugin.where if plugin is not None else None

    def __iter__(self) -> Iterator[str]:
        yield from self._builtins
        yield from sorted(self.plugins())

    def __len__(self) -> int:
        return len(self._builtins) + len(self.plugins())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self._builtins or name in self.plugins())


def resolve(value: str) -> object:
    """The object ``package.module:attribute`` names, imported now.

    The one way a backend is named: an installed plugin's entry point, and a built-in's registration
    table (``evalkit.retrieval.embedding.local:UniversalSentenceEncoder.from_settings``), so a table
    imports none of its backends, not even inside a function, and no backend imports its table back.
    """
    module_name, _, attribute = value.partition(":")
    target: object = importlib.import_module(module_name)
    for part in attribute.split(".") if attribute else ():
        target = getattr(target, part)
    return target


def load(plugin: Plugin) -> object:
    """The object an entry point names; its import failing (or exiting) is one line naming it."""
    try:
        target = run_user_code(plugin.where, "does not load", resolve, plugin.value)
    except UserCodeError as exc:  # whatever the plugin raised or exited with: the user needs its name
        raise PluginError(str(exc)) from None
    if not callable(target):
        raise PluginError(f"{plugin.where} is not callable; a {plugin.kind} plugin is a {CONTRACTS[plugin.kind]}")
    return target


def plugin_names(kind: str) -> tuple[str, ...]:
    """Names installed plugins add to ``kind`` (for ``--help`` and the config nodes)."""
    return tuple(p.name for p in installed_plugins(kind))


def config_nodes() -> Iterator[tuple[str, str, dict[str, object]]]:
    """(group, option, node) for every installed plugin: what makes ``retriever=mystore`` composable.

    The node holds the name only: the rest of the group's keys take their settings' defaults, and a
    plugin is not imported to build it (``retriever.thresholds=[...]`` sets its own score scale).
    """
    for kind in GROUPS:
        for plugin in installed_plugins(kind):
            yield kind, plugin.name, {"name": plugin.name}


class Choices:
    """The names a settings field accepts for ``kind``: evalkit's own, then installed plugins'.

    For a settings module that must not import the kind's factories (``metadata={"choices": ...}``).
    """

    def __init__(self, kind: str, builtins: tuple[str, ...]) -> None:
        self.kind, self.builtins = kind, builtins

    def __contains__(self, name: object) -> bool:
        return name in self.builtins or name in plugin_names(self.kind)

    def __iter__(self) -> Iterator[str]:
        yield from self.builtins
        yield from (name for name in plugin_names(self.kind) if name not in self.builtins)

    def plugin(self, name: str) -> Plugin | None:
        """The installed plugin ``name`` is, or None for a built-in (or unknown) name."""
        if name in self.builtins:
            return None
        return next((p for p in installed_plugins(self.kind) if p.name == name), None)
