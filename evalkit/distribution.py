"""This installation's distribution name and version (the import name and the commands stay ``evalkit``).

The package index holds an unrelated project named ``evalkit`` (0.2.1, checked with ``pip index
versions``), so this one is distributed as :data:`DISTRIBUTION`, which no project there holds.
"""

from __future__ import annotations

from importlib import metadata

DISTRIBUTION = "evalkit-sweep"
"""The name on the package index and of the wheel."""


def installed_version() -> str:
    """The installed version, or ``unknown`` when run from a tree that was never installed."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown"
