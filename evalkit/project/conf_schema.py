"""JSON Schemas of the config files, from the same typed settings the strict reader checks them with.

``python -m evalkit.project.conf_schema DIR`` writes ``DIR/<group>.schema.json`` for every config group whose
section is one settings record (``conf/retriever/*.yaml`` -> :class:`RetrieverSettings`), and
``config.schema.json`` for the whole composed config. An editor checks a team's files with them (VS Code's
YAML extension: ``# yaml-language-server: $schema=<path>``). evalkit ships them in ``conf/schemas/``; a test
fails when they differ from what the settings say, so a new field is in the schema the day it is read.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

INTERPOLATION = {"type": "string", "pattern": "^.*\\$\\{.+\\}.*$", "description": "an OmegaConf interpolation"}
HYDRA_KEYS = {"defaults": {"type": "array"}}
"""Keys Hydra reads from a config file itself (its defaults list), allowed in every file."""


def _number(kind: str, meta: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": kind}
    if meta.get("min") is not None:
        out["minimum"] = meta["min"]
    if meta.get("max") is not None:
        out["maximum"] = meta["max"]
    if meta.get("above") is not None:
        out["exclusiveMinimum"] = meta["above"]
    return out


def _leaf(kind: Any, meta: Mapping[str, Any]) -> dict[str, Any]:
    """The schema of one value of type ``kind`` (as :func:`evalkit.settings.convert` reads it)."""
    origin = get_origin(kind)
    if origin in (Union, types.UnionType):
        options = [_leaf(option, meta) for option in get_args(kind)]
        return {"anyOf": options}
    if kind is type(None):
        return {"type": "null"}
    if origin is Literal:
        return {"enum": list(get_args(kind))}
    if origin is tuple:
        items = _leaf(get_args(kind)[0], meta)
        array = {"type": "array", "items": items}
        return {"anyOf": [array, items]} if meta.get("scalar_ok") else array
    if origin in (dict, Mapping) or kind in (dict, Mapping):
        return {"type": "object"}
    if dataclasses.is_dataclass(kind):
        return record_schema(kind)
    if kind is bool:
        return {"type": "boolean"}
    if kind is int:
        return _number("integer", meta)
    if kind is float:
        return _number("number", meta)
    if kind is str:
        out: dict[str, Any] = {"type": "string"}
        if meta.get("choices"):
            out["enum"] = list(meta["choices"])
        return out
    return {}


def record_schema(cls: type) -> dict[str, Any]:
    """A settings record as a JSON object schema: its fields, their types and bounds, no other key."""
    hints = typing.get_type_hints(cls)
    properties: dict[str, Any] = {}
    for spec in dataclasses.fields(cls):
        if not spec.init:
            continue
        properties[spec.name] = {"anyOf": [_leaf(hints[spec.name], spec.metadata), INTERPOLATION]}
    written = getattr(cls, "WRITTEN_FORMS", None)  # keys a file spells otherwise than the record holds them
    if written is not None:
        properties.update(record_schema(written)["properties"])
    return {"type": "object", "properties": properties, "additionalProperties": False}


def group_records() -> dict[str, type]:
    """Config group -> the settings record its files hold (the composed config's field of that name)."""
    from evalkit.pipeline.config import SweepConfig

    hints = typing.get_type_hints(SweepConfig)
    out = {}
    for spec in dataclasses.fields(SweepConfig):
        kind = hints[spec.name]
        records = [k for k in get_args(kind) if dataclasses.is_dataclass(k)] or [kind]
        if len(records) == 1 and dataclasses.is_dataclass(records[0]):
            out[spec.name] = records[0]
    return out


def _global_package(folder: Path) -> bool:
    """Whether a group's files are ``# @package _global_`` (they write their section at the config's top)."""
    found = sorted(folder.glob("*.yaml"))
    return bool(found) and all(p.read_text(encoding="utf-8").startswith("# @package _global_") for p in found)


def schemas() -> dict[str, dict[str, Any]]:
    """File name -> schema: one per group with a single record, and the whole config."""
    from evalkit.confdir import conf_dir
    from evalkit.pipeline.config import SweepConfig

    out = {}
    for group, record in sorted(group_records().items()):
        if not (conf_dir() / group).is_dir() and group != "baseline":  # a section of config.yaml, not a group
            continue
        body = record_schema(record)
        if _global_package(conf_dir() / group):  # its files set `group:` at the config's top (position=off: null)
            section = {"anyOf": [body, {"type": "null"}]}
            body = {"type": "object", "properties": {group: section}, "additionalProperties": False}
        body["properties"] = {**HYDRA_KEYS, **body["properties"]}
        out[f"{group}.schema.json"] = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": f"evalkit conf/{group}/*.yaml ({record.__name__})",
            **body,
        }
    whole = record_schema(SweepConfig)
    whole["additionalProperties"] = True  # hydra:, cost tables and a team's own keys beside evalkit's
    whole["properties"] = {**HYDRA_KEYS, **whole["properties"]}
    out["config.schema.json"] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "evalkit's composed config (conf/config.yaml, a project's conf/project.yaml)",
        **whole,
    }
    return out


def render(schema: Mapping[str, Any]) -> str:
    return json.dumps(schema, indent=1, sort_keys=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m evalkit.project.conf_schema DIR", file=sys.stderr)
        return 2
    target = Path(args[0])
    target.mkdir(parents=True, exist_ok=True)
    for name, schema in schemas().items():
        (target / name).write_text(render(schema), encoding="utf-8")
    print(f"evalkit: wrote {len(schemas())} schemas to {target}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
