"""Versioned run files: each has a JSON Schema in the package, real files validate against it, and a file of
another version is refused once, in one line, by the reader every command uses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from evalkit.run import files
from evalkit.run.folder import RunError, load_run
from evalkit.run.review import SCHEMA
from evalkit.run.schemas import declared_version, schema
from tests.test_ci_recipe import _sweep

VERSIONED = (files.RECOMMENDATION_JSON, files.REVIEW_JSON, files.GATE_JSON)


def test_every_schema_is_a_valid_json_schema_with_a_version() -> None:
    shipped = sorted((Path(__file__).parents[1] / "evalkit" / "run" / "schemas").glob("*.schema.json"))
    assert {p.name.removesuffix(".schema.json") for p in shipped} >= {"recommendation", "review", "gate"}
    for path in shipped:
        Draft202012Validator.check_schema(json.loads(path.read_text(encoding="utf-8")))
    assert declared_version(files.REVIEW_JSON) == SCHEMA
    assert schema("summary.json") is None, "a file without a schema file is not versioned"


@pytest.fixture(scope="module")
def gated_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.conftest import demo_subset

    root = tmp_path_factory.mktemp("schemas")
    run = _sweep(root / "reports", demo_subset(root / "set"), "r", "sweep=quick", "top_k=[3,5]", "report=true")
    done = subprocess.run(
        [sys.executable, "-m", "evalkit.gate", "--run", str(run), "--candidate-config",
         "recursive-s512-o64|bm25|none|k3|t0"], capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    return run


def test_written_files_carry_their_version_and_validate(gated_run: Path) -> None:
    for name in VERSIONED:
        payload = json.loads((gated_run / name).read_text(encoding="utf-8"))
        declared = schema(name)
        assert declared is not None
        errors = sorted(Draft202012Validator(declared).iter_errors(payload), key=str)
        assert errors == [], (name, [e.message for e in errors[:3]])
    recommendation = json.loads((gated_run / files.RECOMMENDATION_JSON).read_text(encoding="utf-8"))
    assert recommendation["schema_version"] == declared_version(files.RECOMMENDATION_JSON)


def test_a_file_of_another_version_is_refused_in_one_line(gated_run: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(gated_run, copy)
    path = copy / files.GATE_JSON
    payload = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**payload, "schema_version": 99}), encoding="utf-8")
    with pytest.raises(RunError, match=r"gate.json: schema_version 99, but this evalkit reads gate.json version 1"):
        load_run(copy)
    done = subprocess.run([sys.executable, "-m", "evalkit.report", str(copy)], capture_output=True, text=True)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    del payload["schema_version"]  # a file from before versioning reads as it did
    path.write_text(json.dumps(payload), encoding="utf-8")
    assert load_run(copy).gate is not None


def test_the_config_schemas_are_current_and_every_shipped_file_validates() -> None:
    """conf/schemas/ is what the typed settings say (regenerate: python -m evalkit.project.conf_schema conf/schemas),
    and every bundled config file passes its group's schema; a misspelt key does not."""
    import yaml

    from evalkit.project.conf_schema import render, schemas

    shipped = Path(__file__).parents[1] / "conf" / "schemas"
    generated = schemas()
    assert sorted(p.name for p in shipped.glob("*.json")) == sorted(generated)
    for name, body in generated.items():
        assert (shipped / name).read_text(encoding="utf-8") == render(body), f"{name} is stale"
    conf = shipped.parent
    for name, body in generated.items():
        group = name.removesuffix(".schema.json")
        paths = [conf / "config.yaml"] if group == "config" else sorted((conf / group).glob("*.yaml"))
        validator = Draft202012Validator(body)
        for path in paths:
            errors = [e.message for e in validator.iter_errors(yaml.safe_load(path.read_text(encoding="utf-8")) or {})]
            assert errors == [], (path, errors[:2])
    retriever = Draft202012Validator(generated["retriever.schema.json"])
    assert not retriever.is_valid({"name": "external", "timout_s": 30}), "a misspelt key is an error"
    assert not retriever.is_valid({"name": "external", "batch_size": 0}), "a bound is an error"
