"""Hydra's own errors, as one line each: checked by composing the config before Hydra runs the sweep.

Hydra reports a misspelt key, an unknown group option or a bad override as a
multi-line message with exit 1. The entry points compose the config once with
the same overrides first; any composition error becomes ``evalkit: error:``
and one line with the nearest valid key or option, exit 2.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from evalkit.settings import suggest

_FLAGS_WITHOUT_CHECK = ("-h", "--help", "--hydra-help", "--info", "-i", "--cfg", "-c", "--shell-completion", "-sc")


def composition_error(conf_dir: Path, argv: Sequence[str]) -> str | None:
    """The one-line problem with ``argv``'s overrides, or None when they compose."""
    if any(a in _FLAGS_WITHOUT_CHECK or a.startswith(("--config", "-cd", "-cp", "-cn")) for a in argv):
        return None  # Hydra's own modes; --config-dir/--config-name change what composes
    from hydra import compose, initialize_config_dir
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    args = [a for a in argv if a not in ("-m", "--multirun")]
    parser = OverridesParser.create()
    for arg in args:
        try:
            parser.parse_overrides([arg])
        except HydraException as exc:
            reason = str(exc).split("See https://")[0]
            return f"{arg}: bad override syntax ({' '.join(reason.split())}); e.g. top_k=[1,3,5] or retriever=hybrid"
    parsed = parser.parse_overrides(args)
    # A sweep (retriever=bm25,dense) is checked with its first value; the other values compose alike.
    overrides = [_first_of_sweep(o) for o in parsed]
    with initialize_config_dir(version_base="1.3", config_dir=str(conf_dir)):
        try:
            compose(config_name="config", overrides=overrides)
        except HydraException as exc:
            base = compose(config_name="config")
            return explain(str(exc), base, conf_dir)
    return None


def _first_of_sweep(override: object) -> str:
    if override.is_sweep_override():  # type: ignore[attr-defined]
        first = next(iter(override.sweep_string_iterator()))  # type: ignore[attr-defined]
        return f"{override.get_key_element()}={first}"  # type: ignore[attr-defined]
    return str(override.input_line)  # type: ignore[attr-defined]


def explain(message: str, base: DictConfig, conf_dir: Path) -> str:
    """One line for Hydra's message, with the nearest key or group option where there is one."""
    key = re.search(r"Could not override '([^']+)'", message)
    if key:
        dotted = key.group(1)
        parent, _, leaf = dotted.rpartition(".")
        section = OmegaConf.select(base, parent) if parent else base
        known = list(section.keys()) if isinstance(section, DictConfig) else []
        return f"{dotted}: unknown key; {suggest(leaf, [str(k) for k in known], parent)}"
    option = re.search(r"Could not find '([^'/]+)/([^']+)'", message)
    if option:
        group, name = option.groups()
        known = sorted(p.stem for p in (conf_dir / group).glob("*.yaml"))
        hint = f"; or set {group}.path=... for your own" if group == "labelset" else ""
        return f"{group}: unknown option {name!r}; {suggest(name, known)}{hint}"
    return " ".join(message.split())


def exit_on_composition_error(conf_dir: Path, argv: Sequence[str], prog: str = "evalkit") -> None:
    problem = composition_error(conf_dir, argv)
    if problem is not None:
        print(f"{prog}: error: {problem}", file=sys.stderr)
        sys.exit(2)
