"""Hydra's own errors, as one line each: checked by composing the config before Hydra runs the sweep.

Hydra reports a misspelt key, an unknown group option or a bad override as a
multi-line message with exit 1, and its hint for an unknown key is ``+key=``,
which would add a key no stage reads. The entry points compose the config first
with the same overrides (every value of a ``-m`` sweep); any problem becomes
``evalkit: error:`` and one line with the nearest valid key or option, exit 2.
A ``+`` override may add a config group (``+tracker=mlflow``); a ``+`` key evalkit
does not know is refused: the typed plan owns its keys.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from evalkit.confdir import group_options
from evalkit.project.layers import ConfigSource, compose_config, hydra_overrides
from evalkit.settings import ConfigError, suggest

_FLAGS_WITHOUT_CHECK = ("-h", "--help", "--hydra-help", "--info", "-i", "--cfg", "-c", "--shell-completion", "-sc")


def hydra_mode(argv: Sequence[str]) -> bool:
    """Whether ``argv`` asks Hydra for one of its own modes (completion, --cfg, --info): they print, not run."""
    return any(a in _FLAGS_WITHOUT_CHECK for a in argv)


_SYNTAX_EXAMPLE = "e.g. top_k=[1,3,5] or retriever=hybrid"


def syntax_error(source: ConfigSource | Path, argv: Sequence[str]) -> str | None:
    """The one-line problem found without composing (a missing --config-dir, bad override syntax), or None.

    A single run checks only this before Hydra composes its config (once); when that composition
    fails, :func:`composition_error` explains it. A ``-m`` sweep checks every value first.
    """
    source = _source(source, argv)
    if any(a in _FLAGS_WITHOUT_CHECK for a in argv):
        return None  # Hydra's own modes: they print, they do not run
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    if source.team_dir is not None and not source.team_dir.is_dir():
        return f"--config-dir: {str(source.team_dir)!r} is not a folder (a project's conf/, see python -m evalkit init)"
    parser = OverridesParser.create()
    for arg in _override_args(argv):
        try:
            (override,) = parser.parse_overrides([arg])
        except HydraException as exc:
            words = syntax_in_words(arg)
            if words is not None:
                return words
            reason = " ".join(str(exc).split("See https://")[0].split())
            reason = re.sub(r"\s*expecting \{.*\}", "", reason)  # the parser's token names say nothing to a user
            return f"{arg}: bad override syntax ({reason}); {_SYNTAX_EXAMPLE}"
        problem = _null_group(override, source)
        if problem:
            return problem
    return None


_PAIRS = (("[", "]"), ("{", "}"), ("(", ")"))


def syntax_in_words(arg: str) -> str | None:
    """What is wrong with an override that does not parse, in a user's words, with the nearest valid form."""
    key, sep, value = arg.partition("=")
    if not sep and not arg.startswith("~"):
        return f"{arg}: an override is key=value (no '=' here); {_SYNTAX_EXAMPLE}"
    for quote in ("'", '"'):
        if value.count(quote) % 2:
            return f"unclosed {quote} in {arg}: close it, e.g. {arg}{quote}"
    for opening, closing in _PAIRS:
        missing = value.count(opening) - value.count(closing)
        if missing > 0:
            return f"unclosed '{opening}' in {arg}: did you mean {arg}{closing * missing}?"
        if missing < 0:
            fixed = f"{key}={opening * -missing}{value}"
            return f"a '{closing}' without its '{opening}' in {arg}: did you mean {fixed}?"
    if value.endswith(","):
        return f"a trailing ',' in {arg}: did you mean {key}={value.rstrip(',')}?"
    return None


def repeated_keys(argv: Sequence[str]) -> list[str]:
    """A warning per key given twice on the command line (Hydra keeps the last, silently)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    parser = OverridesParser.create()
    seen: dict[str, str] = {}
    out = []
    for arg in _override_args(argv):
        try:
            (override,) = parser.parse_overrides([arg])
        except HydraException:
            continue
        key = override.key_or_group + (f"@{override.package}" if override.package else "")
        if key in seen and seen[key] != arg:
            out.append(f"{key} is given twice ({seen[key]}, then {arg}): the last, {arg}, is used")
        seen[key] = arg
    return out


def _null_group(override: object, source: ConfigSource) -> str | None:
    """``labelset=null``: a config group needs an option (Hydra raises a bare ValueError for it)."""
    group = str(override.key_or_group).lstrip("+")  # type: ignore[attr-defined]
    values = _sweep_values(override) if override.is_sweep_override() else [override.value()]  # type: ignore[attr-defined]
    options = group_options(group.replace(".", "/"), source.search)
    if options and any(v is None or str(v).lower() == "null" for v in values):
        return f"{group}: null is not an option; choose one of {', '.join(options)}"
    return None


def _source(source: ConfigSource | Path, argv: Sequence[str]) -> ConfigSource:
    if isinstance(source, Path):  # evalkit's own folder, or a team's folder without a project.yaml
        return ConfigSource(team_dir=None, config_name="config", argv=tuple(argv))
    return source


def _override_args(argv: Sequence[str]) -> list[str]:
    return [a for a in hydra_overrides(argv) if a not in ("-m", "--multirun")]


def composition_error(source: ConfigSource | Path, argv: Sequence[str]) -> str | None:
    """The one-line problem with ``argv``'s overrides, or None when they compose (every value of a ``-m`` sweep)."""
    source = _source(source, argv)
    if any(a in _FLAGS_WITHOUT_CHECK for a in argv):
        return None
    problem = syntax_error(source, argv)
    if problem is not None:
        return problem
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    parsed = OverridesParser.create().parse_overrides(_override_args(argv))
    try:
        base = compose_config(source, [])
    except HydraException as exc:
        if "primary config" in str(exc):
            return f"--config-name: no primary config {source.config_name!r} in {_where(source)}"
        return f"{source.config_name}.yaml: {explain(str(exc), OmegaConf.create({}), source)}"
    for override in parsed:
        problem = _added_key(override, base, source)
        if problem:
            return problem
    for overrides in _each_value(parsed):
        try:
            compose_config(source, overrides)
        except HydraException as exc:
            return explain(str(exc), _with_groups(source, overrides, base), source)
    return None


def _with_groups(source: ConfigSource, overrides: Sequence[str], base: DictConfig) -> DictConfig:
    """The config with the overrides' group choices (``+tracker=mlflow``): its keys are what a typo is near."""
    groups = [o for o in overrides if "." not in o.split("=", 1)[0]]
    try:
        return compose_config(source, groups)
    except Exception:  # a bad group choice among them: the bare config's keys still help
        return base


def _where(source: ConfigSource) -> str:
    return f"{source.team_dir} or evalkit's bundled configs" if source.team_dir else "evalkit's bundled configs"


def _added_key(override: object, base: DictConfig, source: ConfigSource) -> str | None:
    """``+key=`` (or ``++key=``) for a key evalkit does not know: refused, with the nearest known key."""
    if not (override.is_add() or override.is_force_add()):  # type: ignore[attr-defined]
        return None
    dotted = str(override.key_or_group)  # type: ignore[attr-defined]
    group = dotted.replace(".", "/")
    if group_options(group, source.search):
        if OmegaConf.select(base, dotted) is not None and not override.is_force_add():  # type: ignore[attr-defined]
            return f"{dotted}: already chosen; set it without '+', e.g. {dotted}={override.value()}"  # type: ignore[attr-defined]
        return None  # +tracker=mlflow, +experiment=position: a group the defaults do not choose
    if OmegaConf.select(base, dotted, default="__missing__") != "__missing__":
        return None  # the key exists: '+' is harmless
    return _unknown_key(dotted, base, source)


def _unknown_key(dotted: str, base: DictConfig, source: ConfigSource) -> str:
    parent, _, leaf = dotted.rpartition(".")
    section = OmegaConf.select(base, parent) if parent else base
    known = [str(k) for k in section] if isinstance(section, DictConfig) else []
    if not parent:
        known += [g for g in ("tracker", "experiment", "judge") if group_options(g, source.search)]
    return f"{dotted}: unknown key; {suggest(leaf, known, parent)}"


def _each_value(parsed: Sequence[object]) -> list[list[str]]:
    """One override list per value of each sweep (``retriever=bm25,dense``): every value must compose.

    The other sweeps take their first value: values of different keys compose independently.
    """
    firsts = [_value_line(o, _sweep_values(o)[0]) for o in parsed]
    lists = [firsts]
    for i, override in enumerate(parsed):
        for value in _sweep_values(override)[1:]:
            lists.append([*firsts[:i], _value_line(override, value), *firsts[i + 1 :]])
    return lists


def _sweep_values(override: object) -> list[str | None]:
    if override.is_sweep_override():  # type: ignore[attr-defined]
        return list(override.sweep_string_iterator())  # type: ignore[attr-defined]
    return [None]


def _value_line(override: object, value: str | None) -> str:
    if value is None:
        return str(override.input_line)  # type: ignore[attr-defined]
    prefix = "+" if override.is_add() else "++" if override.is_force_add() else ""  # type: ignore[attr-defined]
    return f"{prefix}{override.get_key_element().lstrip('+')}={value}"  # type: ignore[attr-defined]


def explain(message: str, base: DictConfig, source: ConfigSource | Path) -> str:
    """One line for Hydra's message, with the nearest key or group option where there is one."""
    search = source.search if isinstance(source, ConfigSource) else ()
    key = re.search(r"Could not override '([^']+)'", message)
    if key:
        dotted = key.group(1)
        return _unknown_key(dotted, base, source if isinstance(source, ConfigSource) else _bundled_source())
    option = re.search(r"Could not find '([^']+)'", message)
    if option and "/" in option.group(1):
        group, name = _split_option(option.group(1), search)
        hint = _own_option_hint(group, name)
        known = group_options(group, search)
        return f"{group.replace('/', '.')}: unknown option {name!r}; {suggest(name, known)}{hint}"
    twice = re.search(r"(\S+) appears more than once in the final defaults list", message)
    if twice:
        return f"{twice.group(1)}: chosen twice (drop the '+': the defaults already choose a {twice.group(1)})"
    return " ".join(message.split("Set the environment variable HYDRA_FULL_ERROR")[0].split())


def _split_option(path: str, search: tuple[Path, ...]) -> tuple[str, str]:
    """``labelset/path/to/set`` -> (``labelset``, ``path/to/set``): the longest prefix that is a group."""
    parts = path.split("/")
    for i in range(1, len(parts)):
        if ".." not in parts[:i] and group_options("/".join(parts[:i]), search):
            return "/".join(parts[:i]), "/".join(parts[i:])
    group, _, name = path.rpartition("/")
    return group, name


def _own_option_hint(group: str, name: str) -> str:
    if group != "labelset":
        return ""
    if "/" in name or Path(name).is_dir():
        return f" (a folder? use labelset.path={name})"
    return " (for your own set: labelset.path=path/to/set)"


def _bundled_source() -> ConfigSource:
    return ConfigSource(team_dir=None, config_name="config", argv=())


def compose_run(source: ConfigSource, argv: Sequence[str]) -> DictConfig:
    """The config of one run, composed once; a problem is one ConfigError line (explained on the error path)."""
    from hydra.errors import HydraException

    problem = syntax_error(source, argv)
    if problem is not None:
        raise ConfigError(problem)
    try:
        return compose_config(source, _override_args(argv))
    except HydraException as exc:
        raise ConfigError(composition_error(source, argv) or " ".join(str(exc).split())) from None


def exit_on_composition_error(source: ConfigSource | Path, argv: Sequence[str], prog: str = "evalkit") -> None:
    problem = composition_error(source, argv)
    if problem is not None:
        print(f"{prog}: error: {problem}", file=sys.stderr)
        sys.exit(2)
