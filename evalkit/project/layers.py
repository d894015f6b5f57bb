"""Which configs a command composes: a team's ``conf/`` layered over evalkit's bundled one.

A team's project folder (``python -m evalkit init DIR``) has ``DIR/conf/project.yaml``, whose
defaults list starts with evalkit's own ``config`` and then overrides group choices
(``labelset: team``, ``sweep: team``, ...) and the production ``baseline``. Hydra's search path
puts the team's folder first and evalkit's bundled folder after it, so a team's option
shadows evalkit's of the same name and every bundled option stays available
(``labelset=demo`` still works inside a project).

The team's folder is ``--config-dir DIR/conf`` (Hydra's own flag) or, when none is given,
``./conf`` of the working directory if it holds ``project.yaml`` (running from inside DIR).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig

from evalkit.confdir import CONFIG_NAME, conf_dir, group_options
from evalkit.plugins import config_nodes

PROJECT_CONFIG = "project"
"""A team's primary config (``DIR/conf/project.yaml``)."""
_DIR_FLAGS = ("--config-dir", "-cd")
_NAME_FLAGS = ("--config-name", "-cn")


@dataclass(frozen=True)
class ConfigSource:
    """Where the primary config comes from, and the argv Hydra should see."""

    team_dir: Path | None
    """The team's conf/ folder (searched before evalkit's), or None: evalkit's bundled configs only."""
    config_name: str
    """The primary config: ``project`` in a team's folder that has one, else evalkit's ``config``."""
    argv: tuple[str, ...]
    """The command line for Hydra: ``--config-dir`` added when the team's folder was found in the working directory."""

    @property
    def search(self) -> tuple[Path, ...]:
        """Folders whose group options count, team's first."""
        return (self.team_dir,) if self.team_dir is not None else ()


def flag_value(argv: Sequence[str], names: Sequence[str]) -> str | None:
    """The value of ``--flag VALUE`` or ``--flag=VALUE`` (the last one wins, as in Hydra)."""
    value = None
    for i, arg in enumerate(argv):
        for name in names:
            if arg == name and i + 1 < len(argv):
                value = argv[i + 1]
            elif arg.startswith(f"{name}="):
                value = arg.split("=", 1)[1]
    return value


def find_source(argv: Sequence[str], cwd: Path) -> ConfigSource:
    """The team's folder (from ``--config-dir``, else ``./conf/project.yaml``) and the primary config's name."""
    args = tuple(argv)
    given = flag_value(args, _DIR_FLAGS)
    team: Path | None = None
    if given is not None:
        team = (cwd / given).resolve() if not Path(given).is_absolute() else Path(given)
    elif (cwd / "conf" / f"{PROJECT_CONFIG}.yaml").is_file():
        team = (cwd / "conf").resolve()
        args = ("--config-dir", str(team), *args)
    name = flag_value(args, _NAME_FLAGS)
    if name is None:
        name = PROJECT_CONFIG if team is not None and (team / f"{PROJECT_CONFIG}.yaml").is_file() else CONFIG_NAME
    return ConfigSource(team_dir=team, config_name=name, argv=args)


def hydra_overrides(args: Sequence[str]) -> list[str]:
    """The overrides of a command line: Hydra's flags (and their values) left out."""
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg in (*_DIR_FLAGS, *_NAME_FLAGS, "--config-path", "-cp"):
            skip = True
            continue
        if arg.startswith("-"):
            continue
        out.append(arg)
    return out


def register_plugin_configs() -> None:
    """A config node per installed plugin (``retriever=mystore``) in Hydra's store; idempotent.

    Hydra composes a group option from a yaml file or from its ConfigStore: a plugin package ships
    no yaml inside evalkit's conf/, so its option is stored here before any composition.
    """
    from hydra.core.config_store import ConfigStore

    store = ConfigStore.instance()
    for group, option, node in config_nodes():
        if option not in group_options(group):  # a plugin never stands in for evalkit's own yaml of that name
            store.store(group=group, name=option, node=node, provider="evalkit-plugin")


def compose_config(source: ConfigSource, overrides: Sequence[str]) -> DictConfig:
    """The composed config, as the sweep would see it (team's folder first, evalkit's after it)."""
    from hydra import compose, initialize_config_dir

    register_plugin_configs()

    if source.team_dir is None:
        with initialize_config_dir(version_base="1.3", config_dir=str(conf_dir())):
            return compose(config_name=source.config_name, overrides=list(overrides))
    # The compose API has no --config-dir: the team's folder is the primary one and evalkit's is appended.
    searchpath = f"hydra.searchpath=[file://{conf_dir()}]"
    with initialize_config_dir(version_base="1.3", config_dir=str(source.team_dir)):
        return compose(config_name=source.config_name, overrides=[*overrides, searchpath])
