"""Versioned run files: a JSON Schema per file in ``evalkit/run/schemas/`` (shipped in the wheel), the version
it declares, the stamp writers put in and the one check readers make.

A file's schema is ``<name>.schema.json`` (``gate.json`` -> ``gate.schema.json``); its version is the ``const``
of its version property (``schema_version``; review.json's older ``schema``). Adding a versioned file is that
one schema file: :func:`evalkit.run.folder.write_json` stamps the version into every file that has a schema, and
:func:`evalkit.run.folder.load_run` checks it once on reading. Bump the ``const`` whenever a field changes meaning
or goes away; readers then refuse a file of another version in one line instead of guessing at missing keys.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from importlib.resources import files
from typing import Any

VERSION_KEYS = ("schema_version", "schema")
"""The property holding a file's version, in the order looked for."""


class SchemaVersionError(ValueError):
    """A run file written under another version of its schema (one line)."""


@functools.cache
def schema(name: str) -> Mapping[str, Any] | None:
    """The JSON Schema of run file ``name`` (e.g. ``gate.json``), None when the file is not versioned."""
    path = files("evalkit.run") / "schemas" / f"{name.removesuffix('.json')}.schema.json"
    if not path.is_file():
        return None
    loaded = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def version(name: str) -> tuple[str, int] | None:
    """The version property and the version the schema of ``name`` declares, None when it has no schema."""
    declared = schema(name)
    if declared is None:
        return None
    properties = declared.get("properties", {})
    for key in VERSION_KEYS:
        if isinstance(properties.get(key), Mapping) and "const" in properties[key]:
            return key, int(properties[key]["const"])
    raise ValueError(f"{name}: its schema declares no version ({' or '.join(VERSION_KEYS)} with a const)")


def declared_version(name: str) -> int:
    """The version the schema of ``name`` declares; ValueError when the file has no schema."""
    declared = version(name)
    if declared is None:
        raise ValueError(f"{name}: no schema in evalkit/run/schemas/")
    return declared[1]


def stamp(name: str, payload: Mapping[str, Any]) -> Mapping[str, Any]:
    """``payload`` with the version its schema declares (unchanged when ``name`` has no schema)."""
    declared = version(name)
    if declared is None:
        return payload
    key, number = declared
    return {**payload, key: number}


def check(name: str, payload: Mapping[str, Any], where: str) -> None:
    """Refuse a file written under another version of its schema. A file without a version predates versioning:
    its readers accept it as they did (absent keys read as absent).

    Raises:
        SchemaVersionError: one line naming the file, its version and the one this evalkit reads.
    """
    declared = version(name)
    if declared is None:
        return
    key, number = declared
    found = payload.get(key)
    if key == "schema_version" and found is None:
        return
    if found != number:
        raise SchemaVersionError(
            f"{where}: {key} {found!r}, but this evalkit reads {name} version {number} "
            "(written by another evalkit version: run the same command again with this one to rewrite it)"
        )
