"""Where evalkit's bundled configs and demo set live: the one place that knows.

An installed wheel carries them inside the package (``evalkit/conf``,
``evalkit/labelsets``: pyproject maps the repository's root ``conf/`` and
``labelsets/`` there). A source checkout or an editable install has them at the
repository root, beside ``evalkit/``. Nothing else in evalkit assumes a project
root: paths such as ``conf/pricing`` or ``labelsets/demo`` in a config are read
from the working directory first, then from here (:func:`bundled`).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

CONFIG_NAME = "config"
"""The primary config file (``conf/config.yaml``)."""


def data_root() -> Path:
    """The folder holding ``conf/`` and ``labelsets/``: the package (wheel) or the checkout's root."""
    package = Path(str(files("evalkit")))
    if (package / "conf" / f"{CONFIG_NAME}.yaml").is_file():
        return package
    return package.parent


def conf_dir() -> Path:
    """evalkit's own Hydra config folder (``config.yaml`` and its groups)."""
    return data_root() / "conf"


def bundled(relative: str | Path) -> Path:
    """A path such as ``conf/pricing`` or ``labelsets/demo`` inside evalkit's bundled data."""
    return data_root() / relative


def group_options(group: str, search: tuple[Path, ...] = ()) -> list[str]:
    """The option names of a config group: evalkit's own and those of the ``search`` folders (a team's conf/)."""
    names = set()
    for root in (*search, conf_dir()):
        names.update(p.stem for p in (root / group).glob("*.yaml"))
    return sorted(names)
